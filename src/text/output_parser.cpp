// text/output_parser: see output_parser.h. The comments name the malformed-output rule
// (R1–R18, docs/CHAT-FORMAT.md, "Output parser") that decides each cell of the state table.
#include "text/output_parser.h"

#include <cmath>
#include <limits>

#include "text/chat_template_markers.h"

namespace k3::text {

namespace {

bool known_tag(std::string_view n) {
  return n == "message" || n == "think" || n == "response" || n == "tools" || n == "call" ||
         n == "argument" || n == "json";
}

bool attr_name_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool attr_name_char(char c) {
  return attr_name_start(c) || (c >= '0' && c <= '9') || c == '.' || c == ':' || c == '-';
}

std::string unescape_attr(std::string_view v) {  // R6: &quot; first, then &amp;
  std::string a;
  for (size_t i = 0; i < v.size();) {
    if (v.compare(i, 6, "&quot;") == 0) {
      a.push_back('"');
      i += 6;
    } else {
      a.push_back(v[i++]);
    }
  }
  std::string b;
  for (size_t i = 0; i < a.size();) {
    if (a.compare(i, 5, "&amp;") == 0) {
      b.push_back('&');
      i += 5;
    } else {
      b.push_back(a[i++]);
    }
  }
  return b;
}

// KEY="VALUE" pairs anywhere after the tag name, scanned left to right (later keys win).
std::map<std::string, std::string> parse_attrs(std::string_view rest) {
  std::map<std::string, std::string> out;
  size_t i = 0;
  while (i < rest.size()) {
    if (!attr_name_start(rest[i])) {
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (j < rest.size() && attr_name_char(rest[j])) ++j;
    if (j + 1 < rest.size() && rest[j] == '=' && rest[j + 1] == '"') {
      size_t close = rest.find('"', j + 2);
      if (close != std::string_view::npos) {
        out[std::string(rest.substr(i, j - i))] = unescape_attr(rest.substr(j + 2, close - j - 2));
        i = close + 1;
        continue;
      }
    }
    ++i;
  }
  return out;
}

// R11 for non-string values: JSON, else the raw text as a string. Python's json.loads also
// takes NaN/Infinity, so those decode to floats.
Json decode_json_value(const std::string& raw) {
  if (auto v = try_parse_json_exact(raw)) return std::move(*v);
  std::string t = py_strip(raw);
  if (t == "NaN") return Json(std::numeric_limits<double>::quiet_NaN());
  if (t == "Infinity") return Json(std::numeric_limits<double>::infinity());
  if (t == "-Infinity") return Json(-std::numeric_limits<double>::infinity());
  return Json(raw);
}

}  // namespace

OutputParser::OutputParser(ParserOptions opt) : opt_(std::move(opt)) {
  state_ = opt_.thinking ? State::Think : State::Response;
  const Json& tools = opt_.tools;
  if (tools.is_array()) {
    for (const Json& t : tools) {
      const Json* fn = &t;
      if (t.is_object() && t.contains("function") && t["function"].is_object()) fn = &t["function"];
      if (!fn->is_object() || !fn->contains("name") || !(*fn)["name"].is_string()) continue;
      std::string name = (*fn)["name"];
      declared_.insert(name);
      auto& keys = string_typed_[name];
      keys.clear();  // the last declaration of a name wins
      const Json& params = fn->contains("parameters") ? (*fn)["parameters"] : Json();
      if (params.is_object() && params.contains("properties") && params["properties"].is_object()) {
        for (auto it = params["properties"].begin(); it != params["properties"].end(); ++it) {
          const Json& v = it.value();
          keys[it.key()] = v.is_object() && v.contains("type") && v["type"] == "string";
        }
      }
    }
  }
  allow_calls_ = tools.is_array() && !tools.empty() && opt_.tool_choice != "none";  // R16
}

// ---------------------------------------------------------------- layer 0: marker scanning

void OutputParser::scan(std::string_view text, bool final) {
  static constexpr std::pair<std::string_view, TokenKind> kMarkers[] = {
      {xtml::kOpen, TokenKind::Open},
      {xtml::kClose, TokenKind::Close},
      {xtml::kSep, TokenKind::Sep},
      {xtml::kEndOfMsg, TokenKind::Eog},
  };
  scan_buf_.append(text);
  const std::string& b = scan_buf_;
  size_t start = 0, i = 0;
  while (true) {
    size_t lt = b.find('<', i);
    if (lt == std::string::npos) break;
    bool partial = false;
    const std::pair<std::string_view, TokenKind>* hit = nullptr;
    size_t rem = b.size() - lt;
    for (const auto& m : kMarkers) {
      if (rem >= m.first.size()) {
        if (b.compare(lt, m.first.size(), m.first) == 0) hit = &m;
      } else if (b.compare(lt, rem, m.first.substr(0, rem)) == 0) {
        partial = true;
      }
    }
    if (hit) {
      lex_text(std::string_view(b).substr(start, lt - start));
      lex_marker(hit->second);
      i = start = lt + hit->first.size();
      continue;
    }
    if (partial && !final) {
      // Could still become a marker: keep it for the next chunk.
      lex_text(std::string_view(b).substr(start, lt - start));
      scan_buf_.erase(0, lt);
      return;
    }
    i = lt + 1;
  }
  lex_text(std::string_view(b).substr(start));
  scan_buf_.clear();
}

// ---------------------------------------------------------------- layer 1: lexer

void OutputParser::lex_text(std::string_view bytes) {
  if (ended_ || bytes.empty()) return;
  if (!in_header_) {
    on_text(bytes);
    return;
  }
  hbuf_.append(bytes);
  if (hbuf_.size() > kHeaderLimit) {  // R4: not a tag after all
    std::string t = std::string(header_open_ ? xtml::kOpen : xtml::kClose) + hbuf_;
    in_header_ = false;
    hbuf_.clear();
    on_text(t);
  }
}

void OutputParser::lex_marker(TokenKind kind) {
  if (ended_) return;
  switch (kind) {
    case TokenKind::Open:
    case TokenKind::Close:
      if (in_header_) emit_header(false);  // R2: elided <|sep|>
      in_header_ = true;
      header_open_ = kind == TokenKind::Open;
      hbuf_.clear();
      return;
    case TokenKind::Sep:
      if (in_header_) emit_header(true);
      // R5: a <|sep|> outside a header is dropped.
      return;
    case TokenKind::Eog:
      if (in_header_) emit_header(false);
      eog_seen_ = true;
      on_end(StopReason::Eog);
      ended_ = true;
      return;
    case TokenKind::Text:
    case TokenKind::OtherControl: return;
  }
}

void OutputParser::emit_header(bool had_sep) {
  std::string header = utf8_sanitize(hbuf_);
  in_header_ = false;
  hbuf_.clear();
  Tag tag;
  tag.open = header_open_;
  size_t sp = header.find(' ');
  tag.name = header.substr(0, sp);
  if (sp != std::string::npos) tag.attrs = parse_attrs(std::string_view(header).substr(sp));
  tag.raw = std::string(header_open_ ? xtml::kOpen : xtml::kClose) + header;
  if (had_sep) tag.raw += xtml::kSep;
  on_tag(tag);
}

// ---------------------------------------------------------------- layer 2: channels

void OutputParser::emit_reasoning(std::string_view b) {
  std::string s = reasoning_utf8_.push(b);
  delta_->reasoning_content += s;
  result_.reasoning_content += s;
}

void OutputParser::emit_content(std::string_view b) {
  std::string s = content_utf8_.push(b);
  delta_->content += s;
  result_.content += s;
}

void OutputParser::on_text(std::string_view b) {
  switch (state_) {
    case State::Think: emit_reasoning(b); return;
    case State::Response: emit_content(b); return;
    case State::Between:
      // R9: whitespace between channels is held; anything else turns it all into content.
      pending_.append(b);
      if (classify_blank(pending_) == Blankness::NonBlank) {
        state_ = State::Response;
        std::string p = std::move(pending_);
        pending_.clear();
        emit_content(p);
      }
      return;
    case State::Arg: arg_->buf.append(b); return;
    case State::Json: jbuf_->append(b); return;
    default: return;  // R10/R18: text in tools, calls, after tools or after the message is dropped
  }
}

// A tag or the end arrives between channels: held whitespace is dropped, but a held partial
// code point counts as text (Python would have decoded it to U+FFFD, which is not blank).
void OutputParser::resolve_between() {
  if (state_ != State::Between) return;
  if (classify_blank(pending_) == Blankness::BlankWithPartialTail) {
    state_ = State::Response;
    std::string p = std::move(pending_);
    pending_.clear();
    emit_content(p);
    return;
  }
  pending_.clear();
}

void OutputParser::start_call(const Tag& tag) {
  call_.emplace();
  if (auto it = tag.attrs.find("tool"); it != tag.attrs.end()) call_->name = it->second;
  state_ = State::Call;
}

void OutputParser::start_arg(const Tag& tag) {
  arg_.emplace();
  if (auto it = tag.attrs.find("key"); it != tag.attrs.end()) arg_->key = it->second;
  if (auto it = tag.attrs.find("type"); it != tag.attrs.end()) arg_->type = it->second;
  state_ = State::Arg;
}

void OutputParser::finish_arg() {
  if (!arg_) return;
  std::string raw = utf8_sanitize(arg_->buf);
  bool schema_string = false;
  if (call_ && call_->name && arg_->key) {
    auto t = string_typed_.find(*call_->name);
    if (t != string_typed_.end()) {
      auto k = t->second.find(*arg_->key);
      schema_string = k != t->second.end() && k->second;
    }
  }
  // R11: the type attribute wins; without one the schema decides.
  std::string type = arg_->type ? *arg_->type : (schema_string ? "string" : "json");
  Json value = type == "string" ? Json(raw) : decode_json_value(raw);
  // A key-less argument becomes Python's None key, which json.dumps writes as "null".
  if (call_) call_->args.emplace_back(arg_->key ? *arg_->key : "null", std::move(value));
  arg_.reset();
}

void OutputParser::finish_json() {
  if (!jbuf_) return;
  std::string raw = utf8_sanitize(*jbuf_);
  jbuf_.reset();
  if (!call_) return;
  auto obj = try_parse_json_exact(raw);
  if (obj && obj->is_object()) {  // R12
    for (auto it = obj->begin(); it != obj->end(); ++it) call_->args.emplace_back(it.key(), it.value());
  } else {
    call_->raw = raw;
  }
}

void OutputParser::finish_call() {
  finish_arg();
  finish_json();
  if (!call_) return;
  CallState c = std::move(*call_);
  call_.reset();
  if (!c.name) return;
  // R16: only declared tools, and only when calls are allowed at all.
  if (!allow_calls_ || !declared_.count(*c.name)) return;
  std::string args;
  if (c.raw && c.args.empty()) {
    args = *c.raw;
  } else {
    Json obj = Json::object();
    for (auto& [k, v] : c.args) obj[k] = std::move(v);  // later duplicates win, first position kept
    args = py_dumps(obj);                               // R13
  }
  ToolCall tc;
  tc.index = static_cast<int>(result_.tool_calls.size());
  tc.id = opt_.call_id_prefix + std::to_string(tc.index);
  tc.name = *c.name;
  tc.arguments = std::move(args);
  delta_->tool_calls.push_back(tc);
  result_.tool_calls.push_back(std::move(tc));
}

// Inside an argument or a JSON body, a close tag of an enclosing scope (call, tools, message)
// ends the call there and then; true when `n` was one of them (docs/CHAT-FORMAT.md, R10).
bool OutputParser::close_outside_call(std::string_view n) {
  State next;
  if (n == "call") next = State::Tools;
  else if (n == "tools") next = State::AfterTools;
  else if (n == "message") next = State::Done;
  else return false;
  finish_call();
  state_ = next;
  return true;
}

void OutputParser::on_tag(const Tag& t) {
  const std::string& n = t.name;
  resolve_between();
  switch (state_) {
    case State::Think:
      if (t.open) {
        if (n == "response") state_ = State::Response;  // R7
        else if (n == "tools") state_ = State::Tools;
        else emit_reasoning(t.raw);  // R8: not a channel switch, kept literally
      } else {
        if (n == "think") state_ = State::Between;
        else if (n == "message") state_ = State::Done;
        else if (!known_tag(n)) emit_reasoning(t.raw);  // R8; a misplaced known close is dropped
      }
      return;
    case State::Between:
      if (t.open) {
        if (n == "think") state_ = State::Think;  // R9: a further think block
        else if (n == "response") state_ = State::Response;
        else if (n == "tools") state_ = State::Tools;
      } else if (n == "message") {
        state_ = State::Done;
      }
      return;
    case State::Response:
      if (t.open) {
        if (n == "response") return;
        if (n == "tools") state_ = State::Tools;
        else emit_content(t.raw);  // R8
      } else {
        if (n == "response") state_ = State::Between;
        else if (n == "message") state_ = State::Done;
        else if (!known_tag(n)) emit_content(t.raw);
      }
      return;
    case State::Tools:
      if (t.open && n == "call") start_call(t);
      else if (!t.open && n == "tools") state_ = State::AfterTools;
      else if (!t.open && n == "message") state_ = State::Done;
      return;
    case State::Call:
      if (t.open) {
        if (n == "call") {
          finish_call();
          start_call(t);
        } else if (n == "argument") {
          start_arg(t);
        } else if (n == "json") {
          jbuf_.emplace();
          state_ = State::Json;
        }
      } else {
        if (n == "call") {
          finish_call();
          state_ = State::Tools;
        } else if (n == "tools") {
          finish_call();
          state_ = State::AfterTools;
        } else if (n == "message") {
          finish_call();
          state_ = State::Done;
        }
      }
      return;
    case State::Arg:
      if (t.open) {
        if (n == "argument") {
          finish_arg();
          start_arg(t);
        } else if (n == "call") {  // R10
          finish_call();
          start_call(t);
        } else {
          arg_->buf += t.raw;
        }
      } else {
        if (n == "argument") {
          finish_arg();
          state_ = State::Call;
        } else if (!close_outside_call(n)) {
          arg_->buf += t.raw;
        }
      }
      return;
    case State::Json:
      if (t.open) {
        if (n == "call") {
          finish_call();
          start_call(t);
        } else {
          *jbuf_ += t.raw;
        }
      } else {
        if (n == "json") {
          finish_json();
          state_ = State::Call;
        } else if (!close_outside_call(n)) {
          *jbuf_ += t.raw;
        }
      }
      return;
    case State::AfterTools:
      if (t.open && n == "tools") state_ = State::Tools;  // R9: more calls
      else if (!t.open && n == "message") state_ = State::Done;
      return;
    case State::Done: return;  // R18
  }
}

void OutputParser::on_end(StopReason stop) {
  resolve_between();
  if (state_ == State::Call || state_ == State::Arg || state_ == State::Json) {
    if (stop == StopReason::Eog) {
      finish_call();  // R14: implicit closes, the call is kept
    } else {
      call_.reset();  // R15: an unfinished call is not executable
      arg_.reset();
      jbuf_.reset();
    }
  }
  state_ = State::Done;
}

// ---------------------------------------------------------------- public API

const char* stop_name(StopReason r) {
  switch (r) {
    case StopReason::Eog: return "eog";
    case StopReason::Length: return "length";
    case StopReason::StopString: return "stop";
    case StopReason::Context: return "context";
    case StopReason::Interrupted: return "interrupted";
  }
  return "?";
}

ParseDelta OutputParser::feed(std::string_view text) {
  ParseDelta d;
  if (finished_) return d;
  delta_ = &d;
  scan(text, false);
  delta_ = nullptr;
  return d;
}

ParseDelta OutputParser::feed_token(TokenKind kind, std::string_view piece) {
  ParseDelta d;
  if (finished_) return d;
  delta_ = &d;
  if (!scan_buf_.empty()) scan({}, true);  // a real token arrived: held marker text is text (R1)
  if (kind == TokenKind::Text) lex_text(piece);
  else lex_marker(kind);
  delta_ = nullptr;
  return d;
}

ParseDelta OutputParser::finish(StopReason stop) {
  ParseDelta d;
  if (finished_) return d;
  delta_ = &d;
  scan({}, true);  // a held partial marker is literal text (R1)
  if (!ended_) {
    if (in_header_) {
      if (stop == StopReason::Eog) {
        emit_header(false);  // R2: end-of-generation ends the header, as an elided <|sep|>
      } else {
        // R3: a header cut off by the token limit is discarded; a stop string likewise (the
        // tag was never finished, and an unfinished call is dropped anyway, R15).
        in_header_ = false;
        hbuf_.clear();
      }
    }
    if (stop == StopReason::Eog) eog_seen_ = true;
    on_end(eog_seen_ ? StopReason::Eog : stop);
    ended_ = true;
  }
  std::string r = reasoning_utf8_.flush(), c = content_utf8_.flush();
  d.reasoning_content += r;
  result_.reasoning_content += r;
  d.content += c;
  result_.content += c;
  // R17
  if (!eog_seen_ && is_cut(stop)) result_.finish_reason = "length";
  else result_.finish_reason = result_.tool_calls.empty() ? "stop" : "tool_calls";
  finished_ = true;
  delta_ = nullptr;
  return d;
}

ParseResult parse_output(std::string_view text, const ParserOptions& opt, StopReason stop) {
  OutputParser p(opt);
  p.feed(text);
  p.finish(stop);
  return p.result();
}

}  // namespace k3::text
