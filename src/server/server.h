// server/server: `k3 serve` — an OpenAI-compatible HTTP server over one loaded model.
// Contract: construction loads nothing (the caller passes the model and its tokenizer) and
// starts the scheduler thread; bind() opens host:port (port 0 picks a free one) and returns
// the port; run() serves until stop() (and throws k3::Error if the listener fails otherwise) (thread-safe,
// idempotent; what is still running gets a 503 error) or shutdown() (graceful: new requests get 503 at once,
// requests already accepted run to completion for up to opts.drain_s seconds, then stop()). A non-streaming
// request whose client hangs up is cancelled like a streaming one, freeing its slot. HTTP runs on the
// vendored cpp-httplib with the server's own connection loop (server/http_connection.h: read deadlines,
// pipelining). Endpoints, request fields and error shapes are documented in docs/serve.md
// (docs/serve.md). Loopback is the default bind. With an API key every endpoint except /health
// and /v1/models (and the chat page's files, which hold no data) requires
// `Authorization: Bearer KEY`. Tests replace sampling through SchedulerOptions::answers
// (server/answer_source.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "server/answer_source.h"
#include "server/request_parse.h"
#include "server/scheduler.h"

namespace k3::model {
class Model;
}
namespace k3::text {
class Tokenizer;
}

namespace k3::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;             // 0: any free port
  std::string api_key;         // empty: no authentication
  double timeout_s = 600;      // per request, queueing included
  double drain_s = 30;         // shutdown(): how long running requests may finish
  size_t max_body = 8u << 20;  // request body bytes, however framed or encoded
  // Request body bytes past the first MiB of each that all requests together may hold (from
  // before the body is read until its handler is done); past it a body gets a 503 (Retry-After).
  // 0: max(256 MiB, 4 x max_body). A slow client keeps its body in memory for as long as the
  // request deadline lets it (minutes for a large one), so without this the bound was the
  // worker threads (up to 4 x http_threads) times max_body.
  size_t max_bodies_held = 0;
  // HTTP limits (docs/serve.md, "HTTP limits"; the per-line ones are compile-time in the
  // library, see CMakeLists.txt). A request's line, headers and body must arrive within
  // request_timeout_s of its first byte, plus 1 s per body_min_rate bytes, else 408 and the
  // connection closes; its request line and headers within max_head_bytes, else 400.
  double request_timeout_s = 10;     // --request-timeout
  double body_min_rate = 64 * 1024;  // bytes/s
  size_t max_head_bytes = 64 * 1024;
  double read_timeout_s = 5;    // longest wait for a request's next bytes
  double write_timeout_s = 5;   // longest wait for the client to take response bytes
  int keep_alive_s = 5;         // an idle connection (or a new one that sends nothing) closes after this
  size_t keep_alive_max = 100;  // requests per connection
  // HTTP worker threads kept running (0: slots + min(queue, 32) + 4). One serves one
  // connection at a time; under load the pool grows to 4x this, then as many connections more
  // may wait for a thread, and beyond that a connection is closed unanswered.
  int http_threads = 0;
  // How much nicer than the process the HTTP workers run (--http-nice; 0: the same). Reading,
  // inflating and parsing a request is work any client can ask for; the decode thread's work
  // is what every admitted client waits on. At +10 a worker competing with the decode thread
  // gets about a tenth of its CPU share, so a client flooding the parser costs the others less.
  int http_nice = 10;
  std::string model_alias = "k3";
  std::string model_path;
  std::string mmproj_path;                 // the vision tower's file (limits.vision set), for /v1/models
  bool webui = true;                       // the chat page at / (docs/serve.md)
  std::vector<std::string> allowed_hosts;  // --allowed-hosts (empty: the default, origin_policy.h)
  std::vector<std::string> cors_origins;   // --cors
  SchedulerOptions sched;
  // --slot-save-path: the directory of POST /slots/{id}?action=save|restore files (empty: off).
  std::string slot_save_path;
  RequestLimits limits;  // n_ctx is taken from the engine
  // Compiled grammars held by queued and running requests, all together (chat/grammar_ledger.h);
  // past it a constrained request is a 503. Each grammar alone is at most GbnfLimits::max_bytes.
  size_t max_grammar_bytes = 128u << 20;
};

class Server {
 public:
  Server(std::shared_ptr<const model::Model> model, std::shared_ptr<const text::Tokenizer> tok,
         ServerOptions opts);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int bind();
  void run();
  void stop();
  void shutdown();
  // The engine can't go on (a rank of a distributed run died or hung): every request,
  // /health included, gets 503 with this reason from now on. Safe from any thread.
  void declare_failed(const std::string& why);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace k3::server
