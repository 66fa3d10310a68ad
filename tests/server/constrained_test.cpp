// Constrained decoding through the server, on the golden small model (random weights): the
// output obeys the grammar or schema in chat and completion requests, streaming or not; the
// reasoning stays free; forced calls happen; and every constraint we cannot honour is a 400
// naming the field, never a silent fallback to unconstrained output.
#include <regex>

#include "server/server_test_util.h"

namespace k3::server::test {
namespace {

Json chat(Json extra) {
  Json body = {{"messages", Json::array({Json{{"role", "user"}, {"content", "hi"}}})},
               {"temperature", 1.0},
               {"max_tokens", 3000}};
  for (auto& [k, v] : extra.items()) body[k] = v;
  return body;
}

const Json kPerson = text::parse_json_exact(R"({"type":"object","properties":{
  "name":{"type":"string","maxLength":12},"age":{"type":"integer","minimum":0,"maximum":120},
  "tags":{"type":"array","items":{"enum":["a","b"]},"maxItems":3}},"required":["name","age"],"additionalProperties":false})");

// A hand check of the kPerson schema (the e2e tests use a real validator on the corpus).
bool is_person(const Json& v) {
  if (!v.is_object() || !v.contains("name") || !v.contains("age")) return false;
  for (auto& [k, x] : v.items()) {
    if (k == "name" && !(x.is_string() && x.get<std::string>().size() <= 4 * 12)) return false;
    if (k == "age" && !(x.is_number_integer() && x.get<int64_t>() >= 0 && x.get<int64_t>() <= 120))
      return false;
    if (k == "tags" && !(x.is_array() && x.size() <= 3)) return false;
    if (k != "name" && k != "age" && k != "tags") return false;
  }
  return true;
}

ServerOptions big_context() {
  ServerOptions o = default_options();
  o.sched.n_ctx = 4096;
  return o;
}

TEST(ServerConstrained, JsonSchemaHoldsOnRandomWeightsWithAndWithoutThinking) {
  TestServer s(big_context());
  for (bool thinking : {false, true}) {
    for (int seed = 1; seed <= 4; ++seed) {
      auto [status, body] =
          s.post("/v1/chat/completions",
                 chat({{"response_format",
                        {{"type", "json_schema"},
                         {"json_schema", {{"name", "p"}, {"strict", true}, {"schema", kPerson}}}}},
                       {"seed", seed},
                       {"chat_template_kwargs", {{"thinking", thinking}}},
                       // Random weights rarely close the reasoning themselves: the budget's forced close
                       // must be a way out the grammar allows.
                       {"reasoning_budget_tokens", 40}}));
      ASSERT_EQ(status, 200) << body.dump();
      const Json& c = body["choices"][0];
      ASSERT_EQ(c["finish_reason"], "stop") << body.dump();
      auto v = text::try_parse_json_exact(c["message"]["content"].get<std::string>());
      ASSERT_TRUE(v && is_person(*v)) << c.dump();
      // Random weights do write reasoning when thinking is on: it is not constrained.
      if (thinking) { EXPECT_TRUE(c["message"].contains("reasoning_content")) << c.dump(); }
    }
  }
}

TEST(ServerConstrained, StreamingGivesTheSameAnswer) {
  TestServer s(big_context());
  Json req = chat(
      {{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "p"}, {"schema", kPerson}}}}},
       {"seed", 9},
       {"chat_template_kwargs", {{"thinking", false}}}});
  auto [st1, whole] = s.post("/v1/chat/completions", req);
  ASSERT_EQ(st1, 200);
  req["stream"] = true;
  auto [st2, sse] = s.post_raw("/v1/chat/completions", req);
  ASSERT_EQ(st2, 200);
  std::string content;
  for (const std::string& ev : sse_events(sse)) {
    if (ev == "[DONE]") continue;
    Json e = text::parse_json_exact(ev);
    if (!e["choices"].empty() && e["choices"][0]["delta"].value("content", Json()).is_string())
      content += e["choices"][0]["delta"]["content"].get<std::string>();
  }
  EXPECT_EQ(content, whole["choices"][0]["message"]["content"]);
  auto v = text::try_parse_json_exact(content);
  ASSERT_TRUE(v && is_person(*v)) << content;
}

TEST(ServerConstrained, StrictToolsRequiredAndNamedCalls) {
  TestServer s(big_context());
  Json weather = {
      {"type", "function"},
      {"function",
       {{"name", "get_weather"},
        {"strict", true},
        {"parameters",
         text::parse_json_exact(R"({"type":"object","properties":{"city":{"type":"string","maxLength":8},
        "days":{"type":"integer","minimum":1,"maximum":7}},"required":["city","days"],"additionalProperties":false})")}}}};
  Json other = {{"type", "function"},
                {"function", {{"name", "other \"tool\" & co"}, {"parameters", {{"type", "object"}}}}}};
  for (int seed = 1; seed <= 3; ++seed) {
    auto [status, body] =
        s.post("/v1/chat/completions", chat({{"tools", {weather, other}},
                                             {"tool_choice", "required"},
                                             {"seed", seed},
                                             {"chat_template_kwargs", {{"thinking", false}}}}));
    ASSERT_EQ(status, 200);
    const Json& c = body["choices"][0];
    ASSERT_EQ(c["finish_reason"], "tool_calls") << c.dump();
    for (const Json& call : c["message"]["tool_calls"]) {
      const std::string name = call["function"]["name"];
      Json args = text::parse_json_exact(call["function"]["arguments"].get<std::string>());
      ASSERT_TRUE(args.is_object());
      if (name == "get_weather") {
        ASSERT_TRUE(args["days"].is_number_integer() && args["days"] >= 1 && args["days"] <= 7)
            << args.dump();
        ASSERT_TRUE(args["city"].is_string()) << args.dump();
        ASSERT_EQ(args.size(), 2u);
      } else {
        ASSERT_EQ(name, "other \"tool\" & co");  // the name survives the attribute escaping
      }
    }
  }
  // A named function: only that one is called.
  for (int seed = 1; seed <= 3; ++seed) {
    auto [status, body] = s.post(
        "/v1/chat/completions",
        chat({{"tools", {weather, other}},
              {"seed", seed},
              {"chat_template_kwargs", {{"thinking", false}}},
              {"tool_choice", {{"type", "function"}, {"function", {{"name", "other \"tool\" & co"}}}}}}));
    ASSERT_EQ(status, 200);
    const Json& c = body["choices"][0];
    ASSERT_EQ(c["finish_reason"], "tool_calls") << c.dump();
    for (const Json& call : c["message"]["tool_calls"])
      EXPECT_EQ(call["function"]["name"], "other \"tool\" & co");
  }
}

TEST(ServerConstrained, CompletionGrammarAndJsonSchema) {
  TestServer s(big_context());
  const std::regex digits("^(yes|no) [0-9]{2,3}$");
  for (int seed = 1; seed <= 5; ++seed) {
    auto [status, body] =
        s.post("/v1/completions", Json{{"prompt", "Q:"},
                                       {"seed", seed},
                                       {"temperature", 1.0},
                                       {"max_tokens", 100},
                                       {"grammar", "root ::= (\"yes\" | \"no\") \" \" [0-9]{2,3}"}});
    ASSERT_EQ(status, 200) << body.dump();
    const std::string text = body["choices"][0]["text"];
    EXPECT_TRUE(std::regex_match(text, digits)) << text;
    EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
  }
  auto [status, body] = s.post("/completions", Json{{"prompt", "Q:"},
                                                    {"seed", 2},
                                                    {"temperature", 1.0},
                                                    {"max_tokens", 3000},
                                                    {"json_schema", kPerson}});
  ASSERT_EQ(status, 200) << body.dump();
  auto v = text::try_parse_json_exact(body["choices"][0]["text"].get<std::string>());
  EXPECT_TRUE(v && is_person(*v)) << body.dump();
}

TEST(ServerConstrained, WhatCannotBeHonouredIsA400NamingIt) {
  TestServer s;
  struct Case {
    Json fields;
    std::string param, message;
  } cases[] = {
      {{{"response_format",
         {{"type", "json_schema"},
          {"json_schema",
           {{"name", "x"}, {"strict", true}, {"schema", {{"type", "array"}, {"uniqueItems", true}}}}}}}},
       "response_format.json_schema.schema",
       "uniqueItems"},
      {{{"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "x"}}}}}},
       "response_format",
       "schema' is required"},
      {{{"response_format", {{"type", "yaml"}}}}, "response_format", "text, json_object or json_schema"},
      {{{"grammar", "root ::= \"a\""}, {"json_schema", {{"type", "string"}}}}, "grammar", "send only one"},
      {{{"grammar", "root ::= root \"a\" | \"b\""}}, "grammar", "left-recursive"},
      {{{"grammar", "root ::= <|no-such-token|>"}}, "grammar", "no special token"},
      {{{"grammar", ""}}, "grammar", "non-empty"},
      {{{"json_schema", {{"type", "string"}, {"pattern", "^a$"}}}}, "json_schema", "pattern"},
      {{{"tool_choice", "required"}}, "tool_choice", "needs at least one tool"},
      {{{"tools", {{{"type", "function"}, {"function", {{"name", "f"}}}}}},
        {"tool_choice", {{"type", "function"}, {"function", {{"name", "g"}}}}}},
       "tool_choice",
       "not in 'tools'"},
      {{{"tools",
         {{{"type", "function"},
           {"function",
            {{"name", "f"},
             {"strict", true},
             {"parameters",
              {{"type", "object"}, {"properties", {{"a", {{"not", {{"type", "null"}}}}}}}}}}}}}}},
       "tools[0].function.parameters",
       "'not' at /properties/a"},
  };
  for (const Case& c : cases) {
    auto [status, body] = s.post("/v1/chat/completions", chat(c.fields));
    ASSERT_EQ(status, 400) << c.fields.dump() << " → " << body.dump();
    EXPECT_EQ(body["error"]["param"], c.param) << body.dump();
    EXPECT_NE(body["error"]["message"].get<std::string>().find(c.message), std::string::npos) << body.dump();
  }
  // strict false: the keyword is ignored and the output still constrained to the rest.
  auto [status, body] = s.post("/v1/chat/completions", chat({{"seed", 1},
                                                             {"chat_template_kwargs", {{"thinking", false}}},
                                                             {"response_format",
                                                              {{"type", "json_schema"},
                                                               {"json_schema",
                                                                {{"name", "x"},
                                                                 {"schema",
                                                                  {{"type", "array"},
                                                                   {"items", {{"type", "integer"}}},
                                                                   {"uniqueItems", true},
                                                                   {"maxItems", 3}}}}}}}}));
  ASSERT_EQ(status, 200) << body.dump();
  auto v = text::try_parse_json_exact(body["choices"][0]["message"]["content"].get<std::string>());
  ASSERT_TRUE(v && v->is_array() && v->size() <= 3) << body.dump();
}

TEST(ServerConstrained, UnconstrainedRequestsAreUnchanged) {
  // tools without strict and tool_choice auto: no grammar, so the same seed gives the answer it
  // always gave (the same as with no tools field at all is not implied; compare to itself).
  TestServer s;
  Json req = chat({{"seed", 4}, {"max_tokens", 40}});
  auto [a, x] = s.post("/v1/chat/completions", req);
  auto [b, y] = s.post("/v1/chat/completions", req);
  ASSERT_EQ(a, 200);
  EXPECT_EQ(x["choices"][0]["message"], y["choices"][0]["message"]);
  // The random model's free answer is not JSON-shaped; the constrained one is.
  EXPECT_FALSE(text::try_parse_json_exact(x["choices"][0]["message"].value("content", "")).has_value());
}

}  // namespace
}  // namespace k3::server::test
