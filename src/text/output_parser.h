// text/output_parser: incremental parser of Kimi-K3 model output (XTML) into OpenAI fields.
// Contract:
//  - Two layers: a marker lexer that turns input into Text / Open(tag) / Close(tag) / End
//    events, and the channel state machine with the malformed-output rules R1–R18 of the
//    golden parser data (docs/CHAT-FORMAT.md, "Output parser").
//  - Input either as tokens (feed_token: markers recognised by token kind only, so text that
//    spells "<|close|>" stays text — the exact mode) or as detokenized text (feed: the four
//    marker strings are recognised in the text and a possible partial marker at a chunk end is
//    held back until the next chunk decides it).
//  - Dispatch is on whole tags: a channel switches only once its header is complete
//    (`<|open|>response<|sep|>`), never on a lone <|close|> or <|sep|>; partial headers are
//    held, never shown.
//  - Every feed returns a delta; the final result is exactly the concatenation of all deltas,
//    and it is the same however the output was split into chunks. reasoning/content deltas are
//    valid UTF-8 (incomplete code points are held back). A tool call is emitted whole, once it
//    is finished, so a call cut off by max_tokens never has to be retracted (R15).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "text/json_py.h"
#include "text/output_parser_utf8.h"

namespace k3::text {

// What one generated token is, as far as the parser cares. The engine classifies ids with the
// vocabulary: the three XTML markers, the end-of-generation set (<|end_of_msg|>, [EOS], [EOT]),
// any other control token (renders as nothing), or ordinary text.
enum class TokenKind { Text, Open, Close, Sep, Eog, OtherControl };

// Why a generation ended: the one list every generating command and the server use.
enum class StopReason {
  Eog,         // an end-of-generation token (also <|end_of_msg|> in feed()); ends an open
               // header as an elided <|sep|> (R2)
  Length,      // max_tokens: an open header is discarded (R3)
  StopString,  // a user stop string matched: like Length for an open header and an unfinished
               // call, but finish "stop"/"tool_calls"
  Context,     // the sequence is full: like Length
  Interrupted  // the caller stopped it (Ctrl-C): like Length
};

// "eog", "length", "stop", "context" or "interrupted", as the CLI reports it.
const char* stop_name(StopReason r);
// Whether the answer was cut short (Length, Context, Interrupted): an open header is
// discarded and the finish_reason is "length".
inline bool is_cut(StopReason r) {
  return r == StopReason::Length || r == StopReason::Context || r == StopReason::Interrupted;
}

struct ParserOptions {
  bool thinking = true;  // the prompt ended in <|open|>think<|sep|> (else response)
  Json tools;            // the request's OpenAI tools array (null: none declared)
  std::string tool_choice = "auto";
  std::string call_id_prefix = "call_";  // ids are prefix + index
};

struct ToolCall {
  int index = 0;  // position among the kept calls
  std::string id;
  std::string name;
  std::string arguments;  // compact JSON (R13), or a verbatim invalid JSON block (R12)
  bool operator==(const ToolCall&) const = default;
};

struct ParseDelta {
  std::string reasoning_content;
  std::string content;
  std::vector<ToolCall> tool_calls;
  bool empty() const { return reasoning_content.empty() && content.empty() && tool_calls.empty(); }
};

struct ParseResult {
  std::string reasoning_content;
  std::string content;
  std::vector<ToolCall> tool_calls;
  std::string finish_reason;  // "stop" | "tool_calls" | "length"; empty until finish()
};

class OutputParser {
 public:
  explicit OutputParser(ParserOptions opt = {});

  // Detokenized text with the markers written out.
  ParseDelta feed(std::string_view text);
  // One token (piece = its bytes; ignored for markers).
  ParseDelta feed_token(TokenKind kind, std::string_view piece = {});
  // Ends the stream: flushes held text and decides finish_reason (R17).
  ParseDelta finish(StopReason stop);

  const ParseResult& result() const { return result_; }
  // True once the model ended its turn (EOG, or after C(message)): further output is ignored.
  bool turn_ended() const { return ended_ || state_ == State::Done; }

  static constexpr size_t kHeaderLimit = 256;  // R4

 private:
  enum class State { Think, Between, Response, Tools, Call, Arg, Json, AfterTools, Done };
  struct Tag {
    bool open = true;
    std::string name;
    std::map<std::string, std::string> attrs;
    std::string raw;  // as generated: marker + header (+ <|sep|>)
  };
  struct CallState {
    std::optional<std::string> name;
    std::vector<std::pair<std::string, text::Json>> args;
    std::optional<std::string> raw;  // JSON block body that is not an object
  };
  struct ArgState {
    std::optional<std::string> key, type;
    std::string buf;
  };

  // Layer 0: marker scanning for text input.
  void scan(std::string_view text, bool final);
  // Layer 1: lexer.
  void lex_text(std::string_view bytes);
  void lex_marker(TokenKind kind);
  void emit_header(bool had_sep);
  // Layer 2: channel machine.
  void on_text(std::string_view bytes);
  void on_tag(const Tag& tag);
  bool close_outside_call(std::string_view n);
  void on_end(StopReason stop);
  void resolve_between();
  void emit_reasoning(std::string_view b);
  void emit_content(std::string_view b);
  void start_call(const Tag& tag);
  void start_arg(const Tag& tag);
  void finish_arg();
  void finish_json();
  void finish_call();

  ParserOptions opt_;
  std::set<std::string> declared_;
  std::map<std::string, std::map<std::string, bool>> string_typed_;  // tool -> key -> schema says string
  bool allow_calls_ = false;

  std::string scan_buf_;
  bool in_header_ = false;
  bool header_open_ = false;
  std::string hbuf_;
  bool ended_ = false;
  bool finished_ = false;
  bool eog_seen_ = false;

  State state_ = State::Think;
  std::string pending_;  // Between: held text
  std::optional<CallState> call_;
  std::optional<ArgState> arg_;
  std::optional<std::string> jbuf_;
  Utf8Stream reasoning_utf8_, content_utf8_;

  ParseDelta* delta_ = nullptr;
  ParseResult result_;
};

// Convenience: parse a whole output text (markers written out) in one go.
ParseResult parse_output(std::string_view text, const ParserOptions& opt, StopReason stop);

}  // namespace k3::text
