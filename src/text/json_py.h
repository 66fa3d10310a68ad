// text/json_py: JSON exactly as the Python side of K3's chat format sees it.
// Contract: parse_json_exact() keeps object key order and keeps integers of any size exactly
// (Python ints are unbounded; nlohmann would turn 2^64 into a double), and py_dumps()
// writes json.dumps(..., ensure_ascii=False) byte for byte: shortest round-trip floats in
// Python's repr layout (1.0, 1e+20, 1e-07, -0.0), unbounded integers, raw non-ASCII, and the
// separators/sorting asked for. The chat template and the output parser both depend on these
// bytes, so every JSON text K3 sees or emits goes through here.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace k3::text {

// Object keys keep insertion order: tool-call arguments render in the client's key order.
using Json = nlohmann::ordered_json;

// Integers that do not fit 64 bits are stored as a binary value with this subtype, holding
// the decimal digits (with a leading '-' when negative). Only py_* functions understand it.
constexpr std::uint64_t kBigIntSubtype = 0x4b33;
bool is_big_int(const Json& v);
Json make_big_int(std::string_view digits);

// Arrays and objects nested deeper than this are refused by both parsers (a caller may ask
// for less).
constexpr std::size_t kMaxJsonDepth = 256;

// Parses a JSON text. Throws k3::Error naming `what` and the byte offset on bad input, or
// the nesting when deeper than max_depth.
Json parse_json_exact(std::string_view text, std::string_view what = "JSON",
                      std::size_t max_depth = kMaxJsonDepth);
// Same, but returns nullopt instead of throwing (Python json.loads failing).
std::optional<Json> try_parse_json_exact(std::string_view text);

enum class KeyOrder {
  Insertion,       // as stored
  CodePoint,       // Python sorted() / sort_keys=True
  CaseInsensitive  // Jinja2 dictsort default: stable sort by Python's key.lower() (py_lower)
};

struct DumpStyle {
  bool compact = true;  // true: "," and ":"; false: json.dumps defaults ", " and ": "
  KeyOrder order = KeyOrder::Insertion;
};

// json.dumps(v, ensure_ascii=False, separators=..., sort_keys=...).
std::string py_dumps(const Json& v, DumpStyle style = {});
// repr(float): shortest round-trip digits, fixed notation for 1e-4 <= |v| < 1e16, else
// exponent with sign and at least two digits. NaN/inf as json.dumps writes them.
std::string py_float_repr(double v);
// The JSON string literal of s as json.dumps writes it (quotes included, non-ASCII raw).
std::string py_json_string(std::string_view s);
// str(v) as Jinja's |string filter gives it: strings raw, True/False/None, repr of numbers,
// Python repr of lists and dicts.
std::string py_str(const Json& v);
// Python/Jinja truthiness.
bool py_truthy(const Json& v);
// str.strip() with Python's whitespace set, on UTF-8 text.
std::string py_strip(std::string_view s);
// True if the text is empty after py_strip.
bool py_is_blank(std::string_view s);

}  // namespace k3::text
