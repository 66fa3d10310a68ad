// text/json_py: Python-exact JSON parsing and printing (see json_py.h).
#include "text/json_py.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <unordered_map>
#include <vector>

#include "core/error.h"
#include "text/unicode_lower.h"

namespace k3::text {

bool is_big_int(const Json& v) {
  return v.is_binary() && v.get_binary().has_subtype() && v.get_binary().subtype() == kBigIntSubtype;
}

Json make_big_int(std::string_view digits) {
  return Json::binary(std::vector<std::uint8_t>(digits.begin(), digits.end()), kBigIntSubtype);
}

static std::string big_int_digits(const Json& v) {
  const auto& b = v.get_binary();
  return std::string(b.begin(), b.end());
}

namespace {

// Builds an ordered_json from SAX events, keeping integer lexemes that overflow 64 bits.
// Two bounds make any input safe to parse, walk, print and destroy: nesting deeper than
// kMaxJsonDepth is an error (every later walk of the document, its destructor included,
// recurses once per level; 10^6 levels overflowed the stack), and object keys are found
// through a hash index while building (ordered_json's own lookup is a linear scan, which made
// an object of n keys cost n^2: 80k keys, 6.7 s).
class ExactBuilder {
 public:
  using string_t = Json::string_t;
  explicit ExactBuilder(std::size_t max_depth = kMaxJsonDepth) : max_depth_(max_depth) {}
  Json root;
  std::size_t error_pos = 0;
  std::string error_msg;

  bool null() { return put(Json(nullptr)); }
  bool boolean(bool b) { return put(Json(b)); }
  bool number_integer(Json::number_integer_t v) { return put(Json(v)); }
  bool number_unsigned(Json::number_unsigned_t v) { return put(Json(v)); }
  bool number_float(Json::number_float_t v, const string_t& lexeme) {
    bool integral = lexeme.find_first_of(".eE") == string_t::npos;
    if (integral) return put(make_big_int(lexeme));
    return put(Json(v));
  }
  bool string(string_t& s) { return put(Json(std::move(s))); }
  bool binary(Json::binary_t& b) { return put(Json::binary(b)); }
  bool start_object(std::size_t) { return open(Json::object()); }
  bool key(string_t& k) {
    key_ = std::move(k);
    return true;
  }
  bool end_object() { return close(); }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t pos, const std::string&, const nlohmann::detail::exception& ex) {
    error_pos = pos;
    error_msg = ex.what();
    return false;
  }
  bool too_deep() const { return too_deep_; }

 private:
  struct Frame {
    Json* node;
    std::unordered_map<string_t, std::size_t> keys;  // objects: key -> position
  };
  std::vector<Frame> stack_;
  string_t key_;
  std::size_t max_depth_;
  bool too_deep_ = false;

  Json* place(Json&& v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    Frame& top = stack_.back();
    if (top.node->is_object()) {
      auto& items = top.node->get_ref<Json::object_t&>();
      // A repeated key keeps its first position and takes the last value (Python's dict).
      auto [it, fresh] = top.keys.try_emplace(key_, items.size());
      if (!fresh) {
        Json& slot = std::next(items.begin(), static_cast<std::ptrdiff_t>(it->second))->second;
        slot = std::move(v);
        return &slot;
      }
      items.emplace_back(std::move(key_), std::move(v));
      return &items.back().second;
    }
    top.node->push_back(std::move(v));
    return &top.node->back();
  }
  bool put(Json&& v) {
    place(std::move(v));
    return true;
  }
  bool open(Json&& v) {
    if (stack_.size() >= max_depth_) {
      too_deep_ = true;
      return false;
    }
    stack_.push_back(Frame{place(std::move(v)), {}});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }
};

// A document cut short at the depth limit is destroyed here, level by level without
// recursion: moving each nested value out before its parent goes.
void destroy_flat(Json&& doc) {
  std::vector<Json> pending;
  pending.push_back(std::move(doc));
  while (!pending.empty()) {
    Json v = std::move(pending.back());
    pending.pop_back();
    if (v.is_object())
      for (auto& kv : v.get_ref<Json::object_t&>()) pending.push_back(std::move(kv.second));
    else if (v.is_array())
      for (auto& e : v.get_ref<Json::array_t&>()) pending.push_back(std::move(e));
  }
}

}  // namespace

std::optional<Json> try_parse_json_exact(std::string_view text) {
  ExactBuilder b;
  bool ok = Json::sax_parse(text.begin(), text.end(), &b, nlohmann::detail::input_format_t::json, true);
  if (!ok) {
    destroy_flat(std::move(b.root));
    return std::nullopt;
  }
  return std::move(b.root);
}

Json parse_json_exact(std::string_view text, std::string_view what, std::size_t max_depth) {
  ExactBuilder b(max_depth);
  bool ok = Json::sax_parse(text.begin(), text.end(), &b, nlohmann::detail::input_format_t::json, true);
  if (!ok) {
    destroy_flat(std::move(b.root));
    if (b.too_deep()) fail("{}: nested deeper than {} levels", what, max_depth);
    std::string msg = b.error_msg;
    // nlohmann prefixes "[json.exception.parse_error.101] parse error at line 1, column 5: ".
    if (auto p = msg.find("] "); p != std::string::npos) msg = msg.substr(p + 2);
    fail("{}: invalid JSON near byte {}: {}", what, b.error_pos, msg);
  }
  return std::move(b.root);
}

std::string py_float_repr(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v < 0 ? "-Infinity" : "Infinity";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string_view s(buf, static_cast<size_t>(r.ptr - buf));
  std::string out;
  if (s.front() == '-') {
    out.push_back('-');
    s.remove_prefix(1);
  }
  size_t epos = s.find('e');
  std::string digits;
  for (char c : s.substr(0, epos))
    if (c != '.') digits.push_back(c);
  int exp10 = 0;
  std::string_view es = s.substr(epos + 1);
  if (!es.empty() && es.front() == '+') es.remove_prefix(1);
  std::from_chars(es.data(), es.data() + es.size(), exp10);
  int decpt = exp10 + 1;  // digits d1d2... mean 0.d1d2... * 10^decpt
  int nd = static_cast<int>(digits.size());
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0.";
      out.append(static_cast<size_t>(-decpt), '0');
      out += digits;
    } else if (decpt >= nd) {
      out += digits;
      out.append(static_cast<size_t>(decpt - nd), '0');
      out += ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt));
      out += '.';
      out += digits.substr(static_cast<size_t>(decpt));
    }
    return out;
  }
  out += digits[0];
  if (nd > 1) {
    out += '.';
    out += digits.substr(1);
  }
  int e = decpt - 1;
  out += e < 0 ? "e-" : "e+";
  int ae = e < 0 ? -e : e;
  if (ae < 10) out += '0';
  out += std::to_string(ae);
  return out;
}

std::string py_json_string(std::string_view s) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() + 2);
  out.push_back('"');
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out.push_back(hex[c >> 4]);
          out.push_back(hex[c & 15]);
        } else {
          out.push_back(ch);
        }
    }
  }
  out.push_back('"');
  return out;
}

static void dump_to(std::string& out, const Json& v, const DumpStyle& st) {
  switch (v.type()) {
    case Json::value_t::null: out += "null"; return;
    case Json::value_t::boolean: out += v.get<bool>() ? "true" : "false"; return;
    case Json::value_t::number_integer: out += std::to_string(v.get<std::int64_t>()); return;
    case Json::value_t::number_unsigned: out += std::to_string(v.get<std::uint64_t>()); return;
    case Json::value_t::number_float: out += py_float_repr(v.get<double>()); return;
    case Json::value_t::string: out += py_json_string(v.get_ref<const std::string&>()); return;
    case Json::value_t::binary:
      if (is_big_int(v)) {
        out += big_int_digits(v);
        return;
      }
      fail("JSON: a binary value cannot be written as JSON text");
    case Json::value_t::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& e : v) {
        if (!first) out += st.compact ? "," : ", ";
        first = false;
        dump_to(out, e, st);
      }
      out.push_back(']');
      return;
    }
    case Json::value_t::object: {
      std::vector<std::pair<const std::string*, const Json*>> items;
      items.reserve(v.size());
      for (auto it = v.begin(); it != v.end(); ++it) items.emplace_back(&it.key(), &it.value());
      if (st.order == KeyOrder::CodePoint) {
        std::stable_sort(items.begin(), items.end(),
                         [](const auto& a, const auto& b) { return *a.first < *b.first; });
      } else if (st.order == KeyOrder::CaseInsensitive) {
        // Jinja2's dictsort: sorted(items, key=lambda kv: kv[0].lower()), a stable sort on
        // Python's full lowercase (unicode_lower.h), then code point order of the lowered keys
        // (byte order of UTF-8 is code point order).
        std::vector<std::string> lowered;
        lowered.reserve(items.size());
        for (const auto& it : items) lowered.push_back(py_lower(*it.first));
        std::vector<size_t> order(items.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(),
                         [&](size_t a, size_t b) { return lowered[a] < lowered[b]; });
        std::vector<std::pair<const std::string*, const Json*>> sorted;
        sorted.reserve(items.size());
        for (size_t i : order) sorted.push_back(items[i]);
        items = std::move(sorted);
      }
      out.push_back('{');
      bool first = true;
      for (const auto& [k, val] : items) {
        if (!first) out += st.compact ? "," : ", ";
        first = false;
        out += py_json_string(*k);
        out += st.compact ? ":" : ": ";
        dump_to(out, *val, st);
      }
      out.push_back('}');
      return;
    }
    case Json::value_t::discarded: fail("JSON: discarded value");
  }
}

std::string py_dumps(const Json& v, DumpStyle style) {
  std::string out;
  dump_to(out, v, style);
  return out;
}

// repr() of a str: single quotes unless the text has ' and no ".
static std::string py_repr_string(std::string_view s) {
  bool has_sq = s.find('\'') != std::string_view::npos;
  bool has_dq = s.find('"') != std::string_view::npos;
  char q = (has_sq && !has_dq) ? '"' : '\'';
  static const char* hex = "0123456789abcdef";
  std::string out(1, q);
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (ch == q || ch == '\\') {
      out.push_back('\\');
      out.push_back(ch);
    } else if (ch == '\n') {
      out += "\\n";
    } else if (ch == '\r') {
      out += "\\r";
    } else if (ch == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    } else {
      out.push_back(ch);
    }
  }
  out.push_back(q);
  return out;
}

static void py_repr_to(std::string& out, const Json& v) {
  switch (v.type()) {
    case Json::value_t::string: out += py_repr_string(v.get_ref<const std::string&>()); return;
    case Json::value_t::array: {
      out.push_back('[');
      bool first = true;
      for (const auto& e : v) {
        if (!first) out += ", ";
        first = false;
        py_repr_to(out, e);
      }
      out.push_back(']');
      return;
    }
    case Json::value_t::object: {
      out.push_back('{');
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) out += ", ";
        first = false;
        out += py_repr_string(it.key());
        out += ": ";
        py_repr_to(out, it.value());
      }
      out.push_back('}');
      return;
    }
    default: out += py_str(v);
  }
}

std::string py_str(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "None";
    case Json::value_t::boolean: return v.get<bool>() ? "True" : "False";
    case Json::value_t::string: return v.get<std::string>();
    case Json::value_t::number_float: {
      double d = v.get<double>();
      if (std::isnan(d)) return "nan";
      if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
      return py_float_repr(d);
    }
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::binary: return py_dumps(v);
    default: {
      std::string out;
      py_repr_to(out, v);
      return out;
    }
  }
}

bool py_truthy(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return false;
    case Json::value_t::boolean: return v.get<bool>();
    case Json::value_t::number_integer: return v.get<std::int64_t>() != 0;
    case Json::value_t::number_unsigned: return v.get<std::uint64_t>() != 0;
    case Json::value_t::number_float: return v.get<double>() != 0.0;
    case Json::value_t::string: return !v.get_ref<const std::string&>().empty();
    case Json::value_t::array:
    case Json::value_t::object: return !v.empty();
    case Json::value_t::binary: return true;  // big ints are never zero
    case Json::value_t::discarded: return false;
  }
  return false;
}

// Decodes one UTF-8 code point at s[i]; returns its length (1 for an invalid byte, cp=-1).
static size_t utf8_at(std::string_view s, size_t i, int32_t& cp) {
  auto b = static_cast<unsigned char>(s[i]);
  size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + n > s.size()) {
    cp = -1;
    return 1;
  }
  cp = n == 1 ? b : n == 2 ? (b & 0x1f) : n == 3 ? (b & 0x0f) : (b & 0x07);
  for (size_t k = 1; k < n; ++k) {
    auto c = static_cast<unsigned char>(s[i + k]);
    if ((c & 0xc0) != 0x80) {
      cp = -1;
      return 1;
    }
    cp = (cp << 6) | (c & 0x3f);
  }
  return n;
}

static bool py_space(int32_t c) {
  return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f ||
         c == 0x3000;
}

std::string py_strip(std::string_view s) {
  size_t begin = 0;
  while (begin < s.size()) {
    int32_t cp;
    size_t n = utf8_at(s, begin, cp);
    if (!py_space(cp)) break;
    begin += n;
  }
  size_t end = begin;
  for (size_t i = begin; i < s.size();) {
    int32_t cp;
    size_t n = utf8_at(s, i, cp);
    i += n;
    if (!py_space(cp)) end = i;
  }
  return std::string(s.substr(begin, end - begin));
}

bool py_is_blank(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    int32_t cp;
    i += utf8_at(s, i, cp);
    if (!py_space(cp)) return false;
  }
  return true;
}

}  // namespace k3::text
