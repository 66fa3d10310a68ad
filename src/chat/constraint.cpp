// chat/constraint: see constraint.h.
#include "chat/constraint.h"

#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "grammar/chat_grammar.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/work_budget.h"
#include "chat/api_error.h"
#include "chat/grammar_ledger.h"
#include "text/tokenizer.h"

namespace k3::chat {

using text::Json;

namespace {

const Json kNull;

const Json& field(const Json& o, const char* name) {
  if (!o.is_object()) return kNull;
  auto it = o.find(name);
  return it == o.end() ? kNull : *it;
}

std::string compile_schema(const Json& schema, bool strict, const std::string& param,
                           const ConstraintOptions& opt) {
  if (!schema.is_object() && !schema.is_boolean())
    bad_request(param, "'{}' must be a JSON schema (an object)", param);
  try {
    grammar::SchemaOptions o;
    o.strict = strict;
    o.budget = opt.budget;
    return grammar::json_schema_to_gbnf(schema, o);
  } catch (const grammar::Cancelled&) {
    throw;  // nobody's answer (the client is gone, or the server drains): the caller drops it
  } catch (const k3::Error& e) {  // the deadline included: the client's schema is too costly
    std::string_view what = e.what();
    if (what.starts_with("json_schema: ")) what.remove_prefix(13);
    bad_request(param, "{}: {}", param, what);
  }
}

struct Content {
  std::string gbnf;  // start rule `root`
  std::string param;
};

// The content constraint, from whichever one field sent it.
std::optional<Content> content_constraint(const Json& req, const ConstraintOptions& opt) {
  const Json& grammar = field(req, "grammar");
  const Json& schema = field(req, "json_schema");
  const Json& rf = field(req, "response_format");
  std::optional<Content> out;
  auto set = [&](Content c) {
    if (out)
      bad_request(c.param, "'{}' and '{}' both constrain the output: send only one", out->param, c.param);
    out = std::move(c);
  };
  if (!rf.is_null()) {
    if (!rf.is_object()) bad_request("response_format", "'response_format' must be an object");
    const Json& type = field(rf, "type");
    if (!type.is_string()) bad_request("response_format", "'response_format.type' must be a string");
    const std::string& t = type.get_ref<const std::string&>();
    if (t == "json_object") {
      const Json& s = field(rf, "schema");  // llama-server's extension
      set({s.is_null() ? grammar::json_any_gbnf(true)
                       : compile_schema(s, true, "response_format.schema", opt),
           "response_format"});
    } else if (t == "json_schema") {
      const Json& js = field(rf, "json_schema");
      if (!js.is_object()) bad_request("response_format", "'response_format.json_schema' must be an object");
      const Json& s = field(js, "schema");
      if (s.is_null()) bad_request("response_format", "'response_format.json_schema.schema' is required");
      const Json& strict = field(js, "strict");
      if (!strict.is_null() && !strict.is_boolean())
        bad_request("response_format", "'response_format.json_schema.strict' must be a boolean");
      set({compile_schema(s, strict.is_boolean() && strict.get<bool>(), "response_format.json_schema.schema",
                          opt),
           "response_format"});
    } else if (t != "text") {
      bad_request("response_format",
                  "'response_format.type' must be text, json_object or json_schema (got '{}')", t);
    }
  }
  if (!schema.is_null()) set({compile_schema(schema, true, "json_schema", opt), "json_schema"});
  if (!grammar.is_null()) {
    if (!grammar.is_string() || grammar.get_ref<const std::string&>().empty())
      bad_request("grammar", "'grammar' must be a non-empty GBNF string");
    set({grammar.get<std::string>(), "grammar"});
  }
  return out;
}

std::shared_ptr<const grammar::Grammar> compile(const std::vector<grammar::GbnfSource>& sources,
                                                const std::string& param, const text::Tokenizer& tok,
                                                const ConstraintOptions& opt) {
  grammar::Grammar g;
  try {
    grammar::GbnfLimits lim;
    lim.budget = opt.budget;
    g = grammar::parse_gbnf(sources, "root", lim);
  } catch (const grammar::Cancelled&) { throw; } catch (const k3::Error& e) {
    bad_request(param, "{}", e.what());
  }
  for (const std::string& name : g.token_names) {
    const int32_t id = tok.find(name);
    if (id < 0 || !(tok.is_control(id) || tok.is_eog(id)))
      bad_request(param, "grammar: the vocabulary has no special token {}", name);
  }
  std::shared_ptr<const grammar::Grammar> held =
      opt.ledger ? opt.ledger->hold(std::move(g)) : std::make_shared<const grammar::Grammar>(std::move(g));
  // A grammar too ambiguous to start is the client's mistake: a 400 now, not a failure
  // after the request took a slot.
  try {
    grammar::MatcherLimits lim;
    if (opt.matcher_bytes) lim.max_bytes = opt.matcher_bytes;
    grammar::GrammarMatcher::check_start(held, lim);
  } catch (const k3::Error& e) { bad_request(param, "{}", e.what()); }
  return held;
}

}  // namespace

std::shared_ptr<const grammar::Grammar> completion_constraint(const Json& req, const text::Tokenizer& tok,
                                                              const ConstraintOptions& opt) {
  std::optional<Content> c = content_constraint(req, opt);
  if (!c) return nullptr;
  return compile({{c->gbnf, "", c->param}}, c->param, tok, opt);
}

std::shared_ptr<const grammar::Grammar> chat_constraint(const Json& req, bool thinking,
                                                        const text::Tokenizer& tok,
                                                        const ConstraintOptions& opt) {
  using Calls = grammar::ChatConstraint::Calls;
  std::optional<Content> content = content_constraint(req, opt);
  const Json& tools = field(req, "tools");
  const Json& tc = field(req, "tool_choice");
  const bool have_tools = tools.is_array() && !tools.empty();

  grammar::ChatConstraint cc;
  cc.thinking = thinking;
  cc.calls = have_tools ? Calls::Optional : Calls::None;
  std::string named;
  if (tc.is_string()) {
    const std::string& s = tc.get_ref<const std::string&>();
    if (s == "none") cc.calls = Calls::None;
    if (s == "required") {
      if (!have_tools)
        bad_request("tool_choice", "tool_choice 'required' needs at least one tool in 'tools'");
      cc.calls = Calls::Required;
    }
  } else if (tc.is_object()) {
    const Json& name = field(field(tc, "function"), "name");
    if (!name.is_string())
      bad_request("tool_choice",
                  "'tool_choice' must be {{\"type\":\"function\",\"function\":{{\"name\":…}}}}");
    named = name.get<std::string>();
    cc.calls = Calls::Required;
  }

  std::vector<std::string> texts;                          // sources' texts (kept alive for the parse)
  std::vector<std::pair<std::string, std::string>> parts;  // prefix, what
  bool any_strict = false;
  if (cc.calls != Calls::None) {
    bool found = named.empty();
    for (size_t i = 0; i < tools.size(); ++i) {
      const Json& fn = field(tools[i], "function");
      const std::string name = field(fn, "name").get<std::string>();
      if (!named.empty() && name != named) continue;
      found = true;
      const bool strict = field(fn, "strict").is_boolean() && field(fn, "strict").get<bool>();
      any_strict = any_strict || strict;
      const std::string param = fmt::format("tools[{}].function.parameters", i);
      const Json& params = field(fn, "parameters");
      std::string rules;
      if (strict && !params.is_null()) rules = compile_schema(params, true, param, opt);
      else rules = grammar::json_any_gbnf(true);
      const std::string prefix = fmt::format("t{}-", i);
      texts.push_back(std::move(rules));
      parts.emplace_back(prefix, param);
      cc.tools.push_back({name, prefix + "root"});
    }
    if (!found) bad_request("tool_choice", "tool_choice names '{}', which is not in 'tools'", named);
  }
  if (content) {
    texts.push_back(content->gbnf);
    parts.emplace_back("c-", content->param);
    cc.content_root = "c-root";
  }
  const bool constrained =
      content || (cc.calls != Calls::None && (any_strict || cc.calls == Calls::Required));
  if (!constrained) return nullptr;
  const std::string chat = grammar::chat_output_gbnf(cc);
  std::vector<grammar::GbnfSource> sources{{chat, "", "the chat format"}};
  for (size_t i = 0; i < texts.size(); ++i) sources.push_back({texts[i], parts[i].first, parts[i].second});
  return compile(sources, content ? content->param : "tools", tok, opt);
}

}  // namespace k3::chat
