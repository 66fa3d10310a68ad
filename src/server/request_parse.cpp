// server/request_parse: see request_parse.h.
#include "server/request_parse.h"

#include <sys/random.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <limits>
#include <random>

#include "core/error.h"
#include "grammar/work_budget.h"
#include "server/api_error.h"
#include "server/request_images.h"
#include "chat/constraint.h"
#include "chat/prompt.h"
#include "chat/vocab_roles.h"
#include "text/chat_template.h"

namespace k3::server {

using text::Json;

namespace {

// Compiles a request's constraint under the limits' deadline, cancellation and ledger.
template <typename Compile>
std::shared_ptr<const grammar::Grammar> constrain(const RequestLimits& lim, Compile compile) {
  grammar::WorkBudget budget("compiling the request's grammar", lim.grammar_compile_limit, lim.cancelled);
  chat::ConstraintOptions o;
  o.budget = &budget;
  o.ledger = lim.grammar_ledger;
  o.matcher_bytes = lim.grammar_matcher_bytes;
  return compile(o);
}

const Json kNull;

const Json& field(const Json& req, const char* name) {
  auto it = req.find(name);
  return it == req.end() ? kNull : *it;
}

// A number field; null/absent gives `def`.
double get_number(const Json& req, const char* name, double def, double lo, double hi) {
  const Json& v = field(req, name);
  if (v.is_null()) return def;
  if (!v.is_number()) bad_request(name, "'{}' must be a number", name);
  double d = v.get<double>();
  if (!std::isfinite(d) || d < lo || d > hi)
    bad_request(name, "'{}' must be between {} and {} (got {})", name, lo, hi, d);
  return d;
}

int64_t get_int(const Json& req, const char* name, int64_t def, int64_t lo, int64_t hi) {
  const Json& v = field(req, name);
  if (v.is_null()) return def;
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e18) {
      int64_t i = static_cast<int64_t>(d);
      if (i < lo || i > hi) bad_request(name, "'{}' must be between {} and {} (got {})", name, lo, hi, i);
      return i;
    }
  }
  if (!v.is_number_integer()) bad_request(name, "'{}' must be an integer", name);
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi))
    bad_request(name, "'{}' must be between {} and {}", name, lo, hi);
  int64_t i = v.get<int64_t>();
  if (i < lo || i > hi) bad_request(name, "'{}' must be between {} and {} (got {})", name, lo, hi, i);
  return i;
}

bool get_bool(const Json& req, const char* name, bool def) {
  const Json& v = field(req, name);
  if (v.is_null()) return def;
  if (!v.is_boolean()) bad_request(name, "'{}' must be a boolean", name);
  return v.get<bool>();
}

// A cache_key made by the server ("cache_key": "new"): 128 bits from the kernel's random
// source, so no other client can guess it, as it can guess a `user` name or a history. Not
// random_id(): a Mersenne Twister's later outputs follow from enough earlier ones (ids).
std::string issue_cache_key() {
  unsigned char bytes[16];
  for (size_t got = 0; got < sizeof bytes;) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw ApiError(503, "unavailable_error", "no random bytes for a new cache_key");
    got += static_cast<size_t>(n);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string key = "k3ck_";
  for (unsigned char b : bytes) {
    key += kHex[b >> 4];
    key += kHex[b & 15];
  }
  return key;
}

// The prompt-cache owner (job.h): `cache_key`, else `user`; strings of at most 256 bytes.
// `user` is a name other clients can guess: docs/serve.md, "Prompt cache". The cache_key
// "new" asks for a key made here, the owner of this request's snapshot; it is set in
// `issued` for the response to hand back.
std::string cache_owner_of(const Json& req, std::string& issued) {
  for (const char* name : {"cache_key", "user"}) {
    const Json& v = field(req, name);
    if (v.is_null()) continue;
    if (!v.is_string()) bad_request(name, "'{}' must be a string", name);
    const std::string& value = v.get_ref<const std::string&>();
    if (value.size() > 256) bad_request(name, "'{}' is longer than 256 bytes", name);
    if (std::string_view(name) == "cache_key" && value == "new") {
      issued = issue_cache_key();
      return std::string(name) + ":" + issued;
    }
    return std::string(name) + ":" + value;
  }
  return {};
}

// The fields shared by chat and raw completions.
void read_common(const Json& req, const RequestLimits& lim, GenParams& p, BuiltRequest& out) {
  runtime::SamplerParams& s = p.sampler;
  s.temperature = static_cast<float>(get_number(req, "temperature", 0.8, 0.0, 100.0));
  s.top_p = static_cast<float>(get_number(req, "top_p", 0.95, 0.0, 1.0));
  s.top_k = static_cast<int32_t>(get_int(req, "top_k", 40, 0, 1 << 30));
  s.min_p = static_cast<float>(get_number(req, "min_p", 0.05, 0.0, 1.0));
  s.repeat_penalty = static_cast<float>(get_number(req, "repeat_penalty", 1.0, 0.0, 100.0));
  s.repeat_last_n = static_cast<int32_t>(get_int(req, "repeat_last_n", 64, 0, 1 << 20));
  s.presence_penalty = static_cast<float>(get_number(req, "presence_penalty", 0.0, -2.0, 2.0));
  s.frequency_penalty = static_cast<float>(get_number(req, "frequency_penalty", 0.0, -2.0, 2.0));
  int64_t seed =
      get_int(req, "seed", -1, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  s.seed = seed == -1 ? std::random_device{}() : static_cast<uint64_t>(seed);
  // What the sampler would refuse, refused now (values that pass the ranges above as doubles
  // can still be 0 as floats: top_p 1e-50).
  if (runtime::SamplerParamsError e = runtime::check_sampler_params(s); !e.field.empty())
    bad_request(e.field, "'{}' {} (got {})", e.field, e.message, field(req, e.field.c_str()).dump());

  const int64_t kMaxLimit = std::numeric_limits<int64_t>::max();
  int64_t max_tokens = -1;
  for (const char* name : {"max_completion_tokens", "max_tokens", "n_predict"}) {
    if (field(req, name).is_null()) continue;
    max_tokens = get_int(req, name, -1, -1, kMaxLimit);
    if (max_tokens == 0) bad_request(name, "'{}' must be at least 1 (or -1 for no limit)", name);
    break;
  }
  // More than the context can never be produced; the context limit applies anyway.
  if (max_tokens > lim.n_ctx) max_tokens = lim.n_ctx;
  p.max_tokens = max_tokens;

  int64_t n = get_int(req, "n", 1, 1, 1 << 20);
  if (n != 1) bad_request("n", "only n=1 is supported");

  const Json& stop = field(req, "stop");
  if (stop.is_string()) {
    p.stop.push_back(stop.get<std::string>());
  } else if (stop.is_array()) {
    if (stop.size() > lim.max_stop) bad_request("stop", "at most {} stop strings are allowed", lim.max_stop);
    for (const Json& s : stop) {
      if (!s.is_string()) bad_request("stop", "'stop' must be a string or an array of strings");
      p.stop.push_back(s.get<std::string>());
    }
  } else if (!stop.is_null()) {
    bad_request("stop", "'stop' must be a string or an array of strings");
  }
  for (const std::string& s : p.stop) {
    if (s.empty()) bad_request("stop", "stop strings must not be empty");
    if (s.size() > lim.max_stop_bytes)
      bad_request("stop", "stop strings are limited to {} bytes", lim.max_stop_bytes);
  }

  out.stream = get_bool(req, "stream", false);
  const Json& so = field(req, "stream_options");
  if (!so.is_null()) {
    if (!so.is_object()) bad_request("stream_options", "'stream_options' must be an object");
    out.include_usage = get_bool(so, "include_usage", false);
  }
  if (get_bool(req, "logprobs", false)) bad_request("logprobs", "logprobs are not supported");
  // Ignoring a bias would answer as if it had been applied; an empty map asks for nothing.
  const Json& bias = field(req, "logit_bias");
  if (!bias.is_null() && !(bias.is_object() && bias.empty()))
    bad_request("logit_bias",
                "logit_bias is not supported (use a grammar or json_schema to constrain output)");
}

// A message's content: a string, null, or a list of parts, each {"type":"text","text":…} or
// an image part. The template alone would render an unknown part as nothing (the reference
// does), so a client sending audio or a file would get an answer that silently ignored it.
void check_content(const Json& c, size_t i) {
  if (c.is_null() || c.is_string()) return;
  const std::string where = fmt::format("messages[{}].content", i);
  if (!c.is_array()) bad_request(where, "{} must be a string, an array of content parts or null", where);
  for (size_t j = 0; j < c.size(); ++j) {
    const Json& part = c[j];
    const std::string at = fmt::format("{}[{}]", where, j);
    if (!part.is_object()) bad_request(at, "{} must be an object with a 'type'", at);
    const Json& type = field(part, "type");
    if (!type.is_string()) bad_request(at + ".type", "{}.type must be a string", at);
    const std::string& t = type.get_ref<const std::string&>();
    if (t == "text") {
      if (!field(part, "text").is_string()) bad_request(at + ".text", "{}.text must be a string", at);
    } else if (t != "image_url" && t != "image") {
      bad_request(at + ".type", "{}: content parts of type '{}' are not supported (text, image_url)", at,
                  t.substr(0, 64));
    }
  }
}

void check_messages(const Json& req, const RequestLimits& lim) {
  const Json& msgs = field(req, "messages");
  if (msgs.is_null()) bad_request("messages", "'messages' is required");
  if (!msgs.is_array()) bad_request("messages", "'messages' must be an array");
  if (msgs.empty()) bad_request("messages", "'messages' must not be empty");
  if (msgs.size() > lim.max_messages)
    bad_request("messages", "too many messages ({}; the limit is {})", msgs.size(), lim.max_messages);
  for (size_t i = 0; i < msgs.size(); ++i) {
    const Json& m = msgs[i];
    if (!m.is_object()) bad_request("messages", "messages[{}] must be an object", i);
    const Json& role = field(m, "role");
    if (!role.is_string()) bad_request("messages", "messages[{}].role must be a string", i);
    check_content(field(m, "content"), i);
  }
  const Json& tools = field(req, "tools");
  if (!tools.is_null()) {
    if (!tools.is_array()) bad_request("tools", "'tools' must be an array");
    if (tools.size() > lim.max_tools) bad_request("tools", "at most {} tools are allowed", lim.max_tools);
    for (size_t i = 0; i < tools.size(); ++i) {
      const Json& t = tools[i];
      const Json& fn = t.is_object() ? field(t, "function") : kNull;
      if (!fn.is_object() || !field(fn, "name").is_string())
        bad_request("tools", "tools[{}] must be {{\"type\":\"function\",\"function\":{{\"name\":…}}}}", i);
    }
  }
  const Json& tc = field(req, "tool_choice");
  if (!tc.is_null()) {
    if (tc.is_string()) {
      const std::string& s = tc.get_ref<const std::string&>();
      if (s != "auto" && s != "none" && s != "required")
        bad_request("tool_choice", "Invalid tool_choice: '{}' (use auto, none or required)", s);
    } else if (!tc.is_object()) {
      bad_request("tool_choice", "'tool_choice' must be a string or an object");
    }
  }
  const Json& re = field(req, "reasoning_effort");
  if (!re.is_null() && !re.is_string())
    bad_request("reasoning_effort", "'reasoning_effort' must be a string");
  const Json& kw = field(req, "chat_template_kwargs");
  if (!kw.is_null() && !kw.is_object())
    bad_request("chat_template_kwargs", "'chat_template_kwargs' must be an object");
}

std::vector<text::ChatSegment> render(const Json& req, const RequestLimits& lim) {
  check_messages(req, lim);
  try {
    return text::render_chat_segments(text::chat_input_from_request(req, true));
  } catch (const k3::Error& e) {
    bad_request("messages", "{}", e.what());
  } catch (const nlohmann::json::exception& e) {
    bad_request("messages", "malformed chat request: {}", e.what());
  }
}

// The conversation rendered without the generation prompt (empty when it does not render):
// where a follow-up turn, which repeats it, can resume (chat/prompt.h).
std::vector<text::ChatSegment> render_history(const Json& req) {
  try {
    return text::render_chat_segments(text::chat_input_from_request(req, false));
  } catch (const std::exception&) { return {}; }
}

void check_prompt_fits(size_t n_prompt, const RequestLimits& lim) {
  if (static_cast<int64_t>(n_prompt) >= lim.n_ctx)
    throw ApiError(400, "exceed_context_size_error",
                   fmt::format("the prompt has {} tokens but the context is {} tokens per request", n_prompt,
                               lim.n_ctx));
}

}  // namespace

// Request bodies nest far less than the parser allows any JSON.
constexpr std::size_t kMaxBodyDepth = 128;

Json parse_body(std::string_view body) {
  // The nesting is bounded by the parser (walking or destroying a deep document recurses).
  std::optional<Json> j;
  try {
    j = text::parse_json_exact(body, "request body", kMaxBodyDepth);
  } catch (const k3::Error& e) { bad_request("", "{}", e.what()); }
  if (!j->is_object()) bad_request("", "the request body must be a JSON object");
  return std::move(*j);
}

BuiltRequest build_chat_request(const Json& req, const text::Tokenizer& tok, const RequestLimits& lim) {
  BuiltRequest out;
  auto job = std::make_shared<Job>();
  job->kind = JobKind::Chat;
  read_common(req, lim, job->params, out);
  job->cache_owner = cache_owner_of(req, out.issued_cache_key);
  const RequestImages images = collect_images(req, lim);
  chat::ChatPrompt prompt;
  try {
    prompt = chat::tokenize_chat(tok, render(req, lim), render_history(req), images.slots);
  } catch (const k3::Error& e) {
    if (images.slots.empty()) throw;
    bad_request("messages", "{} (image parts are read in user and system messages)", e.what());
  }
  job->prompt = std::move(prompt.tokens);
  job->snapshot_at = prompt.history_end;
  check_prompt_fits(job->prompt.size(), lim);
  attach_images(*job, prompt.image_at, images, tok);
  // The parser starts in the channel the generation prompt opened.
  job->parser.thinking = prompt.thinking;
  job->parser.tools = field(req, "tools");
  const Json& tc = field(req, "tool_choice");
  job->parser.tool_choice = tc.is_string() ? tc.get<std::string>() : tc.is_object() ? "required" : "auto";
  job->grammar = constrain(lim, [&](const chat::ConstraintOptions& o) {
    return chat::chat_constraint(req, job->parser.thinking, tok, o);
  });

  int64_t budget = lim.reasoning_budget;
  for (const char* name : {"reasoning_budget_tokens", "thinking_budget_tokens"})
    if (!field(req, name).is_null()) budget = get_int(req, name, -1, -1, std::numeric_limits<int64_t>::max());
  job->params.reasoning_budget = budget;
  job->params.reasoning_budget_message = lim.reasoning_budget_message;
  const Json& bm = field(req, "reasoning_budget_message");
  if (!bm.is_null()) {
    if (!bm.is_string())
      bad_request("reasoning_budget_message", "'reasoning_budget_message' must be a string");
    job->params.reasoning_budget_message = bm.get<std::string>();
  }
  out.job = std::move(job);
  return out;
}

BuiltRequest build_completion_request(const Json& req, const text::Tokenizer& tok, const RequestLimits& lim) {
  BuiltRequest out;
  auto job = std::make_shared<Job>();
  job->kind = JobKind::Completion;
  read_common(req, lim, job->params, out);
  job->cache_owner = cache_owner_of(req, out.issued_cache_key);
  if (get_bool(req, "echo", false)) bad_request("echo", "Only no echo is supported");
  if (!field(req, "suffix").is_null()) bad_request("suffix", "'suffix' is not supported");
  if (!field(req, "best_of").is_null() && get_int(req, "best_of", 1, 1, 1 << 20) != 1)
    bad_request("best_of", "'best_of' is not supported");

  const Json& prompt = field(req, "prompt");
  auto add_string = [&](const Json& s) {
    std::vector<int32_t> ids = tok.encode(s.get_ref<const std::string&>(), true, true);
    job->prompt.insert(job->prompt.end(), ids.begin(), ids.end());
  };
  const int64_t n_vocab = static_cast<int64_t>(tok.n_vocab());
  if (prompt.is_string()) {
    add_string(prompt);
  } else if (prompt.is_array()) {
    for (const Json& e : prompt) {
      if (e.is_string()) {
        add_string(e);
      } else if (e.is_number_integer()) {
        int64_t id = e.get<int64_t>();
        if (id < 0 || id >= n_vocab)
          bad_request("prompt", "token id {} is outside the vocabulary (0…{})", id, n_vocab - 1);
        job->prompt.push_back(static_cast<int32_t>(id));
      } else if (e.is_array()) {
        bad_request("prompt", "only one prompt per request is supported");
      } else {
        bad_request("prompt", "'prompt' must be a string, token ids, or an array of them");
      }
      if (static_cast<int64_t>(job->prompt.size()) >= lim.n_ctx) break;
    }
  } else if (prompt.is_null()) {
    bad_request("prompt", "'prompt' is required");
  } else {
    bad_request("prompt", "'prompt' must be a string, token ids, or an array of them");
  }
  if (job->prompt.empty()) bad_request("prompt", "the prompt is empty");
  check_prompt_fits(job->prompt.size(), lim);
  job->grammar = constrain(
      lim, [&](const chat::ConstraintOptions& o) { return chat::completion_constraint(req, tok, o); });
  out.job = std::move(job);
  return out;
}

std::string render_chat_prompt(const Json& req, const RequestLimits& lim) {
  return text::join_segments(render(req, lim));
}

}  // namespace k3::server
