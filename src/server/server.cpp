// server/server: see server.h. HTTP plumbing only: requests are parsed in request_parse,
// run by the scheduler, and answered with the builders in responses.
#include "server/server.h"

#include <httplib.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "core/error.h"
#include "core/log.h"
#include "core/release_memory.h"
#include "core/version.h"
#include "grammar/work_budget.h"
#include "model/model.h"
#include "chat/vocab_roles.h"
#include "server/api_error.h"
#include "chat/grammar_ledger.h"
#include "server/http_connection.h"
#include "server/origin_policy.h"
#include "server/responses.h"
#include "server/slot_endpoints.h"
#include "server/token_endpoints.h"
#include "server/webui.h"
#include "store/install.h"
#include "text/tokenizer.h"

namespace k3::server {

using text::Json;

namespace {

// A request body at least this large (after decoding) is parsed into a JSON tree several
// times its size; once both are freed the server hands the memory back (core/release_memory.h),
// so that a few such requests on different threads do not leave their sum resident.
constexpr size_t kTrimAfterBody = 256u << 10;
// What of each request body is not counted against ServerOptions::max_bodies_held.
constexpr size_t kBodyFree = 1u << 20;

const char* kJson = "application/json; charset=utf-8";

void send_error(httplib::Response& res, int status, const std::string& type, const std::string& msg,
                const std::string& param = {}) {
  res.status = status;
  res.set_content(error_body(status, type, msg, param), kJson);
}

void send_json(httplib::Response& res, const Json& j) {
  res.status = 200;
  res.set_content(dump(j), kJson);
}

// The chat page's files (webui.h): "/" and everything under /assets/.
bool is_page_path(const std::string& path) { return path == "/" || path.starts_with("/assets/"); }

// The path label of k3_http_requests_total: one of the server's routes, "/assets" for the
// page's files, else "other". Raw paths would let any client forge samples and grow the
// series set without bound.
std::string route_label(const std::string& path) {
  static const std::set<std::string> kRoutes = {"/v1/chat/completions",
                                                "/chat/completions",
                                                "/v1/completions",
                                                "/completions",
                                                "/health",
                                                "/v1/health",
                                                "/v1/models",
                                                "/models",
                                                "/metrics",
                                                "/props",
                                                "/tokenize",
                                                "/detokenize",
                                                "/apply-template"};
  if (kRoutes.count(path)) return path;
  if (path == "/slots" || path.starts_with("/slots/")) return "/slots";
  if (is_page_path(path)) return path == "/" ? path : "/assets";
  return "other";
}

// What makes a request's body boundaries ambiguous (RFC 9112 §6): where two parties could
// disagree on where the body ends, a proxy in front and this server would see different
// requests (smuggling). Such requests are refused before the body is read; "" when fine.
std::string framing_error(const httplib::Request& req) {
  const size_t n_cl = req.get_header_value_count("Content-Length");
  const size_t n_te = req.get_header_value_count("Transfer-Encoding");
  std::string cl;
  for (size_t i = 0; i < n_cl; ++i) {
    const std::string v = req.get_header_value("Content-Length", "", i);
    if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos)
      return fmt::format("Content-Length '{}' is not a decimal number", v.substr(0, 40));
    if (i > 0 && v != cl) return "the request has two different Content-Length values";
    cl = v;
  }
  if (n_te > 0) {
    if (n_cl > 0) return "the request has both Content-Length and Transfer-Encoding";
    std::string te = req.get_header_value("Transfer-Encoding");
    for (char& c : te) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (n_te > 1 || te != "chunked")
      return "Transfer-Encoding other than a single 'chunked' is not supported";
  }
  const bool has_body = n_te > 0 || (n_cl > 0 && cl.find_first_not_of('0') != std::string::npos);
  if (has_body && req.method != "POST") return fmt::format("a {} request must not carry a body", req.method);
  return {};
}

// A multipart body the library would parse itself, part by part, before any handler sees it
// (and a handler that reads a plain body from it made the library call an empty callback:
// 500 bad_function_call). No endpoint takes multipart, so such a request is refused before
// its body is read. Matched more widely than the library's own test (exact
// "multipart/form-data" after trimming): any case, any multipart subtype, every
// Content-Type header.
bool is_multipart(const httplib::Request& req) {
  const size_t n = req.get_header_value_count("Content-Type");
  for (size_t i = 0; i < n; ++i) {
    std::string v = req.get_header_value("Content-Type", "", i);
    const size_t start = v.find_first_not_of(" \t");
    if (start == std::string::npos) continue;
    v = v.substr(start, 10);
    for (char& c : v) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (v == "multipart/") return true;
  }
  return false;
}

bool constant_time_equal(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return diff == 0 && !b.empty();
}

// The connection the calling thread serves (HttpServer below): the library's handlers run on
// it, and read its deadline and head flags through this.
thread_local HttpConnection* t_conn = nullptr;

std::string late_request_message(const ConnectionLimits& l) {
  return fmt::format(
      "the request did not arrive in time: {} s for all of it, plus 1 s per {} bytes of body "
      "(--request-timeout), at most {} s without a byte",
      l.request_timeout_s, static_cast<size_t>(l.body_min_rate), l.read_timeout_s);
}

// The library's server with its per-connection loop replaced (process_and_close_socket is
// the library's hook for that; its TLS server overrides it the same way): every accepted
// socket is one HttpConnection for all its requests, so pipelined requests are each answered,
// every request has a read deadline, and a response that says "Connection: close" does close.
class HttpServer final : public httplib::Server {
 public:
  ConnectionLimits limits;
  double keep_alive_s = 5;
  size_t keep_alive_max = 100;
  std::atomic<ConnectionPool*> pool{nullptr};  // the library's task queue while it listens

 private:
  bool process_and_close_socket(socket_t sock) override {
    HttpConnection conn(sock, limits, [this] { return svr_sock_ == INVALID_SOCKET; });
    t_conn = &conn;
    std::string remote_addr, local_addr;
    int remote_port = -1, local_port = -1;
    conn.get_remote_ip_and_port(remote_addr, remote_port);
    conn.get_local_ip_and_port(local_addr, local_port);
    bool ok = false;
    const auto shed = [this] {
      const ConnectionPool* p = pool.load(std::memory_order_relaxed);
      return p != nullptr && p->starved();
    };
    for (size_t left = keep_alive_max; left > 0 && conn.wait_for_request(keep_alive_s, shed); --left) {
      conn.begin_request();
      bool closed = false;
      ok =
          process_request(conn, remote_addr, remote_port, local_addr, local_port, left == 1, closed, nullptr);
      // The library answers nothing when the request line never completes (too long, too
      // slow): say why before closing.
      if (!ok && conn.written() == 0 && conn.consumed() > 0) {
        const int status = conn.timed_out() ? 408 : 400;
        const std::string body =
            conn.timed_out()
                ? error_body(408, "timeout_error", late_request_message(limits))
                : error_body(400, "invalid_request_error", "the request line is malformed or too long");
        conn.write_all(fmt::format(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}", status,
            httplib::status_message(status), kJson, body.size(), body));
      }
      if (!ok || closed || conn.closing() || conn.timed_out()) break;
    }
    t_conn = nullptr;
    conn.close();
    return ok;
  }
};

// A request body's share of ServerOptions::max_bodies_held: its bytes past the first
// kBodyFree (a small request is never refused because of large ones), taken before they are
// read and given back when the handler is done with the body.
class BodyHold {
 public:
  BodyHold(std::atomic<size_t>& total, size_t max) : total_(total), max_(max) {}
  ~BodyHold() { total_.fetch_sub(n_); }
  BodyHold(const BodyHold&) = delete;
  BodyHold& operator=(const BodyHold&) = delete;
  // Makes the hold cover a body of `bytes`; false, taking nothing more, past the limit.
  bool cover(size_t bytes) {
    const size_t want = bytes > kBodyFree ? bytes - kBodyFree : 0;
    if (want <= n_) return true;
    const size_t more = want - n_;
    if (total_.fetch_add(more) + more > max_) {
      total_.fetch_sub(more);
      return false;
    }
    n_ = want;
    return true;
  }

 private:
  std::atomic<size_t>& total_;
  const size_t max_;
  size_t n_ = 0;
};

// The state of one SSE response, shared between the content provider calls.
struct Stream {
  std::shared_ptr<Job> job;
  ResponseMeta meta;
  bool chat = true;
  bool include_usage = false;
  bool finished = false;
  bool sent_head = false;
  Clock::time_point last_write = Clock::now();
};

}  // namespace

struct Server::Impl {
  ServerOptions opts;
  std::shared_ptr<const model::Model> model;
  std::shared_ptr<const text::Tokenizer> tok;
  std::unique_ptr<Scheduler> sched;
  HttpServer http;
  std::atomic<bool> stopped{false};
  std::atomic<bool> draining{false};
  std::atomic<bool> failed{false};
  std::string failed_why;  // set once, before `failed`
  std::once_flag http_stopped;
  std::atomic<size_t> bodies_held{0};  // what BodyHolds hold: body bytes past each first MiB
  OriginPolicy origins;
  std::unique_ptr<chat::GrammarLedger> grammars;
  int64_t started = 0;
  std::mutex count_mu;
  std::map<std::pair<std::string, int>, uint64_t> counts;  // (path, status) -> requests

  void routes();  // the parts below, in the order cpp-httplib matches them
  void set_http_limits();
  httplib::Server::HandlerResponse gate(const httplib::Request& req, httplib::Response& res);
  void set_outcome_handlers();
  void generation_routes();
  void information_routes();
  void token_routes();
  void slot_routes();
  template <class Fn>
  static auto guarded(Fn fn);
  template <class Fn>
  httplib::Server::HandlerWithContentReader with_body(Fn fn);
  size_t bodies_held_max() const {
    return opts.max_bodies_held ? opts.max_bodies_held
                                : std::max<size_t>(size_t{256} << 20, 4 * opts.max_body);
  }
  RequestLimits request_limits() const;
  text::Json image_limits_json() const;
  void run_job(BuiltRequest b, bool chat, const httplib::Request& req, httplib::Response& res);
  void stop_listening() {
    std::call_once(http_stopped, [this] { http.stop(); });
  }
  void stream(std::shared_ptr<Stream> st, httplib::Response& res);
  std::string metrics_text();
  Json models_json();
};

// The limits of the request this thread serves: the server's, plus a compile that stops when
// its client hangs up or the server drains. The probe runs at most every 20 ms (a poll() on
// the socket), however often the compile ticks.
RequestLimits Server::Impl::request_limits() const {
  RequestLimits lim = opts.limits;
  lim.grammar_ledger = grammars.get();
  lim.grammar_matcher_bytes = opts.sched.grammar_bytes;
  HttpConnection* conn = t_conn;
  lim.cancelled = [this, conn, next = Clock::now()]() mutable {
    const Clock::time_point now = Clock::now();
    if (now < next) return false;
    next = now + std::chrono::milliseconds(20);
    return draining.load() || stopped.load() || (conn && conn->peer_gone());
  };
  return lim;
}

Server::Server(std::shared_ptr<const model::Model> model, std::shared_ptr<const text::Tokenizer> tok,
               ServerOptions opts)
    : impl_(std::make_unique<Impl>()) {
  keep_little_free_memory();  // a server runs for weeks: what it frees goes back (core/release_memory.h)
  Impl& s = *impl_;
  s.opts = std::move(opts);
  s.model = std::move(model);
  s.tok = std::move(tok);
  if (!s.tok) fail("the model has no vocabulary: k3 serve needs one to render chats");
  chat::VocabRoles::of(*s.tok).require_chat();
  s.sched = std::make_unique<Scheduler>(s.model, s.tok, s.opts.sched);
  s.opts.limits.n_ctx = s.sched->n_ctx();
  s.started = static_cast<int64_t>(std::time(nullptr));
  s.origins = OriginPolicy::make(s.opts.host, s.opts.allowed_hosts, s.opts.cors_origins);
  s.grammars = std::make_unique<chat::GrammarLedger>(s.opts.max_grammar_bytes);
  s.routes();
}

Server::~Server() { stop(); }

int Server::bind() {
  Impl& s = *impl_;
  int port = s.opts.port;
  if (port == 0) {
    port = s.http.bind_to_any_port(s.opts.host);
    if (port < 0) fail("cannot listen on {} (any port)", s.opts.host);
  } else if (!s.http.bind_to_port(s.opts.host, port)) {
    fail("cannot listen on {}:{} (in use, or not an address of this machine?)", s.opts.host, port);
  }
  return port;
}

void Server::run() {
  Impl& s = *impl_;
  const bool ok = s.http.listen_after_bind();
  // The listener returns on stop(); anything else (an accept() error other than running out
  // of descriptors) must not look like a clean exit.
  if (!s.stopped) {
    const int err = errno;
    stop();
    fail("the listening socket failed{}: k3 serve stopped",
         ok ? "" : fmt::format(" ({})", std::strerror(err)));
  }
}

void Server::stop() {
  Impl& s = *impl_;
  if (s.stopped.exchange(true)) return;
  s.draining = true;
  s.sched->stop();
  s.stop_listening();
}

void Server::declare_failed(const std::string& why) {
  Impl& s = *impl_;
  if (s.failed) return;
  s.failed_why = why;
  s.failed = true;
}

void Server::shutdown() {
  Impl& s = *impl_;
  // The listener stays open while draining: cpp-httplib ends chunked (SSE) responses as soon
  // as its listening socket closes, which would cut running streams short. New requests get
  // 503 from the pre-routing handler instead.
  s.draining = true;
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(s.opts.drain_s * 1000));
  while (!s.stopped && Clock::now() < deadline) {
    SchedulerStats st = s.sched->stats();
    if (st.slots_busy == 0 && st.queued == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  stop();
}

void Server::Impl::run_job(BuiltRequest b, bool chat, const httplib::Request& req, httplib::Response& res) {
  std::shared_ptr<Job> job = b.job;
  job->deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(opts.timeout_s * 1000));
  if (chat) job->parser.call_id_prefix = random_id("call_", 12) + "_";
  sched->submit(job);  // ApiError 503 when busy
  // A cache_key made for this request ("cache_key": "new") goes back in a header (streams
  // too) and, below, in a non-streaming answer's body.
  if (!b.issued_cache_key.empty()) {
    res.set_header("X-K3-Cache-Key", b.issued_cache_key);
    res.set_header("Access-Control-Expose-Headers", "X-K3-Cache-Key");
  }
  auto with_key = [&b](Json j) {
    if (!b.issued_cache_key.empty()) j["cache_key"] = b.issued_cache_key;
    return j;
  };

  ResponseMeta meta{random_id(chat ? "chatcmpl-" : "cmpl-", 24), static_cast<int64_t>(std::time(nullptr)),
                    opts.model_alias};
  // Streaming responses notice a vanished client when a write fails or the library sees the
  // socket closed; a non-streaming one writes nothing until the end, so it watches the socket
  // while it waits.
  auto client_gone = [&] { return !b.stream && req.is_connection_closed && req.is_connection_closed(); };
  // Checked on a clock, not only when the channel is idle: a fast model keeps it busy.
  auto next_probe = Clock::now();
  auto next_event = [&](Event& e) {
    for (;;) {
      const bool got = job->channel.pop(e, std::chrono::milliseconds(100));
      if (Clock::now() >= next_probe) {
        next_probe = Clock::now() + std::chrono::milliseconds(100);
        if (client_gone()) {
          job->cancelled = true;
          return false;
        }
      }
      if (got) return true;
    }
  };
  // The first event decides between an HTTP error and a response (docs/serve.md, "Errors").
  Event ev;
  if (!next_event(ev)) return;
  if (ev.kind == Event::Kind::Error) return send_error(res, ev.status, ev.error_type, ev.message);

  if (b.stream) {
    auto st = std::make_shared<Stream>();
    st->job = job;
    st->meta = meta;
    st->chat = chat;
    st->include_usage = b.include_usage;
    return stream(st, res);
  }
  ChatFold fold;
  std::string text;
  for (;;) {
    if (!next_event(ev)) return;  // nobody to answer
    switch (ev.kind) {
      case Event::Kind::Started: break;
      case Event::Kind::Delta:
        if (chat) fold.add(ev.delta);
        else text += ev.text;
        break;
      case Event::Kind::Error: return send_error(res, ev.status, ev.error_type, ev.message);
      case Event::Kind::Done:
        if (chat) return send_json(res, with_key(chat_response(meta, fold, ev.finish_reason, ev.usage)));
        return send_json(res, with_key(completion_response(meta, text, ev.finish_reason, ev.usage)));
    }
  }
}

void Server::Impl::stream(std::shared_ptr<Stream> st, httplib::Response& res) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  auto provider = [st](size_t, httplib::DataSink& sink) -> bool {
    auto write = [&](const std::string& s) {
      if (!sink.write(s.data(), s.size())) {
        st->job->cancelled = true;  // the client went away
        return false;
      }
      st->last_write = Clock::now();
      return true;
    };
    if (st->finished) {
      sink.done();
      return true;
    }
    if (!st->sent_head) {
      st->sent_head = true;
      if (st->chat &&
          !write(sse(chat_chunk(st->meta, Json{{"role", "assistant"}, {"content", nullptr}}, ""))))
        return false;
    }
    Event ev;
    if (!st->job->channel.pop(ev, std::chrono::milliseconds(250))) {
      // A comment line keeps proxies patient and finds a vanished client early.
      if (Clock::now() - st->last_write > std::chrono::seconds(5)) return write(":\n\n");
      return true;
    }
    do {
      switch (ev.kind) {
        case Event::Kind::Started: break;
        case Event::Kind::Delta:
          if (st->chat) {
            for (const Json& c : chat_delta_chunks(st->meta, ev.delta))
              if (!write(sse(c))) return false;
          } else if (!write(sse(completion_chunk(st->meta, ev.text, "")))) {
            return false;
          }
          break;
        case Event::Kind::Error: {
          st->finished = true;
          Json err = parse_body(error_body(ev.status, ev.error_type, ev.message));
          if (!write(sse(err))) return false;
          sink.done();
          return true;
        }
        case Event::Kind::Done: {
          st->finished = true;
          Json last = st->chat ? chat_chunk(st->meta, Json::object(), ev.finish_reason)
                               : completion_chunk(st->meta, "", ev.finish_reason);
          last["timings"] = timings_json(ev.usage);
          std::string out = sse(last);
          if (st->include_usage)
            out +=
                sse(usage_chunk(st->meta, st->chat ? "chat.completion.chunk" : "text_completion", ev.usage));
          out += "data: [DONE]\n\n";
          if (!write(out)) return false;
          sink.done();
          return true;
        }
      }
    } while (st->job->channel.pop(ev, std::chrono::milliseconds(0)));
    return true;
  };
  auto releaser = [st](bool) {
    if (!st->finished) st->job->cancelled = true;
  };
  res.set_chunked_content_provider("text/event-stream", provider, releaser);
}

Json Server::Impl::image_limits_json() const {
  const image::Limits& l = opts.limits.image_limits;
  return {{"max_bytes", l.max_bytes},
          {"max_side", l.max_side},
          {"max_pixels", l.max_pixels},
          {"max_images", opts.limits.max_images},
          {"formats", Json::array({"png", "jpeg", "webp", "gif"})}};
}

Json Server::Impl::models_json() {
  const model::HParams& hp = model->hparams();
  Json meta;
  meta["vocab_type"] = 2;  // BPE, as llama-server numbers it
  meta["n_vocab"] = tok->n_vocab();
  meta["n_ctx"] = sched->n_ctx();
  meta["n_ctx_train"] = hp.n_ctx_train;
  meta["n_embd"] = hp.n_embd;
  Json m;
  m["id"] = opts.model_alias;
  m["object"] = "model";
  m["created"] = started;
  m["owned_by"] = "k3cpp";
  // What the model takes in, as llama-server lists it: "multimodal" with a vision tower.
  m["capabilities"] =
      opts.limits.vision ? Json::array({"completion", "multimodal"}) : Json::array({"completion"});
  if (opts.limits.vision)
    meta["vision"] = {{"mmproj", opts.mmproj_path}, {"image_limits", image_limits_json()}};
  m["meta"] = std::move(meta);
  Json j;
  j["object"] = "list";
  j["data"] = Json::array({m});
  return j;
}

std::string Server::Impl::metrics_text() {
  SchedulerStats s = sched->stats();
  std::string out;
  auto metric = [&](const char* name, const char* type, const char* help, double v) {
    out += fmt::format("# HELP k3_{} {}\n# TYPE k3_{} {}\nk3_{} {}\n", name, help, name, type, name, v);
  };
  metric("prompt_tokens_total", "counter", "Prompt tokens decoded.",
         static_cast<double>(s.prompt_tokens_total));
  metric("prompt_tokens_cached_total", "counter",
         "Prompt tokens restored from a slot's prompt cache instead of decoded.",
         static_cast<double>(s.prompt_tokens_cached_total));
  metric("prompt_seconds_total", "counter", "Decode time spent on prompt tokens.", s.prompt_seconds_total);
  metric("tokens_predicted_total", "counter", "Tokens generated.",
         static_cast<double>(s.predicted_tokens_total));
  metric("tokens_predicted_seconds_total", "counter", "Decode time spent on generated tokens.",
         s.predicted_seconds_total);
  metric("n_decode_total", "counter", "Batched decode steps.", static_cast<double>(s.n_decode_total));
  metric("n_tokens_max", "gauge", "Largest batch decoded, in tokens.",
         static_cast<double>(s.batch_tokens_max));
  metric("predicted_tokens_seconds", "gauge", "Generated tokens per second over the last 10 s.",
         s.predicted_tokens_per_second);
  metric("requests_processing", "gauge", "Requests holding a slot.", s.slots_busy);
  metric("requests_deferred", "gauge", "Requests waiting for a slot.", static_cast<double>(s.queued));
  metric("slots_total", "gauge", "Parallel slots (--parallel).", s.slots_total);
  metric("requests_finished_total", "counter", "Generations that ran to completion.",
         static_cast<double>(s.requests_finished));
  metric("requests_failed_total", "counter", "Generations ended by an error or a timeout.",
         static_cast<double>(s.requests_failed));
  metric("requests_cancelled_total", "counter", "Generations abandoned by their client.",
         static_cast<double>(s.requests_cancelled));
  if (s.disk) {  // the prompt cache's disk tier (--prompt-cache-dir)
    const DiskCacheStats& d = s.disk_stats;
    metric("prompt_cache_disk_hits_total", "counter", "Admissions restored from a disk entry.",
           static_cast<double>(d.hits));
    metric("prompt_cache_disk_misses_total", "counter",
           "Admissions with no reusable entry in RAM or on disk.", static_cast<double>(d.misses));
    metric("prompt_cache_disk_load_failures_total", "counter",
           "Disk entries unusable when read (prefilled instead).", static_cast<double>(d.load_failures));
    metric("prompt_cache_disk_bytes_read_total", "counter", "Bytes of state read back from disk.",
           static_cast<double>(d.bytes_read));
    metric("prompt_cache_disk_restore_seconds_total", "counter", "Time spent reading disk entries.",
           d.restore_seconds_total);
    metric("prompt_cache_disk_writes_total", "counter", "Snapshots written to disk.",
           static_cast<double>(d.writes));
    metric("prompt_cache_disk_write_errors_total", "counter", "Snapshots that could not be written.",
           static_cast<double>(d.write_errors));
    metric("prompt_cache_disk_bytes_written_total", "counter", "Bytes of state written to disk.",
           static_cast<double>(d.bytes_written));
    metric("prompt_cache_disk_write_seconds_total", "counter", "Time the writer spent writing.",
           d.write_seconds_total);
    metric("prompt_cache_disk_entries", "gauge", "State files on disk.", static_cast<double>(d.entries));
    metric("prompt_cache_disk_bytes", "gauge", "Bytes of state files on disk.", static_cast<double>(d.bytes));
  }
  // The streaming expert store's telemetry (k3 serve --ram-budget; docs/expert-store.md).
  if (const store::ExpertStore* xs = store::find_store(*model)) {
    const store::StoreStats e = xs->stats();
    metric("expert_bytes_read_total", "counter", "Bytes of routed experts read from disk.",
           static_cast<double>(e.bytes_read));
    metric("expert_requests_total", "counter", "Routed experts asked for by MoE layers.",
           static_cast<double>(e.needed));
    metric("expert_hits_total", "counter", "Experts already cached when asked for.",
           static_cast<double>(e.hits));
    metric("expert_prefetched_total", "counter",
           "Experts cached or in flight thanks to the next-layer prediction.",
           static_cast<double>(e.prefetched));
    metric("expert_misses_total", "counter", "Experts read on demand.", static_cast<double>(e.misses));
    metric("expert_predicted_total", "counter", "Experts predicted for the next layer.",
           static_cast<double>(e.predicted));
    metric("expert_predicted_used_total", "counter", "Predicted experts the layer then asked for.",
           static_cast<double>(e.predicted_used));
    metric("expert_io_wait_seconds_total", "counter", "Time the model waited for expert reads.", e.io_wait_s);
    metric("expert_io_busy_seconds_total", "counter", "Wall time with an expert read in flight.", e.busy_s);
    metric("expert_cache_slots", "gauge", "Expert cache slots (--ram-budget plan).",
           static_cast<double>(xs->plan().slots));
    metric("expert_cache_bytes", "gauge", "Expert cache size in bytes.",
           static_cast<double>(xs->plan().cache()));
  }
  out +=
      "# HELP k3_http_requests_total HTTP requests answered, by path and status.\n"
      "# TYPE k3_http_requests_total counter\n";
  std::lock_guard<std::mutex> lk(count_mu);
  for (const auto& [key, n] : counts)
    out += fmt::format("k3_http_requests_total{{path=\"{}\",status=\"{}\"}} {}\n", key.first, key.second, n);
  return out;
}

// Every handler maps client mistakes to 4xx and never lets an exception escape.
template <class Fn>
auto Server::Impl::guarded(Fn fn) {
  return [fn](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
    try {
      fn(req, res, reader);
    } catch (const ApiError& e) {
      send_error(res, e.status(), e.type(), e.what(), e.param());
    } catch (const grammar::Cancelled& e) {  // the client left, or the server drains
      send_error(res, 503, "unavailable_error", e.what());
    } catch (const k3::Error& e) {
      send_error(res, 400, "invalid_request_error", e.what());
    } catch (const nlohmann::json::exception& e) {
      send_error(res, 400, "invalid_request_error", e.what());
    } catch (const std::bad_alloc&) {
      send_error(res, 503, "unavailable_error", "out of memory");
    } catch (const std::exception& e) { send_error(res, 500, "server_error", e.what()); }
  };
}

// POST handlers read their body themselves and count it after decoding, so --max-body holds
// for every framing even without the library's own limit (cpp-httplib 0.11 enforced it only
// against Content-Length). fn gets the parsed body.
template <class Fn>
httplib::Server::HandlerWithContentReader Server::Impl::with_body(Fn fn) {
  auto inner = guarded([this, fn](const httplib::Request& req, httplib::Response& res,
                                  const httplib::ContentReader& reader) {
    // Declared first, so it runs after the body and its parse are freed (release_freed_memory).
    struct Trim {
      size_t bytes = 0;
      ~Trim() {
        if (bytes >= kTrimAfterBody) release_freed_memory();
      }
    } trim;
    BodyHold held(bodies_held, bodies_held_max());  // released after the body and its parse
    std::string body;
    // A declared length is held (and its memory reserved) before any of it is read: a body
    // is admitted whole or refused at once, not half-read. One over --max-body is left to the
    // read, which answers 413.
    const size_t length = req.get_header_value_u64("Content-Length");
    const size_t declared = length <= opts.max_body ? length : 0;
    bool over = false, busy = !held.cover(declared);
    if (!busy) body.reserve(declared);
    const bool ok = !busy && reader([&](const char* data, size_t n) {
      if (n > opts.max_body - body.size()) {
        over = true;
        return false;
      }
      if (!held.cover(body.size() + n)) {
        busy = true;
        return false;
      }
      body.append(data, n);
      return true;
    });
    // A body refused half-read is given back to the system too; the rest of it is unread.
    trim.bytes = body.size();
    if (!ok) res.set_header("Connection", "close");
    if (busy) {
      res.set_header("Retry-After", "1");
      throw ApiError(503, "unavailable_error",
                     fmt::format("the server holds {} MiB of large request bodies, its limit: retry later",
                                 bodies_held_max() >> 20));
    }
    // The library's own payload limit ends the read too (it sets 413): the same limit.
    if (!ok && res.status == 413) over = true;
    if (over)
      throw ApiError(
          413, "invalid_request_error",
          fmt::format("the request body (after any Content-Encoding) is larger than the server's limit "
                      "of {} bytes (--max-body)",
                      opts.max_body));
    if (!ok && t_conn && t_conn->timed_out())
      throw ApiError(408, "timeout_error", late_request_message(http.limits));
    if (!ok) throw ApiError(400, "invalid_request_error", "the request body could not be read");
    const Json parsed = parse_body(body);
    std::string().swap(body);  // the parse holds what the handler reads; the text can go
    fn(req, res, parsed);
  });
  return httplib::Server::HandlerWithContentReader(inner);
}

// The handlers are registered in this order, which is the order cpp-httplib matches them in.
void Server::Impl::routes() {
  set_http_limits();
  http.set_pre_routing_handler(
      [this](const httplib::Request& req, httplib::Response& res) { return gate(req, res); });
  set_outcome_handlers();
  generation_routes();
  information_routes();
  token_routes();
  slot_routes();
}

void Server::Impl::set_http_limits() {
  HttpServer& h = http;
  // The limits, all set here (docs/serve.md, "HTTP limits"): the library's payload limit holds
  // for every framing and after decoding, like the server's own count in with_body.
  h.set_payload_max_length(opts.max_body);
  h.limits = ConnectionLimits{opts.request_timeout_s, opts.body_min_rate, opts.max_head_bytes,
                              opts.read_timeout_s, opts.write_timeout_s};
  h.keep_alive_s = opts.keep_alive_s;
  h.keep_alive_max = std::max<size_t>(opts.keep_alive_max, 1);
  // What the library itself uses: the Keep-Alive header it sends, and the accepted sockets'
  // SO_RCVTIMEO/SO_SNDTIMEO (a backstop: HttpConnection waits with poll()).
  h.set_keep_alive_timeout(static_cast<time_t>(opts.keep_alive_s));
  h.set_keep_alive_max_count(h.keep_alive_max);
  h.set_read_timeout(std::chrono::milliseconds(static_cast<int64_t>(opts.read_timeout_s * 1000)));
  h.set_write_timeout(std::chrono::milliseconds(static_cast<int64_t>(opts.write_timeout_s * 1000)));
  h.set_idle_interval(0, 0);  // the listener blocks in accept(); stop() closes it
  // A connection holds its thread while it is open: a fixed pool let a few dozen slow
  // clients starve every other one, /health included. The pool grows
  // to 4x its base while no thread is free (the extra threads end after 3 s idle); beyond
  // that as many connections may wait, and the rest are closed at once. (The library's own
  // growing pool starts a thread only when none is idle, counting threads already woken for
  // a job as idle: after a burst of connections, jobs could wait with no thread coming.)
  const size_t n_threads = opts.http_threads > 0 ? static_cast<size_t>(opts.http_threads)
                                                 : static_cast<size_t>(opts.sched.n_slots) +
                                                       std::min<size_t>(opts.sched.queue_max, 32) + 4;
  h.new_task_queue = [&h, n_threads, nice = opts.http_nice] {
    auto* pool = new ConnectionPool(n_threads, 4 * n_threads, 4 * n_threads, 3, nice);
    h.pool.store(pool);  // its connections run on it, so it outlives every use of the pointer
    return pool;
  };
}

// The pre-routing handler: every request passes here once its head is read, before its body.
httplib::Server::HandlerResponse Server::Impl::gate(const httplib::Request& req, httplib::Response& res) {
  static const std::set<std::string> kPublic = {"/health", "/v1/health", "/v1/models", "/models"};
  if (t_conn) t_conn->head_done();  // what is read from here on is the body
  // Answered here, the request's body is never read: the connection must end with this
  // response, or the body would be parsed as the next request (a desync).
  auto refuse = [&](int status, const char* type, const std::string& msg) {
    res.set_header("Connection", "close");
    send_error(res, status, type, msg);
    return httplib::Server::HandlerResponse::Handled;
  };
  if (failed) return refuse(503, "unavailable_error", "the model is unavailable: " + failed_why);
  if (draining) return refuse(503, "unavailable_error", "the server is shutting down");
  if (std::string bad = framing_error(req); !bad.empty()) return refuse(400, "invalid_request_error", bad);
  if (is_multipart(req))
    return refuse(415, "invalid_request_error",
                  "multipart bodies are not accepted: every endpoint takes a JSON body "
                  "(Content-Type: application/json)");
  // Ranges are ignored (RFC 9110 lets a server answer the whole representation): the
  // library would otherwise build one copy of the body per range, on any response.
  const_cast<httplib::Request&>(req).ranges.clear();
  const std::string origin = req.get_header_value("Origin");
  switch (origins.check(req.get_header_value("Host"), origin)) {
    case OriginPolicy::Verdict::bad_host:
      return refuse(403, "permission_error",
                    "this server does not answer for that Host name (k3 serve --allowed-hosts)");
    case OriginPolicy::Verdict::bad_origin:
      return refuse(403, "permission_error", "requests from that Origin are not allowed (k3 serve --cors)");
    case OriginPolicy::Verdict::cross_allowed:
      res.set_header("Access-Control-Allow-Origin", origin);
      res.set_header("Vary", "Origin");
      if (req.method == "OPTIONS") {  // a preflight: answered before the key check, it carries none
        res.status = 204;
        res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        res.set_header("Access-Control-Allow-Headers", "Authorization, Content-Type");
        res.set_header("Access-Control-Max-Age", "600");
        return httplib::Server::HandlerResponse::Handled;
      }
      break;
    case OriginPolicy::Verdict::same_origin: break;
  }
  if (opts.api_key.empty() || kPublic.count(req.path)) return httplib::Server::HandlerResponse::Unhandled;
  // The page's files are the same for everyone; the page asks for the key itself.
  if (opts.webui && is_page_path(req.path)) return httplib::Server::HandlerResponse::Unhandled;
  std::string auth = req.get_header_value("Authorization");
  std::string key = auth.starts_with("Bearer ") ? auth.substr(7) : std::string();
  if (constant_time_equal(key, opts.api_key)) return httplib::Server::HandlerResponse::Unhandled;
  return refuse(401, "authentication_error", "Invalid API Key");
}

// What happens around every handler's answer: the connection's end, the error and exception
// bodies, and the request count.
void Server::Impl::set_outcome_handlers() {
  HttpServer& h = http;
  // Runs just before any response is written: one that ends the connection does.
  h.set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
    if (t_conn && res.get_header_value("Connection") == "close") t_conn->close_after_response();
  });
  h.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (t_conn && t_conn->timed_out())
      send_error(res, 408, "timeout_error", late_request_message(http.limits));
    else if (t_conn && t_conn->head_too_large())
      send_error(res, 431, "invalid_request_error",
                 fmt::format("the request line and headers are larger than {} bytes", opts.max_head_bytes));
    else if (res.status == 404)
      send_error(res, 404, "not_found_error", fmt::format("no endpoint {} {}", req.method, req.path));
    else if (res.status == 413)
      send_error(res, 413, "invalid_request_error",
                 fmt::format("the request body is larger than the server's limit of {} bytes (--max-body)",
                             opts.max_body));
    else if (res.status < 500)
      send_error(res, res.status, "invalid_request_error", fmt::format("bad request (HTTP {})", res.status));
    else send_error(res, res.status, "server_error", fmt::format("server error (HTTP {})", res.status));
  });
  h.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) { send_error(res, 500, "server_error", e.what()); } catch (...) {
      send_error(res, 500, "server_error", "unknown error");
    }
  });
  h.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    std::lock_guard<std::mutex> lk(count_mu);
    ++counts[{route_label(req.path), res.status}];
    log::debug("{} {} -> {}", req.method, req.path, res.status);
  });
}

void Server::Impl::generation_routes() {
  auto chat = with_body([this](const httplib::Request& req, httplib::Response& res, const Json& body) {
    run_job(build_chat_request(body, *tok, request_limits()), true, req, res);
  });
  auto completion = with_body([this](const httplib::Request& req, httplib::Response& res, const Json& body) {
    run_job(build_completion_request(body, *tok, request_limits()), false, req, res);
  });
  http.Post("/v1/chat/completions", chat);
  http.Post("/chat/completions", chat);
  http.Post("/v1/completions", completion);
  http.Post("/completions", completion);
}

void Server::Impl::information_routes() {
  HttpServer& h = http;
  auto health = [](const httplib::Request&, httplib::Response& res) {
    send_json(res, Json{{"status", "ok"}});
  };
  h.Get("/health", health);
  h.Get("/v1/health", health);
  auto models = [this](const httplib::Request&, httplib::Response& res) { send_json(res, models_json()); };
  h.Get("/v1/models", models);
  h.Get("/models", models);
  h.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_header("Process-Start-Time-Unix", std::to_string(started));
    res.set_content(metrics_text(), "text/plain; version=0.0.4");
  });
  h.Get("/props", [this](const httplib::Request&, httplib::Response& res) {
    Json j;
    j["default_generation_settings"] = {{"n_ctx", sched->n_ctx()}};
    j["total_slots"] = sched->n_slots();
    j["model_alias"] = opts.model_alias;
    j["model_path"] = opts.model_path;
    j["modalities"] = {{"vision", opts.limits.vision != nullptr}, {"audio", false}};
    j["build_info"] = std::string("k3cpp ") + k3::version();
    send_json(res, j);
  });

  if (opts.webui) {
    for (const WebAsset& a : web_assets()) {
      h.Get(std::string(a.path), [a](const httplib::Request&, httplib::Response& res) {
        res.set_header("Content-Security-Policy", std::string(web_csp()));
        res.set_header("X-Content-Type-Options", "nosniff");
        res.set_header("Referrer-Policy", "no-referrer");
        res.set_header("Cache-Control", "no-cache");
        res.set_content(a.body.data(), a.body.size(), std::string(a.content_type));
      });
    }
  }
}

void Server::Impl::token_routes() {
  http.Post("/tokenize", with_body([this](const httplib::Request&, httplib::Response& res, const Json& body) {
              res.status = 200;
              res.set_content(tokenize_body(*tok, body), kJson);
            }));
  http.Post("/detokenize",
            with_body([this](const httplib::Request&, httplib::Response& res, const Json& body) {
              res.status = 200;
              res.set_content(detokenize_body(*tok, body), kJson);
            }));
  http.Post("/apply-template",
            with_body([this](const httplib::Request&, httplib::Response& res, const Json& body) {
              send_json(res, Json{{"prompt", render_chat_prompt(body, opts.limits)}});
            }));
}

void Server::Impl::slot_routes() {
  http.Get("/slots", [this](const httplib::Request&, httplib::Response& res) {
    try {
      send_json(res, slots_listing(*sched));
    } catch (const ApiError& e) { send_error(res, e.status(), e.type(), e.what()); }
  });
  http.Post(R"(/slots/([^/]+))",
            with_body([this](const httplib::Request& req, httplib::Response& res, const Json& body) {
              send_json(res, slot_action(*sched, opts.slot_save_path, req.matches[1],
                                         req.get_param_value("action"), body));
            }));
}

}  // namespace k3::server
