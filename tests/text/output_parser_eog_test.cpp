// Output parser: end-of-generation inside a tag header (R2) and the other stops there (R3).
//
// For every tag of a set of complete, well-formed assistant outputs (every kind of tag: open
// and close of message, think, response, tools, call, argument, json, and unknown names), the
// output is cut at every byte of that tag's header — right after the <|open|>/<|close|>
// marker, inside the name, inside an attribute, inside a multi-byte code point, just before
// the <|sep|> — and generation ends there. The parser must then give what it gives for the
// same output with the <|sep|> written at the cut (R2: end-of-generation is an elided
// <|sep|>), in every input mode:
//   - feed_token, the text fed one byte per token, then the EOG token, then finish(Eog);
//   - feed_token, the text runs whole, no EOG token, finish(Eog) (how the server stops);
//   - feed_token with the synthetic K3 vocabulary's real tokens, cut at every token
//     boundary inside the header, with and without the EOG token;
//   - feed(text), whole and in chunks of 1, 2, 3, 5, 7, 13 bytes and random sizes, with the
//     <|end_of_msg|> written out or left to finish(Eog).
// Each streamed run is also checked for the streaming guarantees (the result is the fold of
// the deltas, deltas are valid UTF-8, nothing shown is taken back).
//
// The expected result is built independently of the EOG path: the output with "<|sep|>"
// inserted, fed as marker tokens and ended by the EOG token. A tag the rules keep literally
// (R8, R10) is kept "exactly as generated", so with an elided sep its literal text has no
// <|sep|>; such a tag is recognised by its result being the same as writing its bytes as
// plain text (a text token that spells a marker is text, R1), and its expectation is then the
// same construction without the sep.
//
// On the token limit (R3) and on a stop string the open header is discarded instead: the
// result is that of the output cut before the tag's marker, with finish_reason length
// (token limit) or stop/tool_calls (stop string).
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <set>

#include "text/chat_test_util.h"
#include "text/chat_template_markers.h"
#include "text/output_parser.h"
#include "text/tokenizer.h"

using namespace k3::text;

namespace {

struct Piece {
  TokenKind kind;
  std::string bytes;  // Text: the bytes; markers: their text
};

// Splits an output into marker pieces and text runs (the outputs here spell no marker in text).
std::vector<Piece> lex(std::string_view s) {
  static const std::pair<std::string_view, TokenKind> kMarkers[] = {{xtml::kOpen, TokenKind::Open},
                                                                    {xtml::kClose, TokenKind::Close},
                                                                    {xtml::kSep, TokenKind::Sep},
                                                                    {xtml::kEndOfMsg, TokenKind::Eog}};
  std::vector<Piece> out;
  std::string run;
  for (size_t i = 0; i < s.size();) {
    bool hit = false;
    for (const auto& [m, kind] : kMarkers) {
      if (s.substr(i, m.size()) == m) {
        if (!run.empty()) out.push_back({TokenKind::Text, std::move(run)});
        run.clear();
        out.push_back({kind, std::string(m)});
        i += m.size();
        hit = true;
        break;
      }
    }
    if (!hit) run.push_back(s[i++]);
  }
  if (!run.empty()) out.push_back({TokenKind::Text, std::move(run)});
  return out;
}

bool same(const ParseResult& a, const ParseResult& b) {
  return a.reasoning_content == b.reasoning_content && a.content == b.content &&
         a.tool_calls == b.tool_calls && a.finish_reason == b.finish_reason;
}

std::string show(const ParseResult& r) {
  std::string s = "reasoning [" + r.reasoning_content + "] content [" + r.content + "] calls [";
  for (const auto& c : r.tool_calls) s += c.name + " " + c.arguments + "; ";
  return s + "] finish " + r.finish_reason;
}

// Drives one parser, folding its deltas and checking the streaming guarantees against the
// expected final result.
class Stream {
 public:
  Stream(const ParserOptions& o, const ParseResult& want) : p_(o), want_(want) {}
  void add(const ParseDelta& d) {
    fold_.reasoning_content += d.reasoning_content;
    fold_.content += d.content;
    for (const auto& t : d.tool_calls) fold_.tool_calls.push_back(t);
    if (utf8_sanitize(d.reasoning_content) != d.reasoning_content || utf8_sanitize(d.content) != d.content)
      bad_ = "a delta is not valid UTF-8";
    if (bad_.empty() &&
        (!want_.reasoning_content.starts_with(fold_.reasoning_content) ||
         !want_.content.starts_with(fold_.content) || fold_.tool_calls.size() > want_.tool_calls.size()))
      bad_ = "a delta is not a prefix of the final result: " + show(fold_);
  }
  void text(std::string_view s) { add(p_.feed(s)); }
  void token(TokenKind k, std::string_view b = {}) { add(p_.feed_token(k, b)); }
  // "" when the run gave the expected result and kept the guarantees.
  std::string finish(StopReason stop) {
    add(p_.finish(stop));
    const ParseResult& r = p_.result();
    if (!bad_.empty()) return bad_;
    if (r.reasoning_content != fold_.reasoning_content || r.content != fold_.content ||
        r.tool_calls != fold_.tool_calls)
      return "the result is not the fold of the deltas";
    if (!same(r, want_)) return "got " + show(r) + "\n want " + show(want_);
    return "";
  }

 private:
  OutputParser p_;
  ParseResult want_;
  ParseResult fold_;
  std::string bad_;
};

// The reference construction: marker tokens, each text run one token, then the stop.
ParseResult reference(const ParserOptions& o, const std::vector<Piece>& pieces, StopReason stop) {
  OutputParser p(o);
  for (const Piece& x : pieces) p.feed_token(x.kind, x.kind == TokenKind::Text ? x.bytes : std::string());
  if (stop == StopReason::Eog) p.feed_token(TokenKind::Eog);
  p.finish(stop);
  return p.result();
}

std::vector<Piece> plus_text(std::vector<Piece> v, std::string t) {
  v.push_back({TokenKind::Text, std::move(t)});
  return v;
}

const Json& tools() {
  static const Json t = parse_json_exact(R"([
    {"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":
      {"city":{"type":"string"},"days":{"type":"integer"},"grüße_名":{"type":"string"}}}}},
    {"type":"function","function":{"name":"search","parameters":{"type":"object","properties":
      {"query":{"type":"string"}}}}},
    {"type":"function","function":{"name":"run","parameters":{"type":"object","properties":
      {"code":{"type":"string"},"env":{"type":"object"}}}}},
    {"type":"function","function":{"name":"a&b\"c","parameters":{"type":"object","properties":{}}}}])");
  return t;
}

struct Output {
  std::string name;
  ParserOptions opt;
  std::string text;
};

ParserOptions opts(bool thinking, bool with_tools = true, std::string choice = "auto") {
  ParserOptions o;
  o.thinking = thinking;
  if (with_tools) o.tools = tools();
  o.tool_choice = std::move(choice);
  return o;
}

const std::vector<Output>& outputs() {
  static const std::vector<Output> all = [] {
    const std::string calls =
        "Need weather.<|close|>think<|sep|><|open|>response<|sep|>Checking.<|close|>response<|sep|>"
        "<|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|>"
        "<|open|>argument key=\"city\" type=\"string\"<|sep|>Paris<|close|>argument<|sep|>"
        "<|open|>argument key=\"days\" type=\"number\"<|sep|>3<|close|>argument<|sep|><|close|>call<|sep|>"
        "<|open|>call tool=\"search\" index=\"2\"<|sep|><|open|>json type=\"object\"<|sep|>"
        "{\"query\": \"k3\"}<|close|>json<|sep|><|close|>call<|sep|>"
        "<|open|>call tool=\"a&amp;b&quot;c\" index=\"3\"<|sep|><|open|>argument key=\"x&quot;y\"<|sep|>1"
        "<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>";
    std::vector<Output> v;
    v.push_back({"plain", opts(true),
                 "Let me think.<|close|>think<|sep|><|open|>response<|sep|>Hello <world> | done"
                 "<|close|>response<|sep|><|close|>message<|sep|>"});
    v.push_back(
        {"second_think_block", opts(true),
         "r1<|close|>think<|sep|>\n<|open|>think<|sep|>r2<|close|>think<|sep|> <|open|>response<|sep|>"
         "ans<|close|>response<|sep|>\n<|close|>message<|sep|>"});
    v.push_back({"literal_tags", opts(true),
                 "a<|open|>call tool=\"x\"<|sep|>b<|close|>note<|sep|>c<|open|>json type=\"object\"<|sep|>d"
                 "<|open|>message role=\"assistant\"<|sep|>e<|close|>response<|sep|>f<|close|>think<|sep|>"
                 "<|open|>response<|sep|>x<|open|>note level=\"2\"<|sep|>y<|close|>note<|sep|>z"
                 "<|open|>think<|sep|>w<|open|>argument key=\"k\"<|sep|>v<|close|>argument<|sep|>u"
                 "<|open|>response<|sep|>t<|close|>response<|sep|><|close|>message<|sep|>"});
    v.push_back({"calls", opts(true), calls});
    v.push_back({"calls_undeclared", opts(true, false), calls});
    v.push_back({"calls_choice_none", opts(true, true, "none"), calls});
    v.push_back(
        {"thinking_off_unicode_attrs", opts(false),
         "Let me look.<|close|>response<|sep|><|open|>tools<|sep|>"
         "<|open|>call tool=\"get_weather\" index=\"1\"<|sep|>"
         "<|open|>argument key=\"city\" type=\"string\"<|sep|>Zürich<|close|>argument<|sep|>"
         "<|open|>argument key=\"grüße_名\"<|sep|>hi 🌤<|close|>argument<|sep|><|close|>call<|sep|>"
         "<|close|>tools<|sep|><|close|>message<|sep|>"});
    v.push_back(
        {"tags_in_values", opts(true),
         "r<|close|>think<|sep|><|open|>tools<|sep|><|open|>call tool=\"run\" index=\"1\"<|sep|>"
         "<|open|>argument key=\"code\" type=\"string\"<|sep|>a<|open|>response<|sep|>b<|close|>x<|sep|>c"
         "<|close|>argument<|sep|><|open|>json type=\"object\"<|sep|>{\"env\": \"<|open|>t "
         "q=\\\"1\\\"<|sep|>\"}"
         "<|close|>json<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>"});
    v.push_back({"two_tools_sections", opts(true),
                 "r<|close|>think<|sep|><|open|>tools<|sep|><|open|>call tool=\"search\" index=\"1\"<|sep|>"
                 "<|open|>argument "
                 "key=\"query\"<|sep|>a<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|>"
                 "\n<|open|>tools<|sep|><|open|>call tool=\"search\" index=\"2\"<|sep|><|open|>argument "
                 "key=\"query\"<|sep|>b"
                 "<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>"});
    v.push_back({"unicode_tag_in_response", opts(true),
                 "思考<|close|>think<|sep|><|open|>response<|sep|>x<|open|>名前 a=\"é\"<|sep|>y"
                 "<|close|>Ünknown<|sep|>z<|close|>response<|sep|><|close|>message<|sep|>"});
    v.push_back({"after_message", opts(false),
                 "ans<|close|>response<|sep|><|close|>message<|sep|>junk<|open|>response<|sep|>more"
                 "<|close|>response<|sep|>"});
    return v;
  }();
  return all;
}

std::shared_ptr<const Tokenizer> vocab() {
  static const std::shared_ptr<const Tokenizer> t =
      Tokenizer::from_gguf_path(k3::test::text_data("k3-synth-vocab.gguf"));
  return t;
}

// One tag of an output: where its marker starts, where its header starts and ends (the
// <|sep|> that ends it), and the pieces before the marker.
struct TagSite {
  bool open;
  std::string name;
  size_t marker, header, sep;
};

std::vector<TagSite> tag_sites(const std::string& s) {
  std::vector<TagSite> out;
  for (size_t i = 0; i < s.size(); ++i) {
    for (bool open : {true, false}) {
      std::string_view m = open ? xtml::kOpen : xtml::kClose;
      if (s.compare(i, m.size(), m) != 0) continue;
      size_t h = i + m.size(), sep = s.find(xtml::kSep, h);
      EXPECT_NE(sep, std::string::npos);
      std::string header = s.substr(h, sep - h);
      out.push_back({open, header.substr(0, header.find(' ')), i, h, sep});
    }
  }
  return out;
}

// What end-of-generation at byte `cut` of a header must give: the output up to the cut with
// the elided <|sep|> written out; a tag kept literally keeps only what was generated.
ParseResult expected_at_eog(const ParserOptions& o, const std::string& s, const TagSite& t, size_t cut) {
  std::string head = s.substr(0, cut);
  ParseResult with_sep = reference(o, lex(head + std::string(xtml::kSep)), StopReason::Eog);
  std::vector<Piece> before = lex(s.substr(0, t.marker));
  std::string literal = s.substr(t.marker, cut - t.marker);
  ParseResult as_text = reference(o, plus_text(before, literal + std::string(xtml::kSep)), StopReason::Eog);
  if (same(with_sep, as_text)) return reference(o, plus_text(before, literal), StopReason::Eog);
  return with_sep;
}

// Token boundaries (byte offsets in s) of the vocabulary's tokenization of s's text runs.
std::set<size_t> token_boundaries(const std::string& s, std::vector<Piece>* tokens) {
  std::set<size_t> b;
  size_t pos = 0;
  for (const Piece& p : lex(s)) {
    b.insert(pos);
    if (p.kind != TokenKind::Text) {
      tokens->push_back(p);
      pos += p.bytes.size();
      continue;
    }
    std::vector<TokenId> ids;
    vocab()->encode_ordinary(p.bytes, ids);
    for (TokenId id : ids) {
      tokens->push_back({TokenKind::Text, vocab()->token_bytes(id)});
      pos += vocab()->token_bytes(id).size();
      b.insert(pos);
    }
  }
  EXPECT_EQ(pos, s.size());
  return b;
}

struct Counts {
  int tags = 0, cuts = 0, runs = 0, token_cuts = 0;
};

// All the ways of feeding s[0, cut) and then ending with `stop`; returns the first failure.
std::string run_modes(const ParserOptions& o, const std::string& s, size_t cut, StopReason stop,
                      const ParseResult& want, const std::vector<Piece>& vocab_tokens,
                      const std::set<size_t>& boundaries, std::mt19937& rng, Counts& n) {
  const std::string head = s.substr(0, cut);
  const std::vector<Piece> pieces = lex(head);
  auto fail = [&](const std::string& mode, const std::string& why) {
    return mode + " at byte " + std::to_string(cut) + " [" +
           head.substr(head.size() > 60 ? head.size() - 60 : 0) + "]: " + why;
  };
  const bool eog = stop == StopReason::Eog;
  // Tokens, one byte per text token, with and without the EOG token.
  for (bool eog_token : {true, false}) {
    if (eog_token && !eog) continue;
    Stream st(o, want);
    for (const Piece& p : pieces) {
      if (p.kind != TokenKind::Text) st.token(p.kind);
      else
        for (char c : p.bytes) st.token(TokenKind::Text, std::string_view(&c, 1));
    }
    if (eog_token) st.token(TokenKind::Eog);
    ++n.runs;
    if (auto v = st.finish(stop); !v.empty()) return fail(eog_token ? "bytes+EOG token" : "bytes", v);
  }
  // Tokens, whole text runs (the server never feeds the EOG token).
  {
    Stream st(o, want);
    for (const Piece& p : pieces)
      st.token(p.kind, p.kind == TokenKind::Text ? std::string_view(p.bytes) : "");
    ++n.runs;
    if (auto v = st.finish(stop); !v.empty()) return fail("runs", v);
  }
  // The vocabulary's tokens, when the cut is a token boundary.
  if (boundaries.count(cut)) {
    ++n.token_cuts;
    for (bool eog_token : {true, false}) {
      if (eog_token && !eog) continue;
      Stream st(o, want);
      size_t pos = 0;
      for (const Piece& p : vocab_tokens) {
        if (pos >= cut) break;
        st.token(p.kind, p.kind == TokenKind::Text ? std::string_view(p.bytes) : "");
        pos += p.bytes.size();
      }
      if (eog_token) st.token(TokenKind::Eog);
      ++n.runs;
      if (auto v = st.finish(stop); !v.empty())
        return fail(eog_token ? "vocab tokens+EOG" : "vocab tokens", v);
    }
  }
  // Text, whole and chunked, with <|end_of_msg|> written out or not.
  const std::vector<int> sizes = {0, 1, 2, 3, 5, 7, 13, -1, -1};
  for (size_t k = 0; k < sizes.size(); ++k) {
    for (bool eom_text : {false, true}) {
      if (eom_text && !eog) continue;
      std::string in = head + (eom_text ? std::string(xtml::kEndOfMsg) : std::string());
      Stream st(o, want);
      size_t i = 0;
      while (i < in.size()) {
        size_t len = sizes[k] == 0 ? in.size() : sizes[k] > 0 ? size_t(sizes[k]) : 1 + rng() % 11;
        st.text(std::string_view(in).substr(i, len));
        i += len;
      }
      ++n.runs;
      if (auto v = st.finish(stop); !v.empty())
        return fail("text chunks of " + std::to_string(sizes[k]) + (eom_text ? " + <|end_of_msg|>" : ""), v);
    }
  }
  return "";
}

Counts check_all(StopReason stop) {
  Counts n;
  std::mt19937 rng(4242);
  for (const Output& out : outputs()) {
    const std::string& s = out.text;
    std::vector<Piece> vocab_tokens;
    const std::set<size_t> boundaries = token_boundaries(s, &vocab_tokens);
    for (const TagSite& t : tag_sites(s)) {
      ++n.tags;
      for (size_t cut = t.header; cut <= t.sep; ++cut) {
        ++n.cuts;
        ParseResult want;
        if (stop == StopReason::Eog) {
          want = expected_at_eog(out.opt, s, t, cut);
        } else {
          want = reference(out.opt, lex(s.substr(0, t.marker)), stop);  // R3: header discarded
        }
        std::string v = run_modes(out.opt, s, cut, stop, want, vocab_tokens, boundaries, rng, n);
        if (!v.empty()) {
          ADD_FAILURE() << out.name << ": " << (t.open ? "open " : "close ") << t.name << ": " << v;
          return n;
        }
      }
    }
  }
  return n;
}

}  // namespace

TEST(OutputParserEog, OutputsCoverEveryTagKind) {
  std::set<std::string> seen;
  for (const Output& o : outputs()) {
    // Each output is complete: ending it on EOG or on the token limit gives the same fields.
    ParseResult a = reference(o.opt, lex(o.text), StopReason::Eog),
                b = reference(o.opt, lex(o.text), StopReason::Length);
    b.finish_reason = a.finish_reason;
    EXPECT_TRUE(same(a, b)) << o.name << ": " << show(a) << " / " << show(b);
    for (const TagSite& t : tag_sites(o.text)) {
      bool known = t.name == "message" || t.name == "think" || t.name == "response" || t.name == "tools" ||
                   t.name == "call" || t.name == "argument" || t.name == "json";
      seen.insert(std::string(t.open ? "open " : "close ") + (known ? t.name : "unknown"));
    }
  }
  for (const char* name : {"message", "think", "response", "tools", "call", "argument", "json", "unknown"})
    for (const char* side : {"open ", "close "})
      EXPECT_TRUE(seen.count(std::string(side) + name)) << side << name;
}

TEST(OutputParserEog, EogInsideAnyHeaderIsAnElidedSep) {
  Counts n = check_all(StopReason::Eog);
  std::printf("[parser eog-in-header] %d tags, %d cut points (%d at vocab token boundaries), %d runs\n",
              n.tags, n.cuts, n.token_cuts, n.runs);
  EXPECT_GT(n.cuts, 1000);
}

TEST(OutputParserEog, TokenLimitInsideAnyHeaderDiscardsIt) {
  Counts n = check_all(StopReason::Length);
  std::printf("[parser length-in-header] %d cut points, %d runs\n", n.cuts, n.runs);
  EXPECT_GT(n.cuts, 1000);
}

TEST(OutputParserEog, StopStringInsideAnyHeaderDiscardsIt) {
  Counts n = check_all(StopReason::StopString);
  std::printf("[parser stop-string-in-header] %d cut points, %d runs\n", n.cuts, n.runs);
  EXPECT_GT(n.cuts, 1000);
}

namespace {

ParseResult parse_tokens(const ParserOptions& o, const std::string& s, bool eog_token, StopReason stop) {
  OutputParser p(o);
  for (const Piece& x : lex(s)) p.feed_token(x.kind, x.kind == TokenKind::Text ? x.bytes : std::string());
  if (eog_token) p.feed_token(TokenKind::Eog);
  p.finish(stop);
  return p.result();
}

// Every way the stream can end in EOG: marker tokens with or without the EOG token, and text
// with or without <|end_of_msg|> written out.
std::vector<ParseResult> all_eog_modes(const ParserOptions& o, const std::string& s) {
  return {parse_tokens(o, s, true, StopReason::Eog), parse_tokens(o, s, false, StopReason::Eog),
          parse_output(s, o, StopReason::Eog),
          parse_output(s + std::string(xtml::kEndOfMsg), o, StopReason::Eog)};
}

}  // namespace

TEST(OutputParserEog, CallHeaderCutByEogKeepsTheCall) {
  const std::string s = "<|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"";
  for (bool thinking : {true, false}) {
    for (const ParseResult& r : all_eog_modes(opts(thinking), s)) {
      ASSERT_EQ(r.tool_calls.size(), 1u) << show(r);
      EXPECT_EQ(r.tool_calls[0].name, "get_weather");
      EXPECT_EQ(r.tool_calls[0].id, "call_0");
      EXPECT_EQ(r.tool_calls[0].arguments, "{}");  // no arguments: an empty object (R13)
      EXPECT_EQ(r.finish_reason, "tool_calls");
      EXPECT_EQ(r.content, "");
      EXPECT_EQ(r.reasoning_content, "");
    }
  }
  // The token limit or a stop string at the same point: the header is discarded (R3) and the
  // call never existed.
  ParseResult len = parse_tokens(opts(true), s, false, StopReason::Length);
  EXPECT_TRUE(len.tool_calls.empty());
  EXPECT_EQ(len.finish_reason, "length");
  ParseResult stop = parse_output(s, opts(true), StopReason::StopString);
  EXPECT_TRUE(stop.tool_calls.empty());
  EXPECT_EQ(stop.finish_reason, "stop");
}

TEST(OutputParserEog, CallCutInsideItsArgumentHeader) {
  const std::string call =
      "r<|close|>think<|sep|><|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|>"
      "<|open|>argument key=\"city\" type=\"string\"<|sep|>Paris<|close|>argument<|sep|>";
  struct Want {
    std::string tail, arguments;
  };
  const std::vector<Want> wants = {
      {"<|open|>argument key=\"days\" type=\"number\"",
       R"({"city":"Paris","days":""})"},  // "" is no JSON: kept raw (R11)
      {"<|open|>argument key=\"days\"", R"({"city":"Paris","days":""})"},
      {"<|open|>argument key=\"city\" type=\"string\"", R"({"city":""})"},  // a later duplicate wins
      {"<|close|>argument", R"({"city":"Paris"})"},
      {"<|close|>call", R"({"city":"Paris"})"},
      {"<|close|>", R"({"city":"Paris"})"},
      {"<|open|>", R"({"city":"Paris"})"},  // an empty name: an unexpected tag, dropped in a call
  };
  for (const Want& w : wants) {
    for (const ParseResult& r : all_eog_modes(opts(true), call + w.tail)) {
      ASSERT_EQ(r.tool_calls.size(), 1u) << w.tail << ": " << show(r);
      EXPECT_EQ(r.tool_calls[0].arguments, w.arguments) << w.tail;
      EXPECT_EQ(r.finish_reason, "tool_calls") << w.tail;
    }
    ParseResult len = parse_output(call + w.tail, opts(true), StopReason::Length);
    EXPECT_TRUE(len.tool_calls.empty()) << w.tail;  // R15: the call was never finished
    EXPECT_EQ(len.finish_reason, "length");
  }
}

TEST(OutputParserEog, ChannelHeadersCutByEog) {
  // <|close|>think cut after the marker: an empty tag name is unknown, so in think it is kept
  // literally as generated (R8) — the reasoning shows the lone marker, as it would with the
  // sep written out (minus the sep).
  for (const ParseResult& r : all_eog_modes(opts(true), "abc<|close|>")) {
    EXPECT_EQ(r.reasoning_content, "abc<|close|>");
    EXPECT_EQ(r.finish_reason, "stop");
  }
  // A complete name without its sep switches channels as if the sep had come.
  for (const ParseResult& r : all_eog_modes(opts(true), "abc<|close|>think")) {
    EXPECT_EQ(r.reasoning_content, "abc");
    EXPECT_EQ(r.content, "");
  }
  for (const ParseResult& r : all_eog_modes(opts(true), "abc<|close|>think<|sep|><|open|>response")) {
    EXPECT_EQ(r.reasoning_content, "abc");
    EXPECT_EQ(r.content, "");
  }
  // T(think) in the response is not a channel switch: kept literally, without a sep.
  for (const ParseResult& r : all_eog_modes(opts(false), "ans<|open|>think"))
    EXPECT_EQ(r.content, "ans<|open|>think");
  // The end of the message, with its sep elided right before EOG (golden elided_sep_before_eog),
  // in every mode.
  for (const ParseResult& r : all_eog_modes(opts(false), "ans<|close|>response<|sep|><|close|>message")) {
    EXPECT_EQ(r.content, "ans");
    EXPECT_EQ(r.finish_reason, "stop");
  }
}
