// gguf/value: factories, typed accessors and display of one GGUF metadata value.
// Scalars keep their raw little-endian bits so that a value read from a file is written back
// bit for bit (including BOOL bytes other than 0/1 and NaN payloads).
#include "gguf/value.h"

#include <fmt/format.h>

#include <cstring>
#include <limits>

#include "core/error.h"

namespace k3::gguf {

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::UINT8: return "UINT8";
    case ValueType::INT8: return "INT8";
    case ValueType::UINT16: return "UINT16";
    case ValueType::INT16: return "INT16";
    case ValueType::UINT32: return "UINT32";
    case ValueType::INT32: return "INT32";
    case ValueType::FLOAT32: return "FLOAT32";
    case ValueType::BOOL: return "BOOL";
    case ValueType::STRING: return "STRING";
    case ValueType::ARRAY: return "ARRAY";
    case ValueType::UINT64: return "UINT64";
    case ValueType::INT64: return "INT64";
    case ValueType::FLOAT64: return "FLOAT64";
  }
  return "?";
}

size_t value_type_size(ValueType t) {
  switch (t) {
    case ValueType::UINT8:
    case ValueType::INT8:
    case ValueType::BOOL: return 1;
    case ValueType::UINT16:
    case ValueType::INT16: return 2;
    case ValueType::UINT32:
    case ValueType::INT32:
    case ValueType::FLOAT32: return 4;
    case ValueType::UINT64:
    case ValueType::INT64:
    case ValueType::FLOAT64: return 8;
    case ValueType::STRING:
    case ValueType::ARRAY: return 0;
  }
  return 0;
}

namespace {

bool is_integer_type(ValueType t) {
  switch (t) {
    case ValueType::UINT8:
    case ValueType::INT8:
    case ValueType::UINT16:
    case ValueType::INT16:
    case ValueType::UINT32:
    case ValueType::INT32:
    case ValueType::UINT64:
    case ValueType::INT64: return true;
    default: return false;
  }
}

// Interprets `bits` (zero-extended little-endian bits of a scalar of type t) as a number.
// For integers the result is exact in one of the two out-params.
struct IntVal {
  bool negative;
  uint64_t magnitude_or_value;  // the value when !negative, else the signed value's bits
};

IntVal int_of(ValueType t, uint64_t bits) {
  switch (t) {
    case ValueType::INT8: {
      int64_t v = static_cast<int8_t>(bits & 0xff);
      return {v < 0, static_cast<uint64_t>(v)};
    }
    case ValueType::INT16: {
      int64_t v = static_cast<int16_t>(bits & 0xffff);
      return {v < 0, static_cast<uint64_t>(v)};
    }
    case ValueType::INT32: {
      int64_t v = static_cast<int32_t>(bits & 0xffffffffu);
      return {v < 0, static_cast<uint64_t>(v)};
    }
    case ValueType::INT64: {
      int64_t v = static_cast<int64_t>(bits);
      return {v < 0, bits};
    }
    default: return {false, bits};
  }
}

double float_of(ValueType t, uint64_t bits) {
  if (t == ValueType::FLOAT32) {
    uint32_t b = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
  if (t == ValueType::FLOAT64) {
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
  IntVal v = int_of(t, bits);
  return v.negative ? static_cast<double>(static_cast<int64_t>(v.magnitude_or_value))
                    : static_cast<double>(v.magnitude_or_value);
}

Value scalar(ValueType t, uint64_t bits) {
  Value v;
  v.type = t;
  v.bits = bits;
  return v;
}

template <typename T>
Value packed_array(ValueType elem, const std::vector<T>& xs) {
  Value v;
  v.type = ValueType::ARRAY;
  v.elem = elem;
  v.raw.resize(xs.size() * sizeof(T));
  if (!xs.empty()) std::memcpy(v.raw.data(), xs.data(), v.raw.size());
  return v;
}

// Bits of element i of a packed numeric array.
uint64_t elem_bits(const Value& v, size_t i) {
  size_t sz = value_type_size(v.elem);
  uint64_t bits = 0;
  std::memcpy(&bits, v.raw.data() + i * sz, sz);
  return bits;
}

}  // namespace

Value Value::u8(uint8_t v) { return scalar(ValueType::UINT8, v); }
Value Value::i8(int8_t v) { return scalar(ValueType::INT8, static_cast<uint8_t>(v)); }
Value Value::u16(uint16_t v) { return scalar(ValueType::UINT16, v); }
Value Value::i16(int16_t v) { return scalar(ValueType::INT16, static_cast<uint16_t>(v)); }
Value Value::u32(uint32_t v) { return scalar(ValueType::UINT32, v); }
Value Value::i32(int32_t v) { return scalar(ValueType::INT32, static_cast<uint32_t>(v)); }
Value Value::u64(uint64_t v) { return scalar(ValueType::UINT64, v); }
Value Value::i64(int64_t v) { return scalar(ValueType::INT64, static_cast<uint64_t>(v)); }
Value Value::f32(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return scalar(ValueType::FLOAT32, b);
}
Value Value::f64(double v) {
  uint64_t b;
  std::memcpy(&b, &v, 8);
  return scalar(ValueType::FLOAT64, b);
}
Value Value::boolean(bool v) { return scalar(ValueType::BOOL, v ? 1 : 0); }
Value Value::string(std::string s) {
  Value v;
  v.type = ValueType::STRING;
  v.str = std::move(s);
  return v;
}
Value Value::array_i32(const std::vector<int32_t>& xs) { return packed_array(ValueType::INT32, xs); }
Value Value::array_u32(const std::vector<uint32_t>& xs) { return packed_array(ValueType::UINT32, xs); }
Value Value::array_f32(const std::vector<float>& xs) { return packed_array(ValueType::FLOAT32, xs); }
Value Value::array_string(std::vector<std::string> xs) {
  Value v;
  v.type = ValueType::ARRAY;
  v.elem = ValueType::STRING;
  v.strs = std::move(xs);
  return v;
}

bool Value::is_integer() const { return is_integer_type(type); }
bool Value::is_float() const { return type == ValueType::FLOAT32 || type == ValueType::FLOAT64; }

int64_t Value::as_int() const {
  if (!is_integer()) fail("expected an integer value, got {}", value_type_name(type));
  IntVal v = int_of(type, bits);
  if (!v.negative && v.magnitude_or_value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    fail("integer value {} does not fit in int64", v.magnitude_or_value);
  return static_cast<int64_t>(v.magnitude_or_value);
}

uint64_t Value::as_uint() const {
  if (!is_integer()) fail("expected an integer value, got {}", value_type_name(type));
  IntVal v = int_of(type, bits);
  if (v.negative) fail("expected a non-negative value, got {}", static_cast<int64_t>(v.magnitude_or_value));
  return v.magnitude_or_value;
}

double Value::as_float() const {
  if (!is_float() && !is_integer()) fail("expected a number, got {}", value_type_name(type));
  return float_of(type, bits);
}

bool Value::as_bool() const {
  if (type != ValueType::BOOL) fail("expected BOOL, got {}", value_type_name(type));
  return bits != 0;
}

const std::string& Value::as_string() const {
  if (type != ValueType::STRING) fail("expected STRING, got {}", value_type_name(type));
  return str;
}

size_t Value::size() const {
  if (type != ValueType::ARRAY) fail("expected ARRAY, got {}", value_type_name(type));
  if (elem == ValueType::STRING) return strs.size();
  if (elem == ValueType::ARRAY) return nested.size();
  size_t sz = value_type_size(elem);
  return sz ? raw.size() / sz : 0;
}

int64_t Value::int_at(size_t i) const {
  if (i >= size()) fail("array index {} out of range (size {})", i, size());
  if (!is_integer_type(elem)) fail("expected an integer array, got ARRAY of {}", value_type_name(elem));
  Value s = scalar(elem, elem_bits(*this, i));
  return s.as_int();
}

double Value::float_at(size_t i) const {
  if (i >= size()) fail("array index {} out of range (size {})", i, size());
  if (!is_integer_type(elem) && elem != ValueType::FLOAT32 && elem != ValueType::FLOAT64)
    fail("expected a numeric array, got ARRAY of {}", value_type_name(elem));
  return float_of(elem, elem_bits(*this, i));
}

const std::string& Value::string_at(size_t i) const {
  if (type != ValueType::ARRAY || elem != ValueType::STRING)
    fail("expected ARRAY of STRING, got {}", type == ValueType::ARRAY
                                                 ? fmt::format("ARRAY of {}", value_type_name(elem))
                                                 : std::string(value_type_name(type)));
  if (i >= strs.size()) fail("array index {} out of range (size {})", i, strs.size());
  return strs[i];
}

std::vector<int64_t> Value::ints() const {
  std::vector<int64_t> out(size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = int_at(i);
  return out;
}

std::vector<double> Value::floats() const {
  std::vector<double> out(size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = float_at(i);
  return out;
}

namespace {

std::string quote(const std::string& s, size_t max_chars) {
  std::string out = "\"";
  size_t n = 0;
  for (unsigned char c : s) {
    if (n++ >= max_chars) {
      out += "...";
      break;
    }
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string scalar_display(ValueType t, uint64_t bits) {
  switch (t) {
    case ValueType::BOOL: return bits ? "true" : "false";
    case ValueType::FLOAT32: return fmt::format("{}", static_cast<float>(float_of(t, bits)));
    case ValueType::FLOAT64: return fmt::format("{}", float_of(t, bits));
    default: {
      IntVal v = int_of(t, bits);
      return v.negative ? fmt::format("{}", static_cast<int64_t>(v.magnitude_or_value))
                        : fmt::format("{}", v.magnitude_or_value);
    }
  }
}

}  // namespace

std::string Value::to_display(size_t max_items) const {
  if (type == ValueType::STRING) return quote(str, 120);
  if (type != ValueType::ARRAY) return scalar_display(type, bits);
  size_t n = size();
  std::string out = "[";
  for (size_t i = 0; i < n && i < max_items; ++i) {
    if (i) out += ", ";
    if (elem == ValueType::STRING) out += quote(strs[i], 40);
    else if (elem == ValueType::ARRAY) out += nested[i].to_display(max_items);
    else out += scalar_display(elem, elem_bits(*this, i));
  }
  if (n > max_items) out += fmt::format(", ... ({} items)", n);
  return out + "]";
}

}  // namespace k3::gguf
