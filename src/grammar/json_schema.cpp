// grammar/json_schema: see json_schema.h.
#include "grammar/json_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "core/error.h"
#include "grammar/gbnf.h"

namespace k3::grammar {

using text::Json;

namespace {

constexpr size_t kMaxDepth = 64;
constexpr size_t kMaxText = 1u << 20;
constexpr uint64_t kMaxCount = 1000;
constexpr int kAnyDepth = 12;
constexpr int kIntDigits = 16;

// Keywords that never constrain (annotations and vocabulary plumbing).
const std::set<std::string> kAnnotations = {
    "title",    "description", "examples",         "default",        "$schema", "$id",
    "$comment", "deprecated",  "readOnly",         "writeOnly",      "$defs",   "definitions",
    "$anchor",  "$vocabulary", "contentMediaType", "contentEncoding"};

std::string pointer_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

// The shared building blocks, defined once per prefix.
std::string base_rules(const std::string& p) {
  std::string hex = "[0-9a-fA-F]";
  return fmt::format(
      "{0}ws ::= ( \" \" | \"\\n\" \" \"{{0,20}} )?\n"
      "{0}char ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" ( [0-9a-cA-CeEfF] {1}{{3}} | "
      "[dD] [0-7] {1}{{2}} ) )\n"
      "{0}string ::= \"\\\"\" {0}char* \"\\\"\"\n"
      "{0}integer ::= \"-\"? ( \"0\" | [1-9] [0-9]{{0,15}} )\n"
      "{0}number ::= {0}integer ( \".\" [0-9]{{1,16}} )? ( [eE] [-+]? [0-9]{{1,2}} )?\n"
      "{0}boolean ::= \"true\" | \"false\"\n"
      "{0}null ::= \"null\"\n",
      p, hex);
}

// Any JSON value, nesting at most kAnyDepth levels: value-d may hold containers of value-(d+1).
std::string any_rules(const std::string& p) {
  std::string g;
  for (int d = 0; d <= kAnyDepth; ++d) {
    const bool leaf = d == kAnyDepth;
    g += fmt::format("{0}any-{1} ::= {0}string | {0}number | {0}boolean | {0}null", p, d);
    if (!leaf) g += fmt::format(" | {0}anyobj-{1} | {0}anyarr-{1}", p, d);
    g += "\n";
    if (leaf) continue;
    g += fmt::format(
        "{0}anyobj-{1} ::= \"{{\" {0}ws ( {0}string {0}ws \":\" {0}ws {0}any-{2} {0}ws "
        "( \",\" {0}ws {0}string {0}ws \":\" {0}ws {0}any-{2} {0}ws )* )? \"}}\"\n"
        "{0}anyarr-{1} ::= \"[\" {0}ws ( {0}any-{2} {0}ws ( \",\" {0}ws {0}any-{2} {0}ws )* )? \"]\"\n",
        p, d, d + 1);
  }
  return g;
}

// ---- integer ranges as digit patterns ----
std::string digits_any(size_t n) { return n == 0 ? "" : fmt::format("[0-9]{{{}}}", n); }

std::string cls(char lo, char hi) {
  if (lo == hi) return fmt::format("\"{}\"", lo);
  return fmt::format("[{}-{}]", lo, hi);
}

// Digit strings of t.size() digits (leading zeros allowed) >= t / <= t.
std::string ge_tail(std::string_view t) {
  if (t.empty()) return "\"\"";
  std::string alt = fmt::format("( \"{}\" {}", t[0], ge_tail(t.substr(1)));
  if (t[0] < '9')
    alt += fmt::format(" | {} {}", cls(static_cast<char>(t[0] + 1), '9'), digits_any(t.size() - 1));
  return alt + " )";
}
std::string le_tail(std::string_view t) {
  if (t.empty()) return "\"\"";
  std::string alt = fmt::format("( \"{}\" {}", t[0], le_tail(t.substr(1)));
  if (t[0] > '0')
    alt += fmt::format(" | {} {}", cls('0', static_cast<char>(t[0] - 1)), digits_any(t.size() - 1));
  return alt + " )";
}
// Digit strings between a and b (same length, a <= b).
std::string between(std::string_view a, std::string_view b) {
  if (a.empty()) return "\"\"";
  if (a[0] == b[0]) return fmt::format("\"{}\" {}", a[0], between(a.substr(1), b.substr(1)));
  std::string alt = fmt::format("( \"{}\" {}", a[0], ge_tail(a.substr(1)));
  if (b[0] - a[0] > 1)
    alt += fmt::format(" | {} {}", cls(static_cast<char>(a[0] + 1), static_cast<char>(b[0] - 1)),
                       digits_any(a.size() - 1));
  alt += fmt::format(" | \"{}\" {} )", b[0], le_tail(b.substr(1)));
  return alt;
}
// Non-negative integers in [a, b] written without leading zeros.
std::string nonneg_range(uint64_t a, uint64_t b) {
  std::vector<std::string> alts;
  const std::string sa = std::to_string(a), sb = std::to_string(b);
  for (size_t len = sa.size(); len <= sb.size(); ++len) {
    uint64_t lo = len == sa.size() ? a : static_cast<uint64_t>(std::pow(10.0, static_cast<double>(len - 1)));
    std::string shi = len == sb.size() ? sb : std::string(len, '9');
    alts.push_back("( " + between(std::to_string(lo), shi) + " )");
  }
  std::string out = "( ";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + " )";
}

class Compiler {
 public:
  Compiler(const Json& root, const SchemaOptions& o) : root_(root), o_(o), p_(o.prefix) {}

  std::string run() {
    std::string r = rule_for(root_, "", 0);
    out_ = fmt::format("{}root ::= {}\n", p_, r) + out_;
    out_ += base_rules(p_);
    if (need_any_) out_ += any_rules(p_);
    if (out_.size() > kMaxText) fail("json_schema: the grammar would be larger than {} bytes", kMaxText);
    return out_;
  }

 private:
  [[noreturn]] void unsupported(const std::string& kw, const std::string& path) const {
    fail("json_schema: unsupported keyword '{}' at {}", kw, path.empty() ? "(root)" : path);
  }
  [[noreturn]] void invalid(const std::string& what, const std::string& path) const {
    fail("json_schema: {} at {}", what, path.empty() ? "(root)" : path);
  }
  void refuse(const std::string& kw, const std::string& path) const {
    if (o_.strict) unsupported(kw, path);
  }

  std::string new_rule(const std::string& body) {
    std::string name = fmt::format("{}r{}", p_, n_rules_++);
    out_ += name + " ::= " + body + "\n";
    if (out_.size() > kMaxText) fail("json_schema: the grammar would be larger than {} bytes", kMaxText);
    return name;
  }

  std::string any() {
    need_any_ = true;
    return p_ + "any-0";
  }

  static std::string literal(const Json& v) { return gbnf_quote(text::py_dumps(v)); }

  uint64_t count(const Json& s, const char* kw, const std::string& path, uint64_t def, bool is_max) {
    auto it = s.find(kw);
    if (it == s.end()) return def;
    if (!it->is_number() || it->get<double>() < 0 || !std::isfinite(it->get<double>()))
      invalid(fmt::format("'{}' must be a non-negative number", kw), path);
    double d = it->get<double>();
    if (d > static_cast<double>(kMaxCount)) {
      if (!is_max) invalid(fmt::format("'{}' larger than {} is not supported", kw, kMaxCount), path);
      return kMaxCount;
    }
    return static_cast<uint64_t>(is_max ? std::floor(d) : std::ceil(d));
  }

  // The expression (usually a rule name) for one schema.
  std::string rule_for(const Json& s, const std::string& path, size_t depth) {
    if (depth > kMaxDepth) invalid(fmt::format("schema nested deeper than {}", kMaxDepth), path);
    if (s.is_boolean()) {
      if (s.get<bool>()) return any();
      invalid("the schema 'false' matches nothing", path);
    }
    if (!s.is_object()) invalid("a schema must be an object or a boolean", path);

    if (auto it = s.find("$ref"); it != s.end()) {
      for (auto& [k, v] : s.items())
        if (k != "$ref" && !kAnnotations.count(k)) refuse(k + "' beside '$ref", path);
      return ref(*it, path, depth);
    }
    if (auto it = s.find("const"); it != s.end()) return literal(*it);
    if (auto it = s.find("enum"); it != s.end()) {
      if (!it->is_array() || it->empty()) invalid("'enum' must be a non-empty array", path);
      std::string alts;
      for (const Json& v : *it) alts += (alts.empty() ? "" : " | ") + literal(v);
      return new_rule(alts);
    }
    for (const char* kw : {"anyOf", "oneOf"})
      if (auto it = s.find(kw); it != s.end()) {
        if (!it->is_array() || it->empty()) invalid(fmt::format("'{}' must be a non-empty array", kw), path);
        for (auto& [k, v] : s.items())
          if (k != kw && !kAnnotations.count(k) && k != "type") refuse(k + "' beside '" + kw, path);
        std::string alts;
        for (size_t i = 0; i < it->size(); ++i)
          alts += (i ? " | " : "") + rule_for((*it)[i], fmt::format("{}/{}/{}", path, kw, i), depth + 1);
        return new_rule(alts);
      }
    if (auto it = s.find("allOf"); it != s.end()) return all_of(s, *it, path, depth);

    std::vector<std::string> types;
    if (auto it = s.find("type"); it != s.end()) {
      if (it->is_string()) types.push_back(it->get<std::string>());
      else if (it->is_array())
        for (const Json& t : *it) {
          if (!t.is_string()) invalid("'type' must be a string or an array of strings", path);
          types.push_back(t.get<std::string>());
        }
      else invalid("'type' must be a string or an array of strings", path);
      if (types.empty()) invalid("'type' must not be empty", path);
    } else {
      types = inferred_types(s);
    }
    std::set<std::string> used;  // keywords some branch honoured
    std::string alts;
    for (const std::string& t : types) {
      std::string r = typed(s, t, path, depth, used);
      alts += (alts.empty() ? "" : " | ") + r;
    }
    for (auto& [k, v] : s.items())
      if (!used.count(k) && !kAnnotations.count(k) && k != "type") refuse(k, path);
    return types.size() == 1 ? alts : new_rule(alts);
  }

  static std::vector<std::string> inferred_types(const Json& s) {
    auto has = [&](std::initializer_list<const char*> ks) {
      for (const char* k : ks)
        if (s.contains(k)) return true;
      return false;
    };
    std::vector<std::string> t;
    if (has({"properties", "required", "additionalProperties"})) t.push_back("object");
    if (has({"items", "prefixItems", "minItems", "maxItems"})) t.push_back("array");
    if (has({"minLength", "maxLength", "format"})) t.push_back("string");
    if (has({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) t.push_back("number");
    if (t.empty()) t = {"any"};
    return t;
  }

  std::string typed(const Json& s, const std::string& t, const std::string& path, size_t depth,
                    std::set<std::string>& used) {
    if (t == "any") return any();
    if (t == "null") return p_ + "null";
    if (t == "boolean") return p_ + "boolean";
    if (t == "string") return string_rule(s, path, used);
    if (t == "integer") return integer_rule(s, path, used);
    if (t == "number") {
      for (const char* kw : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
        if (s.contains(kw)) refuse(kw, path), used.insert(kw);
      if (auto f = s.find("format"); f != s.end() && (*f == "float" || *f == "double")) used.insert("format");
      return p_ + "number";
    }
    if (t == "object") return object_rule(s, path, depth, used);
    if (t == "array") return array_rule(s, path, depth, used);
    invalid(fmt::format("unknown type '{}'", t), path);
  }

  std::string string_rule(const Json& s, const std::string& path, std::set<std::string>& used) {
    used.insert({"minLength", "maxLength"});
    if (auto f = s.find("format"); f != s.end()) {
      used.insert("format");
      if (!f->is_string()) invalid("'format' must be a string", path);
      if (std::string r = format_rule(f->get<std::string>()); !r.empty()) {
        if (s.contains("minLength") || s.contains("maxLength"))
          refuse("minLength/maxLength' with 'format", path);
        return r;
      }
      refuse("format: " + f->get<std::string>(), path);
    }
    if (s.contains("pattern")) refuse("pattern", path), used.insert("pattern");
    const uint64_t lo = count(s, "minLength", path, 0, false);
    const uint64_t hi = count(s, "maxLength", path, UINT64_MAX, true);
    if (lo == 0 && hi == UINT64_MAX) return p_ + "string";
    if (hi < lo) invalid("maxLength < minLength", path);
    std::string rep = hi == UINT64_MAX ? fmt::format("{{{},}}", lo) : fmt::format("{{{},{}}}", lo, hi);
    return new_rule(fmt::format("\"\\\"\" {}char{} \"\\\"\"", p_, rep));
  }

  std::string format_rule(const std::string& f) {
    auto once = [&](const std::string& key, const std::string& body) {
      auto it = formats_.find(key);
      if (it != formats_.end()) return it->second;
      std::string name = new_rule(body);
      formats_[key] = name;
      return name;
    };
    const std::string date =
        "[0-9]{4} \"-\" ( ( \"01\" | \"03\" | \"05\" | \"07\" | \"08\" | \"10\" | \"12\" ) \"-\" ( \"0\" "
        "[1-9] | [12] [0-9] | \"3\" [01] )"
        " | ( \"04\" | \"06\" | \"09\" | \"11\" ) \"-\" ( \"0\" [1-9] | [12] [0-9] | \"30\" )"
        " | \"02-\" ( \"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8] ) )";
    const std::string time =
        "( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] \":\" [0-5] [0-9] ( \".\" [0-9]{1,9} )? "
        "( \"Z\" | [+-] ( [01] [0-9] | \"2\" [0-3] ) \":\" [0-5] [0-9] )";
    const std::string hx = "[0-9a-f]";
    if (f == "date") return once(f, "\"\\\"\" " + date + " \"\\\"\"");
    if (f == "time") return once(f, "\"\\\"\" " + time + " \"\\\"\"");
    if (f == "date-time") return once(f, "\"\\\"\" " + date + " \"T\" " + time + " \"\\\"\"");
    if (f == "uuid")
      return once(
          f,
          fmt::format(
              "\"\\\"\" {0}{{8}} \"-\" {0}{{4}} \"-\" {0}{{4}} \"-\" {0}{{4}} \"-\" {0}{{12}} \"\\\"\"", hx));
    if (f == "ipv4") {
      const std::string octet =
          "( \"25\" [0-5] | \"2\" [0-4] [0-9] | \"1\" [0-9] [0-9] | [1-9] [0-9] | [0-9] )";
      return once(f, fmt::format("\"\\\"\" {0} \".\" {0} \".\" {0} \".\" {0} \"\\\"\"", octet));
    }
    if (f == "email")
      return once(
          f,
          "\"\\\"\" [a-z0-9]{1,16} ( \".\" [a-z0-9]{1,16} )? \"@\" [a-z0-9]{1,16} \".\" [a-z]{2,8} \"\\\"\"");
    return "";
  }

  std::string integer_rule(const Json& s, const std::string& path, std::set<std::string>& used) {
    used.insert({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"});
    if (s.contains("multipleOf")) refuse("multipleOf", path), used.insert("multipleOf");
    const double cap = std::pow(10.0, kIntDigits) - 1;
    double lo = -cap, hi = cap;
    auto num = [&](const char* kw) -> std::optional<double> {
      auto it = s.find(kw);
      if (it == s.end()) return std::nullopt;
      if (!it->is_number()) invalid(fmt::format("'{}' must be a number", kw), path);
      return it->get<double>();
    };
    if (auto f = s.find("format"); f != s.end()) {
      used.insert("format");
      if (*f == "int32") lo = -2147483648.0, hi = 2147483647.0;
      else if (*f != "int64") refuse("format: " + f->dump(), path);
    }
    if (auto v = num("minimum")) lo = std::max(lo, std::ceil(*v));
    if (auto v = num("exclusiveMinimum")) lo = std::max(lo, std::floor(*v) + 1);
    if (auto v = num("maximum")) hi = std::min(hi, std::floor(*v));
    if (auto v = num("exclusiveMaximum")) hi = std::min(hi, std::ceil(*v) - 1);
    if (lo == -cap && hi == cap) return p_ + "integer";
    if (lo > hi) invalid("no integer satisfies the bounds", path);
    const auto L = static_cast<int64_t>(lo), H = static_cast<int64_t>(hi);
    std::string body;
    if (H < 0) {
      body = "\"-\" " + nonneg_range(static_cast<uint64_t>(-H), static_cast<uint64_t>(-L));
    } else if (L < 0) {
      body = "\"-\" " + nonneg_range(1, static_cast<uint64_t>(-L)) + " | " +
             nonneg_range(0, static_cast<uint64_t>(H));
    } else {
      body = nonneg_range(static_cast<uint64_t>(L), static_cast<uint64_t>(H));
    }
    return new_rule(body);
  }

  // A key that is no declared key: [A-Za-z0-9_]+ outside the (finite) set, built on its trie.
  std::string extra_key(const std::vector<std::string>& declared) {
    struct Node {
      std::map<char, int> next;
      bool word = false;
    };
    const std::string alpha = "A-Za-z0-9_";
    std::vector<Node> t(1);
    for (const std::string& k : declared) {
      bool plain = !k.empty() && std::all_of(k.begin(), k.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
      });
      if (!plain) continue;  // cannot collide with a plain key
      int n = 0;
      for (char c : k) {
        auto it = t[static_cast<size_t>(n)].next.find(c);
        if (it == t[static_cast<size_t>(n)].next.end()) {
          t.emplace_back();
          it = t[static_cast<size_t>(n)].next.emplace(c, static_cast<int>(t.size() - 1)).first;
        }
        n = it->second;
      }
      t[static_cast<size_t>(n)].word = true;
    }
    // K(n): the rest of a key whose prefix led to trie node n (n = -1: off the trie).
    const std::string base = fmt::format("{}xk{}", p_, n_rules_++);
    std::string chars;  // the alphabet, spelled out
    for (char c = '0'; c <= '9'; ++c) chars += c;
    for (char c = 'A'; c <= 'Z'; ++c) chars += c;
    chars += '_';
    for (char c = 'a'; c <= 'z'; ++c) chars += c;
    std::string rules;
    for (size_t n = 0; n < t.size(); ++n) {
      std::string alts;
      if (n != 0 && !t[n].word) alts = "\"\"";  // stopping here is not a declared key
      std::string excl;                         // the characters that stay on the trie
      for (auto [c, m] : t[n].next) {
        alts += fmt::format("{}\"{}\" {}-{}", alts.empty() ? "" : " | ", c, base, m);
        excl += c;
      }
      // Any character that leaves the trie, then anything.
      std::string keep;
      for (char c : chars)
        if (excl.find(c) == std::string::npos) keep += c;
      const std::string cls = keep.empty() ? "" : "[" + keep + "]";
      if (!cls.empty()) alts += fmt::format("{}{} [{}]*", alts.empty() ? "" : " | ", cls, alpha);
      if (alts.empty()) alts = "\"\"";  // cannot happen: a trie node always leaves some character
      rules += fmt::format("{}-{} ::= {}\n", base, n, alts);
    }
    out_ += rules;
    return new_rule(fmt::format("\"\\\"\" {}-0 \"\\\"\"", base));
  }

  std::string object_rule(const Json& s, const std::string& path, size_t depth, std::set<std::string>& used) {
    used.insert({"properties", "required", "additionalProperties"});
    for (const char* kw : {"patternProperties", "propertyNames", "minProperties", "maxProperties",
                           "dependentRequired", "dependentSchemas", "unevaluatedProperties"})
      if (s.contains(kw)) refuse(kw, path), used.insert(kw);
    struct Prop {
      std::string name, value;
      bool required;
    };
    std::vector<Prop> props;
    std::set<std::string> required;
    if (auto it = s.find("required"); it != s.end()) {
      if (!it->is_array()) invalid("'required' must be an array", path);
      for (const Json& r : *it) {
        if (!r.is_string()) invalid("'required' must hold strings", path);
        required.insert(r.get<std::string>());
      }
    }
    std::vector<std::string> declared;
    if (auto it = s.find("properties"); it != s.end()) {
      if (!it->is_object()) invalid("'properties' must be an object", path);
      for (auto& [k, v] : it->items()) {
        declared.push_back(k);
        props.push_back(
            {k, rule_for(v, path + "/properties/" + pointer_escape(k), depth + 1), required.count(k) > 0});
      }
    }
    for (const std::string& r : required)
      if (std::find(declared.begin(), declared.end(), r) == declared.end()) {
        declared.push_back(r);
        props.push_back({r, any(), true});
      }
    std::string extra_value;
    if (auto it = s.find("additionalProperties"); it != s.end()) {
      if (it->is_boolean()) {
        if (it->get<bool>()) extra_value = any();
      } else {
        extra_value = rule_for(*it, path + "/additionalProperties", depth + 1);
      }
    }
    const std::string ws = p_ + "ws";
    auto kv = [&](const Prop& p) {
      return fmt::format("{} {} \":\" {} {} {}", gbnf_quote(text::py_json_string(p.name)), ws, ws, p.value,
                         ws);
    };
    // head(i): properties i.. with none written yet; tail(i): with at least one written.
    const size_t n = props.size();
    std::vector<std::string> head(n + 1), tail(n + 1);
    std::string extra_kv;
    if (!extra_value.empty())
      extra_kv = fmt::format("{} {} \":\" {} {} {}", extra_key(declared), ws, ws, extra_value, ws);
    if (extra_kv.empty()) {
      head[n] = "\"\"";
      tail[n] = "\"\"";
    } else {
      std::string t = fmt::format("{}r{}", p_, n_rules_++);
      out_ += fmt::format("{} ::= \",\" {} {} {} | \n", t, ws, extra_kv, t);
      tail[n] = t;
      head[n] = new_rule(fmt::format("{} {} | ", extra_kv, t));
    }
    for (size_t i = n; i-- > 0;) {
      const std::string k = kv(props[i]);
      std::string tb = fmt::format("\",\" {} {} {}", ws, k, tail[i + 1]);
      std::string hb = fmt::format("{} {}", k, tail[i + 1]);
      if (!props[i].required) {
        tb += " | " + tail[i + 1];
        hb += " | " + head[i + 1];
      }
      tail[i] = new_rule(tb);
      head[i] = new_rule(hb);
    }
    return new_rule(fmt::format("\"{{\" {} {} \"}}\"", ws, head[0]));
  }

  std::string array_rule(const Json& s, const std::string& path, size_t depth, std::set<std::string>& used) {
    used.insert({"items", "prefixItems", "minItems", "maxItems"});
    for (const char* kw : {"contains", "minContains", "maxContains", "unevaluatedItems"})
      if (s.contains(kw)) refuse(kw, path), used.insert(kw);
    if (auto it = s.find("uniqueItems"); it != s.end()) {
      used.insert("uniqueItems");
      if (it->is_boolean() && it->get<bool>()) refuse("uniqueItems", path);
    }
    std::vector<std::string> prefix;
    if (auto it = s.find("prefixItems"); it != s.end()) {
      if (!it->is_array()) invalid("'prefixItems' must be an array", path);
      for (size_t i = 0; i < it->size(); ++i)
        prefix.push_back(rule_for((*it)[i], fmt::format("{}/prefixItems/{}", path, i), depth + 1));
    }
    std::string rest;  // empty: nothing after the prefix
    bool rest_allowed = true;
    if (auto it = s.find("items"); it != s.end()) {
      if (it->is_boolean() && !it->get<bool>()) rest_allowed = false;
      else rest = rule_for(*it, path + "/items", depth + 1);
    } else {
      rest = any();
    }
    const uint64_t lo = count(s, "minItems", path, 0, false);
    uint64_t hi = count(s, "maxItems", path, UINT64_MAX, true);
    if (!rest_allowed) hi = std::min<uint64_t>(hi, prefix.size());
    if (hi < lo) invalid("maxItems < minItems (or fewer prefixItems than minItems with items: false)", path);
    const std::string ws = p_ + "ws";
    auto elem = [&](uint64_t i) { return i < prefix.size() ? prefix[i] : rest; };
    // after(i): the elements from index i on, once i >= 1 are written: explicit rules up to the
    // last position that differs (a prefix item or a required one), then a repetition.
    const uint64_t explicit_n = std::max<uint64_t>({prefix.size(), lo, 1});
    std::string next;  // after(explicit_n)
    if (hi <= explicit_n) {
      next = "\"\"";
    } else if (hi == UINT64_MAX) {
      next = new_rule(fmt::format("( \",\" {} {} {} )*", ws, rest, ws));
    } else {
      next = new_rule(fmt::format("( \",\" {} {} {} ){{0,{}}}", ws, rest, ws, hi - explicit_n));
    }
    for (uint64_t i = std::min(explicit_n, hi); i-- > 1;) {
      std::string b = fmt::format("\",\" {} {} {} {}", ws, elem(i), ws, next);
      if (i >= lo) b += " | ";
      next = new_rule(b);
    }
    if (hi == 0) return new_rule(fmt::format("\"[\" {} \"]\"", ws));
    std::string first = fmt::format("{} {} {}", elem(0), ws, next);
    if (lo == 0) first = "( " + first + " )?";
    return new_rule(fmt::format("\"[\" {} {} \"]\"", ws, first));
  }

  std::string all_of(const Json& s, const Json& parts, const std::string& path, size_t depth) {
    if (!parts.is_array() || parts.empty()) invalid("'allOf' must be a non-empty array", path);
    for (auto& [k, v] : s.items())
      if (k != "allOf" && !kAnnotations.count(k)) refuse(k + "' beside 'allOf", path);
    if (parts.size() == 1) return rule_for(parts[0], path + "/allOf/0", depth + 1);
    // Objects merge: properties and required are unions; anything else cannot be honoured.
    Json merged = {{"type", "object"}, {"properties", Json::object()}, {"required", Json::array()}};
    for (size_t i = 0; i < parts.size(); ++i) {
      const Json& p = parts[i];
      const std::string pp = fmt::format("{}/allOf/{}", path, i);
      if (!p.is_object()) unsupported("allOf", pp);
      for (auto& [k, v] : p.items()) {
        if (kAnnotations.count(k)) continue;
        if (k == "type" && v == "object") continue;
        if (k == "properties" && v.is_object()) {
          for (auto& [name, ps] : v.items()) {
            if (merged["properties"].contains(name)) unsupported("allOf (a property in two parts)", pp);
            merged["properties"][name] = ps;
          }
        } else if (k == "required" && v.is_array()) {
          for (const Json& r : v) merged["required"].push_back(r);
        } else if (k == "additionalProperties" && v == false) {
          // Across allOf, additionalProperties:false forbids the other parts' properties;
          // emitting only declared keys is what we do anyway, so only honour it per part.
          unsupported("allOf with additionalProperties", pp);
        } else {
          unsupported("allOf", pp);
        }
      }
    }
    return rule_for(merged, path, depth + 1);
  }

  std::string ref(const Json& r, const std::string& path, size_t depth) {
    if (!r.is_string()) invalid("'$ref' must be a string", path);
    const std::string target = r.get<std::string>();
    if (target.empty() || target[0] != '#')
      invalid(fmt::format("only local references are supported ('{}')", target), path);
    if (auto it = refs_.find(target); it != refs_.end()) return it->second;
    // Resolve the JSON pointer against the root schema.
    const Json* node = &root_;
    std::string ptr = target.substr(1);
    size_t at = 0;
    while (at < ptr.size()) {
      if (ptr[at] != '/') invalid(fmt::format("'$ref' {} is not a JSON pointer", target), path);
      size_t end = ptr.find('/', at + 1);
      std::string tok = ptr.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
      std::string key;
      for (size_t i = 0; i < tok.size(); ++i) {
        if (tok[i] == '~' && i + 1 < tok.size() && (tok[i + 1] == '0' || tok[i + 1] == '1')) {
          key += tok[i + 1] == '0' ? '~' : '/';
          ++i;
        } else {
          key += tok[i];
        }
      }
      if (node->is_object() && node->contains(key)) node = &(*node)[key];
      else if (node->is_array() && !key.empty() && std::all_of(key.begin(), key.end(), ::isdigit) &&
               std::stoul(key) < node->size())
        node = &(*node)[std::stoul(key)];
      else invalid(fmt::format("'$ref' {} points at nothing", target), path);
      at = end == std::string::npos ? ptr.size() : end;
    }
    // Name the rule before compiling the target, so a recursive reference finds it.
    const std::string name = fmt::format("{}ref{}", p_, n_rules_++);
    refs_[target] = name;
    std::string body = rule_for(*node, target.substr(1), depth + 1);
    out_ += name + " ::= " + body + "\n";
    return name;
  }

  const Json& root_;
  SchemaOptions o_;
  std::string p_;
  std::string out_;
  size_t n_rules_ = 0;
  bool need_any_ = false;
  std::map<std::string, std::string> refs_, formats_;
};

}  // namespace

std::string json_schema_to_gbnf(const Json& schema, const SchemaOptions& opt) {
  return Compiler(schema, opt).run();
}

std::string json_any_gbnf(bool object_only, std::string_view prefix) {
  const std::string p(prefix);
  return fmt::format("{}root ::= {}\n", p, object_only ? p + "anyobj-0" : p + "any-0") + base_rules(p) +
         any_rules(p);
}

}  // namespace k3::grammar
