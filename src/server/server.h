// server/server: `k3 serve` — an OpenAI-compatible HTTP server over one loaded model.
// Contract: construction loads nothing (the caller passes the model and its tokenizer) and
// starts the scheduler thread; bind() opens host:port (port 0 picks a free one) and returns
// the port; run() serves until stop() (and throws k3::Error if the listener fails otherwise) (thread-safe, idempotent; what is still running gets a
// 503 error) or shutdown() (graceful: new requests get 503 at once, requests already
// accepted run to completion for up to opts.drain_s seconds, then stop()). A non-streaming request whose client hangs up is
// cancelled like a streaming one, freeing its slot. Endpoints, request fields and error shapes are documented in docs/serve.md
// (spec §4). Loopback is the default bind. With an API key every endpoint except /health
// and /v1/models (and the chat page's files, which hold no data) requires
// `Authorization: Bearer KEY`.
// scripted_outputs is TEST-ONLY: when non-empty, request i's generated tokens are not
// sampled but taken from scripted_outputs[i % n] (text with the XTML markers written out,
// tokenized with the model's tokenizer, special tokens parsed) and fed through the model and
// the output parser as if sampled; after the script the turn ends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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
  int port = 8080;                       // 0: any free port
  std::string api_key;                   // empty: no authentication
  double timeout_s = 600;                // per request, queueing included
  double drain_s = 30;                   // shutdown(): how long running requests may finish
  size_t max_body = 8u << 20;            // request body bytes
  int http_threads = 0;                  // 0: enough for every slot and queued request
  std::string model_alias = "k3";
  std::string model_path;
  bool webui = true;                     // the chat page at / (docs/serve.md)
  std::vector<std::string> allowed_hosts;  // --allowed-hosts (empty: the default, origin_policy.h)
  std::vector<std::string> cors_origins;   // --cors
  SchedulerOptions sched;
  RequestLimits limits;                  // n_ctx is taken from the engine
  std::vector<std::string> scripted_outputs;  // TEST ONLY (see above)
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

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace k3::server
