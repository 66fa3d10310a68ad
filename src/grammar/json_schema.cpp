// grammar/json_schema: see json_schema.h.
#include "grammar/json_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <new>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/error.h"
#include "grammar/gbnf.h"
#include "grammar/work_budget.h"

namespace k3::grammar {

using text::Json;

namespace {

constexpr size_t kMaxDepth = 64;
constexpr size_t kMaxText = 1u << 20;
constexpr uint64_t kMaxCount = 1000;
constexpr int kAnyDepth = 12;
constexpr int kIntDigits = 16;
// Distinct alternatives of one anyOf/oneOf (after its const and enum branches are merged
// into one trie): each is a parse the matcher keeps alive, and the matcher refuses a state of
// more than 4096 at decode time, after the request took a slot. Refusing here is a 400.
constexpr size_t kMaxAlternatives = 1024;
constexpr size_t kInlineLiteral = 64;  // a longer const gets a rule, so each use is a name
constexpr size_t kIndexedObject = 16;  // a $ref into a larger object uses a hash index
constexpr size_t kShown = 200;         // the most bytes of a client's string a message repeats
constexpr size_t kNoIndex = SIZE_MAX;

// Keywords that never constrain (annotations and vocabulary plumbing).
const std::set<std::string> kAnnotations = {
    "title",    "description", "examples",         "default",        "$schema", "$id",
    "$comment", "deprecated",  "readOnly",         "writeOnly",      "$defs",   "definitions",
    "$anchor",  "$vocabulary", "contentMediaType", "contentEncoding"};
const std::set<std::string> kTypes = {"null",   "boolean", "object", "array",
                                      "number", "integer", "string", "any"};

std::string pointer_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

// s cut to at most kShown bytes at a character boundary (a message must stay valid UTF-8:
// the server writes it into JSON).
std::string shown(std::string_view s) {
  if (s.size() <= kShown) return std::string(s);
  size_t cut = kShown;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return fmt::format("{}... ({} bytes)", s.substr(0, cut), s.size());
}

// Where a schema sits, for messages only: a chain of pointer segments on the stack, written
// out when a message needs it. (Building the path string for every node cost depth × key
// length per node, which a schema of long keys made quadratic.)
struct Where {
  const Where* up = nullptr;
  std::string_view kw;               // "properties", "anyOf", ... or a whole pointer (is_pointer)
  const std::string* key = nullptr;  // then a property name
  size_t index = kNoIndex;           // or an array index
  bool is_pointer = false;           // kw is a $ref's pointer: the start of the chain
};

std::string render(const Where& at) {
  std::vector<const Where*> chain;
  for (const Where* w = &at; w; w = w->up) chain.push_back(w);
  std::string out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    const Where& w = **it;
    if (w.is_pointer) {
      out = std::string(w.kw);
      continue;
    }
    if (!w.kw.empty()) out += "/" + std::string(w.kw);
    if (w.key) out += "/" + pointer_escape(*w.key);
    if (w.index != kNoIndex) out += fmt::format("/{}", w.index);
  }
  return out.empty() ? "(root)" : shown(out);
}

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The byte length of the UTF-8 character starting at s[at] (1 for a stray byte).
size_t char_len(std::string_view s, size_t at) {
  const auto c = static_cast<unsigned char>(s[at]);
  const size_t n = c < 0xC0 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
  return std::min(n, s.size() - at);
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
    const Where top;
    const std::string r = rule_for(root_, top, 0);
    out_.insert(0, fmt::format("{}root ::= {}\n", p_, r));
    out_ += base_rules(p_);
    if (need_any_) out_ += any_rules(p_);
    check_size();
    return std::move(out_);
  }

 private:
  // ---- messages ----
  [[noreturn]] void unsupported(const std::string& kw, const Where& at) const {
    fail("json_schema: unsupported keyword '{}' at {}", shown(kw), render(at));
  }
  [[noreturn]] void invalid(const std::string& what, const Where& at) const {
    fail("json_schema: {} at {}", what, render(at));
  }
  void refuse(const std::string& kw, const Where& at) const {
    if (o_.strict) unsupported(kw, at);
  }
  [[noreturn]] static void too_large() {
    fail("json_schema: the grammar would be larger than {} bytes", kMaxText);
  }

  // ---- output: every byte is counted as it is written, so a refusal comes before the cost ----
  void tick(size_t n = 1) {
    if (o_.budget) o_.budget->tick(n);
  }
  void check_size() const {
    if (out_.size() > kMaxText) too_large();
  }
  std::string fresh_name() { return fmt::format("{}r{}", p_, n_rules_++); }
  void emit(const std::string& name, const std::string& body) {
    if (body.size() > kMaxText) too_large();
    tick(1 + body.size() / 256);
    out_ += name;
    out_ += " ::= ";
    out_ += body;
    out_ += '\n';
    check_size();
  }
  std::string new_rule(const std::string& body) {
    std::string name = fresh_name();
    emit(name, body);
    return name;
  }

  std::string any() {
    need_any_ = true;
    return p_ + "any-0";
  }

  // Alternatives of one rule, each written once: the same branch twice (two spellings of one
  // $ref, a repeated type) would be two parses alive for the same text.
  class Alternatives {
   public:
    void add(std::string expr) {
      if (seen_.insert(expr).second) list_.push_back(std::move(expr));
    }
    size_t size() const { return list_.size(); }
    const std::string& first() const { return list_.front(); }
    std::string joined() const {
      std::string out;
      for (const std::string& a : list_) out += (out.empty() ? "" : " | ") + a;
      return out;
    }

   private:
    std::vector<std::string> list_;
    std::unordered_set<std::string> seen_;
  };
  std::string one_of(const Alternatives& alts, const Where& at) {
    if (alts.size() > kMaxAlternatives)
      invalid(fmt::format("more than {} distinct alternatives", kMaxAlternatives), at);
    return alts.size() == 1 ? alts.first() : new_rule(alts.joined());
  }

  // Objects and arrays whose members are being compiled: a $ref that comes back to a schema
  // in progress is recursion only when one of them lies between (it read "{" or "[").
  struct Container {
    explicit Container(size_t& n) : n_(n) { ++n_; }
    ~Container() { --n_; }
    Container(const Container&) = delete;
    Container& operator=(const Container&) = delete;
    size_t& n_;
  };

  uint64_t count(const Json& s, const char* kw, const Where& at, uint64_t def, bool is_max) {
    auto it = s.find(kw);
    if (it == s.end()) return def;
    if (!it->is_number() || it->get<double>() < 0 || !std::isfinite(it->get<double>()))
      invalid(fmt::format("'{}' must be a non-negative number", kw), at);
    double d = it->get<double>();
    if (d > static_cast<double>(kMaxCount)) {
      if (!is_max) invalid(fmt::format("'{}' larger than {} is not supported", kw, kMaxCount), at);
      return kMaxCount;
    }
    return static_cast<uint64_t>(is_max ? std::floor(d) : std::ceil(d));
  }

  // The expression (a rule name or a short literal) for one schema. Each node of the schema
  // is compiled once, memoised on its address: a node reached by many $ref spellings, or
  // by references to it and to its ancestors, costs one compile, not one per path.
  std::string rule_for(const Json& s, const Where& at, size_t depth) {
    if (depth > kMaxDepth) invalid(fmt::format("schema nested deeper than {}", kMaxDepth), at);
    tick();
    auto [it, fresh] = memo_.try_emplace(&s);
    Memo* m = &it->second;  // unordered_map keeps element addresses across rehashing
    if (!fresh) {
      if (m->done) return m->expr;
      // A $ref came back to a schema still being compiled.
      if (m->containers == containers_)
        invalid("'$ref' cycle that reads nothing before it repeats (left recursion)", at);
      if (m->name.empty()) m->name = fresh_name();
      return m->name;
    }
    m->containers = containers_;
    std::string expr = compile(s, at, depth);
    if (!m->name.empty()) {
      emit(m->name, expr);
      expr = m->name;
    }
    m->expr = expr;
    m->done = true;
    return expr;
  }

  std::string compile(const Json& s, const Where& at, size_t depth) {
    if (s.is_boolean()) {
      if (s.get<bool>()) return any();
      invalid("the schema 'false' matches nothing", at);
    }
    if (!s.is_object()) invalid("a schema must be an object or a boolean", at);

    if (auto it = s.find("$ref"); it != s.end()) {
      for (auto& [k, v] : s.items())
        if (k != "$ref" && !kAnnotations.count(k)) refuse(k + "' beside '$ref", at);
      return ref(*it, at, depth);
    }
    if (is_literal(s)) {
      std::vector<std::string> values;
      add_literals(s, at, values);
      return literals_rule(std::move(values));
    }
    for (const char* kw : {"anyOf", "oneOf"})
      if (auto it = s.find(kw); it != s.end()) return any_of(s, kw, *it, at, depth);
    if (auto it = s.find("allOf"); it != s.end()) return all_of(s, *it, at, depth);

    std::vector<std::string> types;
    if (auto it = s.find("type"); it != s.end()) {
      if (it->is_string()) types.push_back(it->get<std::string>());
      else if (it->is_array())
        for (const Json& t : *it) {
          if (!t.is_string()) invalid("'type' must be a string or an array of strings", at);
          const std::string& name = t.get_ref<const std::string&>();
          if (!kTypes.count(name)) invalid(fmt::format("unknown type '{}'", shown(name)), at);
          // (a repeated type would compile its branch again)
          if (std::find(types.begin(), types.end(), name) == types.end()) types.push_back(name);
        }
      else invalid("'type' must be a string or an array of strings", at);
      if (types.empty()) invalid("'type' must not be empty", at);
    } else {
      types = inferred_types(s);
    }
    std::set<std::string> used;  // keywords some branch honoured
    Alternatives alts;
    for (const std::string& t : types) alts.add(typed(s, t, at, depth, used));
    for (auto& [k, v] : s.items())
      if (!used.count(k) && !kAnnotations.count(k) && k != "type") refuse(k, at);
    return one_of(alts, at);
  }

  // ---- const and enum: a trie of the values' texts ----
  // A schema whose grammar is its const or enum (those win over every other keyword).
  static bool is_literal(const Json& s) {
    return s.is_object() && !s.contains("$ref") && (s.contains("const") || s.contains("enum"));
  }
  void add_literals(const Json& s, const Where& at, std::vector<std::string>& out) {
    if (auto it = s.find("const"); it != s.end()) return add_value(*it, out);
    const Json& e = *s.find("enum");
    if (!e.is_array() || e.empty()) invalid("'enum' must be a non-empty array", at);
    for (const Json& v : e) add_value(v, out);
  }
  void add_value(const Json& v, std::vector<std::string>& out) {
    tick();
    out.push_back(text::py_dumps(v));
    literal_bytes_ += out.back().size();
    if (literal_bytes_ > kMaxText) too_large();
  }

  // The values' compact JSON texts as a trie: shared prefixes written once, one alternative
  // per distinct next character, so the matcher follows one parse whatever the number of
  // values (one alternative per value kept all those with the same first bytes alive: a
  // 5000-value enum was refused at the first token, "more than 4096 parses alive"). The text
  // is about the values' bytes plus a rule per branching point.
  std::string literals_rule(std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    if (v.size() == 1 && v[0].size() <= kInlineLiteral) return gbnf_quote(v[0]);
    // A trie node: the values [lo, hi), which share their first `depth` bytes, and its rule.
    struct Node {
      size_t lo, hi, depth;
      std::string name;
    };
    const std::string root = fresh_name();
    std::vector<Node> todo{{0, v.size(), 0, root}};
    while (!todo.empty()) {
      Node n = std::move(todo.back());
      todo.pop_back();
      Alternatives alts;
      size_t i = n.lo;
      if (v[i].size() == n.depth) {  // a value ends here (it sorts first)
        alts.add("\"\"");
        ++i;
      }
      while (i < n.hi) {
        tick();
        const std::string& a = v[i];
        const size_t unit = char_len(a, n.depth);
        size_t j = i + 1;  // the values that go on with the same character
        while (j < n.hi && v[j].compare(n.depth, unit, a, n.depth, unit) == 0) ++j;
        // Their common prefix (sorted: that of the first and the last), at a character boundary.
        const std::string& b = v[j - 1];
        size_t end = n.depth + unit;
        while (end < a.size() && end < b.size() && a[end] == b[end]) ++end;
        while (end < a.size() && end > n.depth + unit && is_continuation(a[end])) --end;
        std::string alt = gbnf_quote(std::string_view(a).substr(n.depth, end - n.depth));
        if (j - i > 1) {  // several values go on: a rule for their rests
          std::string child = fresh_name();
          alt += " " + child;
          todo.push_back({i, j, end, std::move(child)});
        }
        alts.add(std::move(alt));
        i = j;
      }
      emit(n.name, alts.joined());
    }
    return root;
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

  std::string typed(const Json& s, const std::string& t, const Where& at, size_t depth,
                    std::set<std::string>& used) {
    if (t == "any") return any();
    if (t == "null") return p_ + "null";
    if (t == "boolean") return p_ + "boolean";
    if (t == "string") return string_rule(s, at, used);
    if (t == "integer") return integer_rule(s, at, used);
    if (t == "number") {
      for (const char* kw : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"})
        if (s.contains(kw)) refuse(kw, at), used.insert(kw);
      if (auto f = s.find("format"); f != s.end() && (*f == "float" || *f == "double")) used.insert("format");
      return p_ + "number";
    }
    if (t == "object") return object_rule(s, at, depth, used);
    if (t == "array") return array_rule(s, at, depth, used);
    invalid(fmt::format("unknown type '{}'", shown(t)), at);
  }

  std::string string_rule(const Json& s, const Where& at, std::set<std::string>& used) {
    used.insert({"minLength", "maxLength"});
    if (auto f = s.find("format"); f != s.end()) {
      used.insert("format");
      if (!f->is_string()) invalid("'format' must be a string", at);
      if (std::string r = format_rule(f->get<std::string>()); !r.empty()) {
        if (s.contains("minLength") || s.contains("maxLength"))
          refuse("minLength/maxLength' with 'format", at);
        return r;
      }
      refuse("format: " + f->get<std::string>(), at);
    }
    if (s.contains("pattern")) refuse("pattern", at), used.insert("pattern");
    const uint64_t lo = count(s, "minLength", at, 0, false);
    const uint64_t hi = count(s, "maxLength", at, UINT64_MAX, true);
    if (lo == 0 && hi == UINT64_MAX) return p_ + "string";
    if (hi < lo) invalid("maxLength < minLength", at);
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

  std::string integer_rule(const Json& s, const Where& at, std::set<std::string>& used) {
    used.insert({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"});
    if (s.contains("multipleOf")) refuse("multipleOf", at), used.insert("multipleOf");
    const double cap = std::pow(10.0, kIntDigits) - 1;
    double lo = -cap, hi = cap;
    auto num = [&](const char* kw) -> std::optional<double> {
      auto it = s.find(kw);
      if (it == s.end()) return std::nullopt;
      if (!it->is_number()) invalid(fmt::format("'{}' must be a number", kw), at);
      return it->get<double>();
    };
    if (auto f = s.find("format"); f != s.end()) {
      used.insert("format");
      if (*f == "int32") lo = -2147483648.0, hi = 2147483647.0;
      else if (*f != "int64") refuse("format: " + f->dump(), at);
    }
    if (auto v = num("minimum")) lo = std::max(lo, std::ceil(*v));
    if (auto v = num("exclusiveMinimum")) lo = std::max(lo, std::floor(*v) + 1);
    if (auto v = num("maximum")) hi = std::min(hi, std::floor(*v));
    if (auto v = num("exclusiveMaximum")) hi = std::min(hi, std::ceil(*v) - 1);
    if (lo == -cap && hi == cap) return p_ + "integer";
    if (!(lo <= hi)) invalid("no integer satisfies the bounds", at);
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
  std::string extra_key(const std::vector<std::string_view>& declared) {
    struct Node {
      std::map<char, int> next;
      bool word = false;
    };
    const std::string alpha = "A-Za-z0-9_";
    std::vector<Node> t(1);
    for (std::string_view k : declared) {
      bool plain = !k.empty() && std::all_of(k.begin(), k.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
      });
      if (!plain) continue;  // cannot collide with a plain key
      int n = 0;
      for (char c : k) {
        tick();
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
      emit(fmt::format("{}-{}", base, n), alts);
    }
    return new_rule(fmt::format("\"\\\"\" {}-0 \"\\\"\"", base));
  }

  // An object's members, from one schema or merged from allOf's parts.
  struct Shape {
    struct Prop {
      std::string_view name;
      std::string value;
      bool required = false;
    };
    std::vector<Prop> props;
    std::unordered_set<std::string_view> declared;
    std::set<std::string_view> required;
    std::string extra;  // the value of additional properties; empty: none allowed
  };

  void add_required(const Json& list, const Where& at, Shape& shape) {
    if (!list.is_array()) invalid("'required' must be an array", at);
    for (const Json& r : list) {
      tick();
      if (!r.is_string()) invalid("'required' must hold strings", at);
      shape.required.insert(r.get_ref<const std::string&>());
    }
  }

  std::string object_rule(const Json& s, const Where& at, size_t depth, std::set<std::string>& used) {
    used.insert({"properties", "required", "additionalProperties"});
    for (const char* kw : {"patternProperties", "propertyNames", "minProperties", "maxProperties",
                           "dependentRequired", "dependentSchemas", "unevaluatedProperties"})
      if (s.contains(kw)) refuse(kw, at), used.insert(kw);
    Shape shape;
    const Container open(containers_);
    if (auto it = s.find("required"); it != s.end()) add_required(*it, at, shape);
    if (auto it = s.find("properties"); it != s.end()) {
      if (!it->is_object()) invalid("'properties' must be an object", at);
      for (auto& [k, v] : it->items()) {
        const Where here{&at, "properties", &k};
        if (!shape.declared.insert(k).second) continue;  // (a duplicate key in the JSON text)
        shape.props.push_back({k, rule_for(v, here, depth + 1)});
      }
    }
    if (auto it = s.find("additionalProperties"); it != s.end()) {
      if (it->is_boolean()) {
        if (it->get<bool>()) shape.extra = any();
      } else {
        shape.extra = rule_for(*it, Where{&at, "additionalProperties"}, depth + 1);
      }
    }
    return object_of(std::move(shape));
  }

  std::string object_of(Shape shape) {
    for (Shape::Prop& p : shape.props) p.required = shape.required.count(p.name) > 0;
    std::vector<std::string_view> declared;
    for (const Shape::Prop& p : shape.props) declared.push_back(p.name);
    for (std::string_view r : shape.required)
      if (!shape.declared.count(r)) {
        declared.push_back(r);
        shape.props.push_back({r, any(), true});
      }
    const std::vector<Shape::Prop>& props = shape.props;
    const std::string ws = p_ + "ws";
    auto kv = [&](const Shape::Prop& p) {
      return fmt::format("{} {} \":\" {} {} {}", gbnf_quote(text::py_json_string(p.name)), ws, ws, p.value,
                         ws);
    };
    // head(i): properties i.. with none written yet; tail(i): with at least one written.
    const size_t n = props.size();
    std::vector<std::string> head(n + 1), tail(n + 1);
    std::string extra_kv;
    if (!shape.extra.empty())
      extra_kv = fmt::format("{} {} \":\" {} {} {}", extra_key(declared), ws, ws, shape.extra, ws);
    if (extra_kv.empty()) {
      head[n] = "\"\"";
      tail[n] = "\"\"";
    } else {
      std::string t = fresh_name();
      emit(t, fmt::format("\",\" {} {} {} | ", ws, extra_kv, t));
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

  std::string array_rule(const Json& s, const Where& at, size_t depth, std::set<std::string>& used) {
    used.insert({"items", "prefixItems", "minItems", "maxItems"});
    for (const char* kw : {"contains", "minContains", "maxContains", "unevaluatedItems"})
      if (s.contains(kw)) refuse(kw, at), used.insert(kw);
    if (auto it = s.find("uniqueItems"); it != s.end()) {
      used.insert("uniqueItems");
      if (it->is_boolean() && it->get<bool>()) refuse("uniqueItems", at);
    }
    const Container open(containers_);
    std::vector<std::string> prefix;
    if (auto it = s.find("prefixItems"); it != s.end()) {
      if (!it->is_array()) invalid("'prefixItems' must be an array", at);
      for (size_t i = 0; i < it->size(); ++i)
        prefix.push_back(rule_for((*it)[i], Where{&at, "prefixItems", nullptr, i}, depth + 1));
    }
    std::string rest;  // empty: nothing after the prefix
    bool rest_allowed = true;
    if (auto it = s.find("items"); it != s.end()) {
      if (it->is_boolean() && !it->get<bool>()) rest_allowed = false;
      else rest = rule_for(*it, Where{&at, "items"}, depth + 1);
    } else {
      rest = any();
    }
    const uint64_t lo = count(s, "minItems", at, 0, false);
    uint64_t hi = count(s, "maxItems", at, UINT64_MAX, true);
    if (!rest_allowed) hi = std::min<uint64_t>(hi, prefix.size());
    if (hi < lo) invalid("maxItems < minItems (or fewer prefixItems than minItems with items: false)", at);
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

  std::string any_of(const Json& s, const char* kw, const Json& branches, const Where& at, size_t depth) {
    if (!branches.is_array() || branches.empty())
      invalid(fmt::format("'{}' must be a non-empty array", kw), at);
    for (auto& [k, v] : s.items())
      if (k != kw && !kAnnotations.count(k) && k != "type") refuse(k + "' beside '" + kw, at);
    Alternatives alts;
    std::vector<std::string> literals;  // the const and enum branches, merged into one trie
    for (size_t i = 0; i < branches.size(); ++i) {
      const Where here{&at, kw, nullptr, i};
      if (is_literal(branches[i])) add_literals(branches[i], here, literals);
      else alts.add(rule_for(branches[i], here, depth + 1));
      if (alts.size() > kMaxAlternatives)  // refused before the rest is compiled
        invalid(fmt::format("more than {} distinct alternatives", kMaxAlternatives), at);
    }
    if (!literals.empty()) alts.add(literals_rule(std::move(literals)));
    return one_of(alts, at);
  }

  std::string all_of(const Json& s, const Json& parts, const Where& at, size_t depth) {
    if (!parts.is_array() || parts.empty()) invalid("'allOf' must be a non-empty array", at);
    for (auto& [k, v] : s.items())
      if (k != "allOf" && !kAnnotations.count(k)) refuse(k + "' beside 'allOf", at);
    if (parts.size() == 1) return rule_for(parts[0], Where{&at, "allOf", nullptr, 0}, depth + 1);
    // Objects merge: properties and required are unions; anything else cannot be honoured.
    Shape shape;
    const Container open(containers_);
    for (size_t i = 0; i < parts.size(); ++i) {
      const Json& p = parts[i];
      const Where part{&at, "allOf", nullptr, i};
      if (!p.is_object()) unsupported("allOf", part);
      for (auto& [k, v] : p.items()) {
        if (kAnnotations.count(k)) continue;
        if (k == "type" && v == "object") continue;
        if (k == "properties" && v.is_object()) {
          for (auto& [name, ps] : v.items()) {
            if (!shape.declared.insert(name).second) unsupported("allOf (a property in two parts)", part);
            shape.props.push_back({name, rule_for(ps, Where{&part, "properties", &name}, depth + 2)});
          }
        } else if (k == "required" && v.is_array()) {
          add_required(v, part, shape);
        } else if (k == "additionalProperties" && v == false) {
          // Across allOf, additionalProperties:false forbids the other parts' properties;
          // emitting only declared keys is what we do anyway, so only honour it per part.
          unsupported("allOf with additionalProperties", part);
        } else {
          unsupported("allOf", part);
        }
      }
    }
    return object_of(std::move(shape));
  }

  // ---- $ref: a JSON pointer into the root schema ----
  std::string ref(const Json& r, const Where& at, size_t depth) {
    if (!r.is_string()) invalid("'$ref' must be a string", at);
    const std::string& target = r.get_ref<const std::string&>();
    if (target.empty() || target[0] != '#')
      invalid(fmt::format("only local references are supported ('{}')", shown(target)), at);
    const Json& node = resolve(target, at);
    const Where there{nullptr, std::string_view(target).substr(1), nullptr, kNoIndex, true};
    return rule_for(node, there, depth + 1);
  }

  const Json& resolve(const std::string& target, const Where& at) {
    const Json* node = &root_;
    const std::string_view ptr = std::string_view(target).substr(1);
    std::string key;
    size_t pos = 0;
    while (pos < ptr.size()) {
      tick();
      if (ptr[pos] != '/') invalid(fmt::format("'$ref' {} is not a JSON pointer", shown(target)), at);
      size_t end = ptr.find('/', pos + 1);
      if (end == std::string_view::npos) end = ptr.size();
      key.clear();
      for (size_t i = pos + 1; i < end; ++i) {
        if (ptr[i] == '~' && i + 1 < end && (ptr[i + 1] == '0' || ptr[i + 1] == '1')) {
          key += ptr[i + 1] == '0' ? '~' : '/';
          ++i;
        } else {
          key += ptr[i];
        }
      }
      node = node->is_object() ? member(*node, key) : node->is_array() ? element(*node, key) : nullptr;
      if (!node) invalid(fmt::format("'$ref' {} points at nothing", shown(target)), at);
      pos = end;
    }
    return *node;
  }

  // The array element a pointer token names, or null; any number of digits, without overflow.
  static const Json* element(const Json& array, std::string_view token) {
    if (token.empty()) return nullptr;
    size_t i = 0;
    for (char c : token) {
      if (c < '0' || c > '9') return nullptr;
      i = i * 10 + static_cast<size_t>(c - '0');
      if (i >= array.size()) return nullptr;  // (so i*10 never overflows)
    }
    return &array[i];
  }

  // An object's member: ordered_json looks keys up by a linear scan, so a $ref into a large
  // object ($defs of 20,000 schemas) goes through an index built on first use.
  const Json* member(const Json& object, const std::string& key) {
    if (object.size() <= kIndexedObject) {
      auto it = object.find(key);
      return it == object.end() ? nullptr : &*it;
    }
    auto [ix, fresh] = indexes_.try_emplace(&object);
    if (fresh)
      for (auto it = object.begin(); it != object.end(); ++it) {
        tick();
        ix->second.try_emplace(std::string_view(it.key()), &*it);
      }
    auto hit = ix->second.find(std::string_view(key));
    return hit == ix->second.end() ? nullptr : hit->second;
  }

  struct Memo {
    std::string expr;       // when done
    std::string name;       // a rule name, given when a $ref came back while in progress
    size_t containers = 0;  // containers_ when its compile began
    bool done = false;
  };

  const Json& root_;
  SchemaOptions o_;
  std::string p_;
  std::string out_;
  size_t n_rules_ = 0;
  size_t containers_ = 0;
  size_t literal_bytes_ = 0;
  bool need_any_ = false;
  std::unordered_map<const Json*, Memo> memo_;
  std::unordered_map<const Json*, std::unordered_map<std::string_view, const Json*>> indexes_;
  std::map<std::string, std::string> formats_;
};

}  // namespace

std::string json_schema_to_gbnf(const Json& schema, const SchemaOptions& opt) {
  try {
    return Compiler(schema, opt).run();
  } catch (const Error&) { throw; } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {
    // Only the schema reaches here, so any other std:: exception (nlohmann's type or range
    // errors, std::out_of_range) is the schema's fault to report, never the server's.
    fail("json_schema: the schema could not be compiled: {}", shown(e.what()));
  }
}

std::string json_any_gbnf(bool object_only, std::string_view prefix) {
  const std::string p(prefix);
  return fmt::format("{}root ::= {}\n", p, object_only ? p + "anyobj-0" : p + "any-0") + base_rules(p) +
         any_rules(p);
}

}  // namespace k3::grammar
