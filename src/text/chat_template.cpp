// text/chat_template: the K3 XTML renderer (see chat_template.h). The structure follows the
// order of Kimi-K3.jinja: tool declaration, effort note, conversation, tool-choice note,
// response-format note, generation prompt. Python/Jinja value semantics (truthiness, str(),
// json.dumps) come from json_py so odd-but-legal inputs render exactly as Python would.
#include "text/chat_template.h"

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/error.h"
#include "text/chat_template_markers.h"

namespace k3::text {

namespace {

using Attrs = std::vector<std::pair<std::string_view, std::string>>;

constexpr std::string_view kToolDeclareHead =
    "# Tools\nHere are the available tools, described in JSONSchema.\n\n```json\n";
constexpr std::string_view kToolDeclareHeadDynamic =
    "## New Tools Available\nThe system dynamically extends the toolset via lazy-loading.\n"
    "You have access to all existing and extended tools.\nHere are the specs for the extended "
    "tools.\n\n```json\n";
constexpr std::string_view kEffortBody =
    "`thinking_effort` guides on how much to think in your thinking channel (not including the "
    "response channel), supported values include `low`, `medium`, `high`, and `max`.\nNow the "
    "system is invoked with `thinking_effort=";
constexpr std::string_view kToolChoiceRequired =
    "The system is invoked with `tool_choice=required`.\nYou MUST call tools in the next message.";
constexpr std::string_view kToolChoiceNone =
    "The system is invoked with `tool_choice=none`.\nYou MUST NOT call any tools in the next "
    "message.";
constexpr std::string_view kResponseFormatObject =
    "The system is invoked with `response_format=json_object`.\nYour response must be raw JSON "
    "data without markdown code blocks (```json) or any additional formatting.";
constexpr std::string_view kResponseFormatSchema =
    "The system is invoked with `response_format=json_schema`.\nYour response must be raw JSON "
    "data without markdown code blocks (```json) or any additional formatting.\nThe JSON data "
    "must match the following schema:\n```json\n";

const Json kNull;

// dict.get(key) semantics: null when absent.
const Json& get(const Json& obj, std::string_view key) {
  if (!obj.is_object()) return kNull;
  auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}
bool has(const Json& obj, std::string_view key) { return obj.is_object() && obj.contains(key); }
bool is_str(const Json& v, std::string_view s) {
  return v.is_string() && v.get_ref<const std::string&>() == s;
}

std::string escape_attr(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out.push_back(c);
  }
  return out;
}

// A tool call's function object: call.function when it is a mapping, else the call itself.
const Json& call_fn(const Json& call) {
  const Json& f = get(call, "function");
  return f.is_object() ? f : call;
}

const char* xtml_type(const Json& v) {
  if (v.is_boolean()) return "boolean";
  if (v.is_null()) return "null";
  if (v.is_number() || is_big_int(v)) return "number";
  if (v.is_string()) return "string";
  if (v.is_object()) return "object";
  return "array";
}

class Renderer {
 public:
  Renderer(const ChatTemplateInput& in, TemplateMode mode) : in_(in), mode_(mode) {}

  std::vector<ChatSegment> run() {
    const Json& vars = in_.vars;
    thinking_ = has(vars, "thinking") ? py_truthy(vars["thinking"]) : true;
    Json effort = has(vars, "thinking_effort") ? vars["thinking_effort"] : Json("max");
    bool effort_known = is_str(effort, "low") || is_str(effort, "high") || is_str(effort, "max");
    if (thinking_ && !effort.is_null() && !effort_known)
      fail("Unsupported thinking_effort={}; supported values are low, high, and max.", py_str(effort));

    if (py_truthy(in_.tools)) tool_declare(in_.tools, false);
    if (thinking_ && effort_known)
      internal("thinking-effort", std::string(kEffortBody) + effort.get<std::string>() + "`.");

    conversation();

    const Json& tc = get(vars, "tool_choice");
    if (is_str(tc, "required")) internal("tool-choice", kToolChoiceRequired);
    else if (is_str(tc, "none")) internal("tool-choice", kToolChoiceNone);

    response_format();

    if (py_truthy(get(vars, "add_generation_prompt"))) {
      open_tag("message", {{"role", "assistant"}});
      open_tag(thinking_ ? xtml::kThink : xtml::kResponse);
    }
    return std::move(out_);
  }

 private:
  const ChatTemplateInput& in_;
  TemplateMode mode_;
  bool thinking_ = true;
  std::vector<ChatSegment> out_;
  // Per assistant message: its tool_calls (tool results resolve against them) and the index
  // of the last tool message rendered since.
  const Json* prior_calls_ = &kNull;
  int tool_index_ = 0;

  bool engine() const { return mode_ == TemplateMode::Engine; }

  void text(std::string_view s) {
    if (!s.empty()) out_.push_back({std::string(s), false});
  }
  void ctrl(std::string_view s) { out_.push_back({std::string(s), true}); }
  void open_tag(std::string_view tag, const Attrs& attrs = {}) {
    ctrl(xtml::kOpen);
    text(tag);
    for (const auto& [k, v] : attrs) text(std::string(" ") + std::string(k) + "=\"" + escape_attr(v) + "\"");
    ctrl(xtml::kSep);
  }
  void close_tag(std::string_view tag) {
    ctrl(xtml::kClose);
    text(tag);
    ctrl(xtml::kSep);
  }
  void end_message() {
    close_tag(xtml::kMessage);
    ctrl(xtml::kEndOfMsg);
  }
  void internal(std::string_view kind, std::string_view body) {
    open_tag(xtml::kMessage, {{"role", "system"}, {"type", std::string(kind)}});
    text(py_strip(body));
    end_message();
  }

  std::string sorted_json(const Json& v) const {
    return py_dumps(v, {true, engine() ? KeyOrder::CodePoint : KeyOrder::CaseInsensitive});
  }

  void tool_declare(const Json& tools, bool dynamic) {
    open_tag(xtml::kMessage, {{"role", "system"}, {"type", "tool-declare"}});
    text(std::string(dynamic ? kToolDeclareHeadDynamic : kToolDeclareHead) + sorted_json(tools) + "\n```");
    end_message();
  }

  // A message body: a string, null, or a list of parts each rendered as its own segment.
  void content(const Json& c, std::string_view where) {
    if (c.is_string()) {
      text(c.get_ref<const std::string&>());
    } else if (c.is_array()) {
      for (const Json& part : c) {
        const Json& type = get(part, "type");
        if (is_str(type, "image") || is_str(type, "image_url")) {
          out_.push_back({std::string(xtml::kImagePlaceholder), false, true});
        } else if (has(part, "text")) {
          text(py_str(part["text"]));
        }
      }
    } else if (!c.is_null() && !c.is_object()) {
      // Iterating an object yields its keys, which render nothing; a scalar is an error.
      fail("{}: content must be a string, a list of content parts or null (got {})", where, c.type_name());
    }
  }

  void conversation() {
    const Json& msgs = in_.messages;
    if (!msgs.is_array()) fail("messages must be an array");
    for (size_t i = 0; i < msgs.size(); ++i) {
      const Json& m = msgs[i];
      if (!m.is_object()) continue;
      std::string where = "messages[" + std::to_string(i) + "]";
      if (!m.contains("role")) fail("{}: Kimi K3 messages require a role.", where);
      const Json& role = m["role"];
      bool as_system = is_str(role, "system") || (engine() && is_str(role, "developer"));
      if (is_str(role, "user") || (as_system && !py_truthy(get(m, "tools")))) {
        Attrs attrs{{"role", is_str(role, "user") ? "user" : "system"}};
        if (py_truthy(get(m, "name"))) attrs.emplace_back("name", py_str(m["name"]));
        open_tag(xtml::kMessage, attrs);
        content(get(m, "content"), where);
        end_message();
      } else if (as_system) {
        tool_declare(m["tools"], true);
      } else if (is_str(role, "assistant")) {
        assistant(m, where);
      } else if (is_str(role, "tool") && (i == 0 || !is_str(get(msgs[i - 1], "role"), "tool"))) {
        tool_run(msgs, i);
      }
      // Any other role renders nothing, as in the template.
    }
  }

  void assistant(const Json& m, const std::string& where) {
    prior_calls_ = &get(m, "tool_calls");
    tool_index_ = 0;
    Attrs attrs{{"role", "assistant"}};
    if (!engine() && py_truthy(get(m, "name"))) attrs.emplace_back("name", py_str(m["name"]));
    open_tag(xtml::kMessage, attrs);
    if (thinking_) {
      const Json& rc = get(m, "reasoning_content");
      const Json& reasoning = py_truthy(rc) ? rc : get(m, "reasoning");
      open_tag(xtml::kThink);
      if (!reasoning.is_null()) {
        std::string r = py_str(reasoning);
        if (!py_is_blank(r)) text(r);
      }
      close_tag(xtml::kThink);
    }
    open_tag(xtml::kResponse);
    content(get(m, "content"), where);
    close_tag(xtml::kResponse);
    const Json& calls = get(m, "tool_calls");
    if (py_truthy(calls)) {
      if (!calls.is_array()) fail("{}: Kimi K3 tool calls must be mappings.", where);
      open_tag(xtml::kTools);
      for (size_t k = 0; k < calls.size(); ++k) tool_call(calls[k], k + 1, where);
      close_tag(xtml::kTools);
    }
    end_message();
  }

  void json_block(std::string_view body) {
    open_tag("json", {{"type", "object"}});
    text(body);
    close_tag("json");
  }

  void tool_call(const Json& call, size_t index, const std::string& where) {
    std::string cw = where + ".tool_calls[" + std::to_string(index - 1) + "]";
    if (!call.is_object()) fail("{}: Kimi K3 tool calls must be mappings.", cw);
    const Json& fn = call_fn(call);
    if (get(fn, "name").is_null()) fail("{}: Kimi K3 tool calls require a function name.", cw);
    open_tag("call", {{"tool", py_str(fn["name"])}, {"index", std::to_string(index)}});
    Json args = has(fn, "arguments") ? fn["arguments"] : Json::object();
    const Json& block = get(fn, "_xtml_json_block");
    if (!block.is_null()) {
      json_block(py_str(block));
      close_tag("call");
      return;
    }
    if (engine() && args.is_string()) {
      // As the reference encoder: parse; object -> typed, invalid -> JSON block, else 400.
      const std::string& s = args.get_ref<const std::string&>();
      if (py_is_blank(s)) {
        args = Json::object();
      } else if (auto parsed = try_parse_json_exact(s)) {
        if (!parsed->is_object()) fail("{}: Kimi K3 tool call arguments must be a JSON object.", cw);
        args = std::move(*parsed);
      } else {
        json_block(s);
        close_tag("call");
        return;
      }
    }
    if (args.is_object()) {
      for (auto it = args.begin(); it != args.end(); ++it) {
        const Json& v = it.value();
        open_tag("argument", {{"key", it.key()}, {"type", xtml_type(v)}});
        text(v.is_string() ? v.get<std::string>() : py_dumps(v, {false, KeyOrder::Insertion}));
        close_tag("argument");
      }
    } else if (args.is_string() && !py_is_blank(args.get_ref<const std::string&>())) {
      json_block(args.get_ref<const std::string&>());
    } else if (!args.is_null() && !args.is_string()) {
      fail("{}: Kimi K3 tool call arguments must be a mapping or a JSON object string.", cw);
    }
    close_tag("call");
  }

  // A run of consecutive tool messages starting at msgs[first].
  void tool_run(const Json& msgs, size_t first) {
    std::vector<const Json*> run;
    for (size_t j = first; j < msgs.size(); ++j) {
      if (!msgs[j].is_object() || !is_str(get(msgs[j], "role"), "tool")) break;
      run.push_back(&msgs[j]);
    }
    const Json& calls = *prior_calls_;
    auto result_id = [](const Json& t) -> const Json& {
      return has(t, "tool_call_id") ? t["tool_call_id"] : get(t, "id");
    };
    // Hash sets and maps, not nested scans: 80k calls with their results took 7 s quadratic.
    std::unordered_set<std::string> call_ids;
    if (calls.is_array())
      for (const Json& c : calls)
        if (c.is_object() && !get(c, "id").is_null()) call_ids.insert(py_str(c["id"]));
    std::unordered_map<std::string, std::vector<const Json*>> results;  // id -> results, in run order
    bool all_resolved = !run.empty();
    for (const Json* t : run) {
      const Json& rid = result_id(*t);
      if (rid.is_null()) {
        all_resolved = false;
        continue;
      }
      std::string id = py_str(rid);
      all_resolved = all_resolved && call_ids.count(id) > 0;
      results[std::move(id)].push_back(t);
    }
    if (all_resolved) {
      // Reorder into call order; the first call with a given id wins.
      std::unordered_set<std::string> emitted;
      for (const Json& c : calls) {
        if (!c.is_object() || get(c, "id").is_null()) continue;
        std::string cid = py_str(c["id"]);
        if (!emitted.insert(cid).second) continue;
        const Json& name = get(call_fn(c), "name");
        if (auto it = results.find(cid); it != results.end())
          for (const Json* t : it->second) tool_message(*t, &name);
      }
    } else {
      for (const Json* t : run) tool_message(*t, nullptr);
    }
  }

  void tool_message(const Json& t, const Json* resolved) {
    ++tool_index_;
    std::optional<std::string> name;  // nullopt = None
    auto set_from = [&](const Json& v) {
      if (!v.is_null()) name = py_str(v);
    };
    if (resolved && !resolved->is_null()) set_from(*resolved);
    else if (has(t, "tool")) set_from(t["tool"]);
    else set_from(get(t, "name"));
    const Json& calls = *prior_calls_;
    if (!name && calls.is_array() && tool_index_ <= static_cast<int>(calls.size())) {
      const Json& fb = call_fn(calls[static_cast<size_t>(tool_index_ - 1)]);
      // A missing name is Jinja-undefined and renders empty; an explicit null is an error.
      if (!has(fb, "name")) name = "";
      else set_from(fb["name"]);
    }
    if (!name)
      fail(
          "Kimi K3 tool messages need a resolvable tool name: carry `tool`/`name`, or match a "
          "preceding assistant tool_call by order.");
    open_tag(xtml::kMessage, {{"role", "tool"}, {"tool", *name}, {"index", std::to_string(tool_index_)}});
    content(get(t, "content"), "tool message");
    end_message();
  }

  void response_format() {
    const Json& vars = in_.vars;
    const Json& rf = get(vars, "response_format");
    Json schema;
    if (has(vars, "response_schema")) {
      schema = vars["response_schema"];
    } else if (rf.is_object() && !get(rf, "json_schema").is_null()) {
      const Json& w = rf["json_schema"];
      if (has(w, "schema")) schema = w["schema"];
      else if (has(w, "json_schema")) schema = w["json_schema"];
      else schema = w;
    }
    const Json& type = rf.is_object() ? get(rf, "type") : rf;
    if (is_str(type, "json_object")) {
      internal("response-format", kResponseFormatObject);
    } else if (is_str(type, "json_schema")) {
      internal("response-format", std::string(kResponseFormatSchema) + sorted_json(schema) + "\n```");
    }
  }
};

}  // namespace

std::vector<ChatSegment> render_chat_segments(const ChatTemplateInput& in, TemplateMode mode) {
  return Renderer(in, mode).run();
}

std::string join_segments(const std::vector<ChatSegment>& segs) {
  std::string out;
  for (const auto& s : segs) out += s.text;
  return out;
}

std::string render_chat(const ChatTemplateInput& in, TemplateMode mode) {
  return join_segments(render_chat_segments(in, mode));
}

ThinkingSetting map_reasoning_effort(std::string_view e) {
  if (e == "none") return {false, "max"};
  if (e == "low" || e == "minimal") return {true, "low"};
  if (e == "medium" || e == "high") return {true, "high"};
  if (e == "max" || e == "xhigh") return {true, "max"};
  fail("reasoning_effort '{}' is not supported (use none, minimal, low, medium, high, xhigh or max)", e);
}

ChatTemplateInput chat_input_from_request(const Json& req, bool add_generation_prompt) {
  if (!req.is_object()) fail("request: expected a JSON object");
  ChatTemplateInput in;
  if (!req.contains("messages")) fail("request: missing 'messages'");
  in.messages = req["messages"];
  if (!in.messages.is_array()) fail("request: 'messages' must be an array");
  in.tools = get(req, "tools");
  in.vars["add_generation_prompt"] = add_generation_prompt;
  if (const Json& e = get(req, "reasoning_effort"); e.is_string()) {
    ThinkingSetting t = map_reasoning_effort(e.get_ref<const std::string&>());
    in.vars["thinking"] = t.thinking;
    if (t.thinking) in.vars["thinking_effort"] = t.effort;
  }
  if (const Json& et = get(req, "enable_thinking"); et.is_boolean() && !et.get<bool>())
    in.vars["thinking"] = false;
  if (const Json& tc = get(req, "tool_choice"); tc.is_string()) {
    if (tc == "required" || tc == "none") in.vars["tool_choice"] = tc;
  } else if (tc.is_object()) {
    // A named function has no template form; "required" is the closest note.
    in.vars["tool_choice"] = "required";
  }
  if (has(req, "response_format")) {
    const Json& rf = req["response_format"];
    const Json& type = rf.is_object() ? get(rf, "type") : rf;
    if (is_str(type, "json_object") || is_str(type, "json_schema")) in.vars["response_format"] = rf;
  }
  if (const Json& kw = get(req, "chat_template_kwargs"); kw.is_object())
    for (auto it = kw.begin(); it != kw.end(); ++it) in.vars[it.key()] = it.value();
  return in;
}

std::uint64_t chat_template_fingerprint(std::string_view t) {
  std::string norm;
  norm.reserve(t.size());
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '\r' && i + 1 < t.size() && t[i + 1] == '\n') continue;
    norm.push_back(t[i]);
  }
  while (!norm.empty() &&
         (norm.back() == ' ' || norm.back() == '\n' || norm.back() == '\t' || norm.back() == '\r'))
    norm.pop_back();
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : norm) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

TemplateCheck check_chat_template(std::optional<std::string_view> tpl) {
  TemplateCheck r;
  if (!tpl || tpl->empty()) {
    r.kind = TemplateKind::Missing;
    r.message = "the model has no tokenizer.chat_template; using the built-in Kimi-K3 renderer";
    return r;
  }
  r.fingerprint = chat_template_fingerprint(*tpl);
  if (r.fingerprint == kK3TemplateFingerprint) {
    r.kind = TemplateKind::K3Exact;
    r.message = "tokenizer.chat_template is the known Kimi-K3 template";
    return r;
  }
  auto has_text = [&](std::string_view s) { return tpl->find(s) != std::string_view::npos; };
  bool xtml =
      has_text(xtml::kOpen) && has_text(xtml::kClose) && has_text(xtml::kSep) && has_text(xtml::kEndOfMsg);
  bool k3_shape = has_text("thinking_effort") && has_text("tool-declare") && has_text("response");
  if (xtml && k3_shape) {
    r.kind = TemplateKind::K3Variant;
    r.message = fmt::format(
        "tokenizer.chat_template uses Kimi-K3's XTML format but is not the known template "
        "(fingerprint {:016x}, expected {:016x}); rendering with the built-in Kimi-K3 renderer, "
        "which may differ from this template",
        r.fingerprint, kK3TemplateFingerprint);
    return r;
  }
  r.kind = TemplateKind::Unsupported;
  r.message = fmt::format(
      "tokenizer.chat_template (fingerprint {:016x}) is not Kimi-K3's XTML template; k3 renders "
      "only the Kimi-K3 chat format and has no general Jinja engine",
      r.fingerprint);
  return r;
}

}  // namespace k3::text
