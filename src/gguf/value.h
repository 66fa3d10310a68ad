// gguf/value: one GGUF metadata value (scalar, string or array), kept in a form that
// round-trips byte-identically through the writer.
// Contract: typed accessors throw k3::Error naming the expected and actual type when the
// stored type does not match; numeric accessors accept any integer type whose value fits.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace k3::gguf {

enum class ValueType : uint32_t {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
};
const char* value_type_name(ValueType t);
// Bytes of one scalar of this type (0 for STRING/ARRAY).
size_t value_type_size(ValueType t);

struct Value {
  ValueType type = ValueType::UINT32;
  ValueType elem = ValueType::UINT8;  // element type when type == ARRAY
  uint64_t bits = 0;                  // numeric/bool scalar: little-endian bits, zero-extended
  std::string str;                    // STRING
  std::vector<uint8_t> raw;           // ARRAY of numeric/bool: packed little-endian elements
  std::vector<std::string> strs;      // ARRAY of STRING
  std::vector<Value> nested;          // ARRAY of ARRAY

  // Factories.
  static Value u8(uint8_t v);
  static Value i8(int8_t v);
  static Value u16(uint16_t v);
  static Value i16(int16_t v);
  static Value u32(uint32_t v);
  static Value i32(int32_t v);
  static Value u64(uint64_t v);
  static Value i64(int64_t v);
  static Value f32(float v);
  static Value f64(double v);
  static Value boolean(bool v);
  static Value string(std::string v);
  static Value array_i32(const std::vector<int32_t>& v);
  static Value array_u32(const std::vector<uint32_t>& v);
  static Value array_f32(const std::vector<float>& v);
  static Value array_string(std::vector<std::string> v);

  bool is_array() const { return type == ValueType::ARRAY; }
  bool is_integer() const;  // any of the 8 integer types
  bool is_float() const;    // FLOAT32 / FLOAT64

  // Scalar accessors (throw on type mismatch or out-of-range).
  int64_t as_int() const;    // any integer type
  uint64_t as_uint() const;  // any integer type, value >= 0
  double as_float() const;   // FLOAT32/FLOAT64 or any integer
  bool as_bool() const;      // BOOL only
  const std::string& as_string() const;

  // Array accessors.
  size_t size() const;  // number of elements (throws if not an array)
  int64_t int_at(size_t i) const;
  double float_at(size_t i) const;
  const std::string& string_at(size_t i) const;
  std::vector<int64_t> ints() const;
  std::vector<double> floats() const;

  // Short human rendering for `k3 info` (arrays abbreviated).
  std::string to_display(size_t max_items = 8) const;
};

}  // namespace k3::gguf
