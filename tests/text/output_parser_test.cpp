// Output parser against the golden parse results (tests/data/text/parser_cases.json, written
// by an independent reference parser of the format), fed as tokens and as text, whole and
// split at every byte and at random multi-splits: the result must not depend on chunking.
#include <gtest/gtest.h>

#include <random>

#include "text/chat_test_util.h"
#include "text/chat_template_markers.h"
#include "text/output_parser.h"

using namespace k3::text;

namespace {

struct Token {
  TokenKind kind;
  std::string bytes;
};

struct Case {
  std::string name;
  ParserOptions opt;
  std::vector<Token> tokens;
  std::string text;  // output_text without the final end-of-generation token
  StopReason stop;
  bool text_ambiguous;
  ParseResult expected;
};

std::string unhex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16)));
  return out;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = [] {
    Json doc = k3::test::load_text_json("parser_cases.json");
    Json pieces = k3::test::load_text_json("parser_token_pieces.json")["cases"];
    std::vector<Case> out;
    for (const Json& c : doc["cases"]) {
      Case k;
      k.name = c["name"];
      const Json& rq = c["request"];
      k.opt.thinking = rq["thinking"];
      k.opt.tools = rq["tools"];
      k.opt.tool_choice = rq["tool_choice"];
      k.stop = c["stop"] == "eog" ? StopReason::Eog : StopReason::Length;
      k.text_ambiguous = c["text_form_ambiguous"];
      for (const Json& p : pieces[k.name]) {
        std::string v = p[1];
        Token t{TokenKind::Text, {}};
        if (v == xtml::kOpen) t.kind = TokenKind::Open;
        else if (v == xtml::kClose) t.kind = TokenKind::Close;
        else if (v == xtml::kSep) t.kind = TokenKind::Sep;
        else if (v == xtml::kEndOfMsg || v == xtml::kEos || v == xtml::kEot) t.kind = TokenKind::Eog;
        else if (p[0].get<int>() >= 7936) t.kind = TokenKind::OtherControl;
        else t.bytes = unhex(v);
        if (t.kind != TokenKind::Text) t.bytes = v;
        k.tokens.push_back(t);
      }
      // The engine stops on the end-of-generation id and never hands its text to the parser.
      k.text = c["output_text"];
      if (k.stop == StopReason::Eog) k.text.resize(k.text.size() - k.tokens.back().bytes.size());
      const Json& e = c["expected"];
      k.expected.reasoning_content = e["reasoning_content"];
      k.expected.content = e["content"];
      k.expected.finish_reason = e["finish_reason"];
      for (const Json& tc : e["tool_calls"]) {
        ToolCall t;
        t.index = static_cast<int>(k.expected.tool_calls.size());
        t.id = "call_" + std::to_string(t.index);
        t.name = tc["name"];
        t.arguments = tc["arguments"];
        k.expected.tool_calls.push_back(t);
      }
      out.push_back(std::move(k));
    }
    return out;
  }();
  return all;
}

bool has_marker(const std::string& s) {
  for (auto m : {xtml::kOpen, xtml::kClose, xtml::kSep, xtml::kEndOfMsg})
    if (s.find(m) != std::string::npos) return true;
  return false;
}

// Folds deltas and checks, after every step, that nothing shown has to be taken back.
class Checker {
 public:
  explicit Checker(const Case& c) : c_(c) {}
  void add(const ParseDelta& d) {
    r_.reasoning_content += d.reasoning_content;
    r_.content += d.content;
    for (const auto& t : d.tool_calls) r_.tool_calls.push_back(t);
    ok_ = ok_ && utf8_sanitize(d.reasoning_content) == d.reasoning_content &&
          utf8_sanitize(d.content) == d.content;
    ok_ = ok_ && c_.expected.reasoning_content.starts_with(r_.reasoning_content) &&
          c_.expected.content.starts_with(r_.content) &&
          r_.tool_calls.size() <= c_.expected.tool_calls.size();
    if (!has_marker(c_.expected.content)) ok_ = ok_ && !has_marker(r_.content);
    if (!has_marker(c_.expected.reasoning_content)) ok_ = ok_ && !has_marker(r_.reasoning_content);
  }
  // Returns "" on success, else what differs.
  std::string verdict(const OutputParser& p) const {
    const ParseResult& got = p.result();
    if (!ok_) return "a delta was not a valid prefix of the final result";
    if (got.reasoning_content != r_.reasoning_content || got.content != r_.content ||
        got.tool_calls != r_.tool_calls)
      return "result is not the fold of the deltas";
    if (got.reasoning_content != c_.expected.reasoning_content)
      return "reasoning: got [" + got.reasoning_content + "] want [" + c_.expected.reasoning_content + "]";
    if (got.content != c_.expected.content)
      return "content: got [" + got.content + "] want [" + c_.expected.content + "]";
    if (got.finish_reason != c_.expected.finish_reason) return "finish_reason: got " + got.finish_reason;
    if (got.tool_calls.size() != c_.expected.tool_calls.size())
      return "tool call count " + std::to_string(got.tool_calls.size());
    for (size_t i = 0; i < got.tool_calls.size(); ++i)
      if (!(got.tool_calls[i] == c_.expected.tool_calls[i]))
        return "tool call " + std::to_string(i) + ": got " + got.tool_calls[i].name + " " +
               got.tool_calls[i].arguments + " want " + c_.expected.tool_calls[i].name + " " +
               c_.expected.tool_calls[i].arguments;
    return "";
  }

 private:
  const Case& c_;
  ParseResult r_;
  bool ok_ = true;
};

std::string run_tokens(const Case& c, std::mt19937* rng) {
  OutputParser p(c.opt);
  Checker ck(c);
  for (const Token& t : c.tokens) {
    if (t.kind != TokenKind::Text) {
      ck.add(p.feed_token(t.kind));
      continue;
    }
    if (!rng) {
      ck.add(p.feed_token(TokenKind::Text, t.bytes));
      continue;
    }
    // Split a token's bytes further: byte-level pieces must give the same result.
    size_t i = 0;
    while (i < t.bytes.size()) {
      size_t n = 1 + (*rng)() % 3;
      ck.add(p.feed_token(TokenKind::Text, std::string_view(t.bytes).substr(i, n)));
      i += n;
    }
  }
  ck.add(p.finish(c.stop));
  return ck.verdict(p);
}

std::string run_text(const Case& c, const std::vector<size_t>& cuts) {
  OutputParser p(c.opt);
  Checker ck(c);
  size_t prev = 0;
  for (size_t cut : cuts) {
    ck.add(p.feed(std::string_view(c.text).substr(prev, cut - prev)));
    prev = cut;
  }
  ck.add(p.feed(std::string_view(c.text).substr(prev)));
  ck.add(p.finish(c.stop));
  return ck.verdict(p);
}

}  // namespace

TEST(OutputParser, GoldenCasesAsTokens) {
  ASSERT_EQ(cases().size(), 65u);
  int passed = 0;
  for (const Case& c : cases()) {
    std::string v = run_tokens(c, nullptr);
    EXPECT_EQ(v, "") << c.name;
    passed += v.empty();
  }
  std::printf("[output-parser tokens] %d / %zu cases exact\n", passed, cases().size());
}

TEST(OutputParser, GoldenCasesAsTokensSplitBytes) {
  std::mt19937 rng(7);
  for (const Case& c : cases())
    for (int rep = 0; rep < 10; ++rep) EXPECT_EQ(run_tokens(c, &rng), "") << c.name << " rep " << rep;
}

TEST(OutputParser, GoldenCasesAsTextEverySplitPoint) {
  int passed = 0, total = 0, skipped = 0;
  for (const Case& c : cases()) {
    if (c.text_ambiguous) {  // text that spells markers cannot be told from markers (R1)
      ++skipped;
      continue;
    }
    ++total;
    std::string v = run_text(c, {});
    EXPECT_EQ(v, "") << c.name << " (whole)";
    bool ok = v.empty();
    for (size_t cut = 1; cut < c.text.size(); ++cut) {
      std::string s = run_text(c, {cut});
      if (!s.empty()) {
        ADD_FAILURE() << c.name << " split at " << cut << ": " << s;
        ok = false;
        break;
      }
    }
    passed += ok;
  }
  std::printf("[output-parser text] %d / %d cases exact at every split point (%d token-only)\n", passed,
              total, skipped);
  EXPECT_EQ(skipped, 2);
}

TEST(OutputParser, GoldenCasesAsTextRandomMultiSplits) {
  std::mt19937 rng(12345);
  for (const Case& c : cases()) {
    if (c.text_ambiguous) continue;
    for (int rep = 0; rep < 40; ++rep) {
      std::vector<size_t> cuts;
      size_t pos = 0;
      int max_chunk = rep < 10 ? 2 : rep < 25 ? 9 : 40;
      while (true) {
        pos += 1 + rng() % static_cast<unsigned>(max_chunk);
        if (pos >= c.text.size()) break;
        cuts.push_back(pos);
      }
      std::string v = run_text(c, cuts);
      if (!v.empty()) {
        ADD_FAILURE() << c.name << " rep " << rep << ": " << v;
        break;
      }
    }
  }
}

TEST(OutputParser, PartialMarkerIsHeldThenDecided) {
  ParserOptions o;
  o.thinking = false;
  OutputParser p(o);
  EXPECT_EQ(p.feed("answer<|clo").content, "answer");
  ParseDelta d = p.feed("se|>response<|se");
  EXPECT_EQ(d.content, "");  // the close header is held until its <|sep|>
  p.feed("p|>");
  p.finish(StopReason::Eog);
  EXPECT_EQ(p.result().content, "answer");
  // At the end a held partial marker is literal text (R1).
  OutputParser q(o);
  q.feed("answer<|clo");
  q.finish(StopReason::Length);
  EXPECT_EQ(q.result().content, "answer<|clo");
  EXPECT_EQ(q.result().finish_reason, "length");
}

TEST(OutputParser, LoneCloseOrSepNeverSwitchesChannel) {
  OutputParser p;  // primed in think
  ParseDelta d = p.feed("step 1<|close|>");
  EXPECT_EQ(d.reasoning_content, "step 1");
  EXPECT_EQ(d.content, "");
  d = p.feed("think");
  EXPECT_TRUE(d.empty());
  d = p.feed("<|sep|>\n<|open|>response<|sep|>Hi");
  EXPECT_EQ(d.content, "Hi");
  EXPECT_EQ(p.result().reasoning_content, "step 1");
  // A stray <|sep|> in the response is dropped (R5).
  d = p.feed(" a<|sep|>b");
  EXPECT_EQ(d.content, " ab");
}

TEST(OutputParser, SplitCodePointIsHeldBack) {
  ParserOptions o;
  o.thinking = false;
  OutputParser p(o);
  std::string e = "\xC3\xA9";  // é
  EXPECT_EQ(p.feed_token(TokenKind::Text, e.substr(0, 1)).content, "");
  EXPECT_EQ(p.feed_token(TokenKind::Text, e.substr(1)).content, e);
  p.feed_token(TokenKind::Text, "\xE4\xB8");  // truncated 3-byte sequence at the limit
  ParseDelta d = p.finish(StopReason::Length);
  EXPECT_EQ(d.content, "\xEF\xBF\xBD");
}

TEST(OutputParser, ToolCallsRespectDeclarationsAndChoice) {
  std::string out =
      "<|close|>think<|sep|><|open|>tools<|sep|><|open|>call tool=\"f\"<|sep|><|open|>argument "
      "key=\"n\"<|sep|>3<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>";
  ParserOptions o;
  o.tools = parse_json_exact(
      R"([{"type":"function","function":{"name":"f","parameters":{"properties":{"n":{"type":"string"}}}}}])");
  ParseResult r = parse_output(out, o, StopReason::Eog);
  ASSERT_EQ(r.tool_calls.size(), 1u);
  EXPECT_EQ(r.tool_calls[0].arguments, R"({"n":"3"})");  // no type attribute: schema says string
  EXPECT_EQ(r.finish_reason, "tool_calls");
  o.tool_choice = "none";
  r = parse_output(out, o, StopReason::Eog);
  EXPECT_TRUE(r.tool_calls.empty());
  EXPECT_EQ(r.content, "");
  EXPECT_EQ(r.finish_reason, "stop");
}

// Regression: a generated tool call whose arguments are JSON nested 10^6 deep (as an
// argument value and as a JSON block) is kept as raw text, not parsed into a document that
// would overflow the stack when printed or destroyed.
TEST(OutputParser, DeepJsonInAGeneratedCallIsRawText) {
  const std::string deep = std::string(1'000'000, '[') + std::string(1'000'000, ']');
  for (const std::string& body :
       {"<|open|>argument key=\"x\" type=\"array\"<|sep|>" + deep + "<|close|>argument<|sep|>",
        "<|open|>json type=\"object\"<|sep|>" + deep + "<|close|>json<|sep|>"}) {
    ParserOptions o;
    o.tools = Json::array(
        {Json{{"type", "function"}, {"function", Json{{"name", "f"}, {"parameters", Json::object()}}}}});
    OutputParser p(o);
    p.feed(
        "<|close|>think<|sep|><|open|>response<|sep|><|close|>response<|sep|><|open|>tools<|sep|>"
        "<|open|>call tool=\"f\" index=\"1\"<|sep|>" +
        body + "<|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>");
    p.finish(StopReason::Eog);
    const ParseResult& r = p.result();
    ASSERT_EQ(r.tool_calls.size(), 1u);
    EXPECT_EQ(r.tool_calls[0].name, "f");
    EXPECT_NE(r.tool_calls[0].arguments.find(std::string(1000, '[')), std::string::npos);
  }
}
