// cli/cmd_serve: `k3 serve [-m MODEL] [--host H] [--port P] [flags]` — an OpenAI-compatible
// chat server (server/server.h). Loads the model, refuses a chat template that is not K3's,
// listens (loopback by default) and runs until SIGINT/SIGTERM, then stops gracefully:
// new requests get 503, running ones may finish for --drain-timeout seconds, then what
// is left gets a 503 error; a second signal stops at once. See docs/serve.md.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <memory>
#include <optional>
#include <pthread.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "cli/commands.h"
#include "cli/image_input.h"
#include "cli/legacy_flags.h"
#include "cli/embedded_model.h"
#include "cli/dist_flags.h"
#include "cli/open_model.h"
#include "cli/prompt_cache_flags.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "core/log.h"
#include "core/read_file.h"
#include "dist/cluster.h"
#include "model/collective.h"
#include "gguf/file.h"
#include "model/model.h"
#include "runtime/engine.h"
#include "server/origin_policy.h"
#include "server/scheduler.h"
#include "server/server.h"
#include "vision/embedding_cache.h"
#include "store/engine_shape.h"
#include "store/install.h"
#include "text/chat_template.h"
#include "text/json_py.h"
#include "text/tokenizer.h"

namespace k3::cli {

namespace {

// TEST ONLY: a JSON array of strings (one script per request, in turn) or plain text (one
// script for every request).
std::vector<std::string> read_scripts(const std::string& path) {
  const std::string text = read_file(path, kNoReadLimit, "--scripted-output");
  if (auto j = text::try_parse_json_exact(text); j && j->is_array()) {
    std::vector<std::string> out;
    for (const auto& e : *j) {
      if (!e.is_string()) fail("--scripted-output {}: a JSON script file must be an array of strings", path);
      out.push_back(e.get<std::string>());
    }
    if (out.empty()) fail("--scripted-output {}: no scripts", path);
    return out;
  }
  return {text};
}

std::string file_stem(const std::string& path) {
  std::string name = path.substr(path.find_last_of('/') + 1);
  if (name.size() > 5 && name.ends_with(".gguf")) name.resize(name.size() - 5);
  return name;
}

struct ServeFlags {
  std::string model_path, scripted_path, allowed_hosts, cors, mmproj;
  size_t image_cache_mib = 256;
  server::ServerOptions o;
  EngineFlags ef;
  DistFlags dist;
  PromptCacheFlags pc;
  size_t grammar_mib = server::ServerOptions{}.sched.grammar_bytes >> 20;
  size_t grammars_mib = server::ServerOptions{}.max_grammar_bytes >> 20;
  bool verbose = false, no_prompt_cache = false, no_webui = false, no_mmproj = false;
};

void add_serve_flags(CLI::App& app, ServeFlags& f) {
  app.add_option("-m,--model", f.model_path,
                 "GGUF model (first shard); default: the embedded k3-tiny (models/k3-tiny)");
  app.add_option("--host", f.o.host, "address to listen on (default 127.0.0.1: this machine only)");
  app.add_option("--port", f.o.port, "TCP port (default 8080; 0: any free port, printed at start)");
  app.add_option("--parallel", f.o.sched.n_slots, "requests decoded together in one batch (default 1)");
  add_engine_flags(app, f.ef, "context tokens per slot");
  app.add_option("--api-key", f.o.api_key,
                 "require 'Authorization: Bearer KEY' (default: none; also K3_API_KEY)")
      ->envname("K3_API_KEY");
  app.add_option("--reasoning-budget", f.o.limits.reasoning_budget,
                 "default think-token budget per request (default -1: unlimited)");
  app.add_option("--reasoning-budget-message", f.o.limits.reasoning_budget_message,
                 "text written into the reasoning before a forced close (default none)");
  app.add_option("--timeout", f.o.timeout_s, "seconds a request may take, queueing included (default 600)");
  app.add_option(
      "--drain-timeout", f.o.drain_s,
      "on SIGINT/SIGTERM, seconds running requests may take to finish (default 30; 0: stop at once)");
  app.add_option(
      "--max-body", f.o.max_body,
      "largest request body in bytes (default 8388608; 33554432 with --mmproj, room for a 20 MiB image)");
  app.add_option("--mmproj", f.mmproj,
                 "vision tower (kimik3 mmproj GGUF): chat requests may then send images as data: URLs "
                 "(docs/vision.md)");
  app.add_flag("--no-mmproj", f.no_mmproj,
               "text only: without -m, do not load the embedded model's vision tower");
  app.add_option("--max-images", f.o.limits.max_images, "images per request (default 16)")
      ->check(CLI::Range(1, 1024));
  app.add_option(
         "--image-cache", f.image_cache_mib,
         "MiB of image embeddings kept by content, so a conversation resending a picture runs the tower "
         "once (default 256)")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--request-timeout", f.o.request_timeout_s,
                 "seconds a request's line, headers and body may take to arrive, plus 1 s per 64 KiB of body "
                 "(default 10); slower clients get 408 and are disconnected");
  app.add_option(
         "--grammar-memory", f.grammar_mib,
         "MiB one constrained request's grammar matcher may hold, per slot (default 64; counted in the "
         "--ram-budget plan); past it the request ends with a 400")
      ->check(CLI::Range(1, 65536));
  app.add_option("--grammar-ms", f.o.sched.grammar_cpu_ms,
                 "CPU milliseconds one token's grammar mask may take (default 2000); masks run on a "
                 "low-priority thread per request, so a slow grammar delays only its own request")
      ->check(CLI::Range(1, 600000));
  app.add_option("--grammars-memory", f.grammars_mib,
                 "MiB of compiled grammars all queued and running requests may hold together (default 128); "
                 "past it a constrained request gets 503")
      ->check(CLI::Range(1, 65536));
  app.add_flag("--no-prompt-cache", f.no_prompt_cache,
               "do not keep a per-slot snapshot of the last conversation for the next turn to reuse "
               "(saves one sequence state per slot)");
  add_prompt_cache_flags(app, f.pc);
  app.add_option(
      "--slot-save-path", f.o.slot_save_path,
      "directory of the files POST /slots/{id}?action=save|restore writes and reads (llama-server's "
      "API; created 0700 if missing; default: that API is off)");
  app.add_option("--queue", f.o.sched.queue_max, "requests that may wait for a slot (default 64)");
  app.add_option("-b,--batch", f.o.sched.n_batch, "prompt tokens per decode step, all slots (default 512)");
  app.add_option("--alias", f.o.model_alias, "model name in responses (default: the file name)");
  app.add_option("--http-threads", f.o.http_threads,
                 "HTTP worker threads (default: slots + queue, at most 32, + 4)");
  app.add_option("--http-nice", f.o.http_nice,
                 "how much nicer than the decode thread the HTTP workers run: request parsing then yields to "
                 "generation (0-19, default 10; 0: same priority)")
      ->check(CLI::Range(0, 19));
  app.add_option("--scripted-output", f.scripted_path,
                 "TEST ONLY: generated tokens come from this file instead of the sampler (see docs)");
  app.add_option("--allowed-hosts", f.allowed_hosts,
                 "Host names answered, comma separated, '*' any (default: localhost, 127.0.0.1, [::1] when "
                 "bound to loopback, any otherwise); guards against DNS rebinding");
  app.add_option("--cors", f.cors,
                 "origins whose web pages may call the API, comma separated (e.g. http://localhost:3000), "
                 "'*' any; requests from other origins get 403 (default: none but the server's own)");
  app.add_flag("--no-webui", f.no_webui, "do not serve the chat page at / (the API is unchanged)");
  app.add_flag("-v,--verbose", f.verbose, "log every request");
  add_dist_flags(app, f.dist);
}

// The server's options from its flags; an error text for a usage error.
std::string check_serve_flags(ServeFlags& f, store::MemoryOptions& mem) {
  f.o.sched.prompt_cache = !f.no_prompt_cache;
  f.o.sched.grammar_bytes = f.grammar_mib << 20;
  f.o.max_grammar_bytes = f.grammars_mib << 20;
  f.o.webui = !f.no_webui;
  f.o.allowed_hosts = server::split_list(f.allowed_hosts);
  f.o.cors_origins = server::split_list(f.cors);
  for (const std::string& c : f.o.cors_origins)
    if (c != "*" && c.find("://") == std::string::npos)
      return fmt::format("--cors: '{}' is not an origin (scheme://host[:port], or *)", c);
  if (f.o.port < 0 || f.o.port > 65535) return "--port must be in 0…65535";
  if (f.o.sched.n_slots < 1 || f.o.sched.n_slots > 256) return "--parallel must be in 1…256";
  if (!(f.o.timeout_s > 0)) return "--timeout must be > 0";
  if (!(f.o.drain_s >= 0)) return "--drain-timeout must be >= 0";
  if (!(f.o.request_timeout_s > 0)) return "--request-timeout must be > 0";
  if (f.o.max_body < 1024) return "--max-body must be at least 1024";
  if (f.o.sched.n_batch < 1) return "--batch must be >= 1";
  if (std::string err = apply_prompt_cache_flags(f.pc, f.o.sched); !err.empty()) return err;
  if (!f.o.slot_save_path.empty()) {
    struct stat st {};
    if (::mkdir(f.o.slot_save_path.c_str(), 0700) != 0 && errno != EEXIST)
      return fmt::format("--slot-save-path {}: cannot create it: {}", f.o.slot_save_path,
                         std::strerror(errno));
    if (::stat(f.o.slot_save_path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return fmt::format("--slot-save-path {}: not a directory", f.o.slot_save_path);
  }
  return apply(f.ef, f.o.sched, mem);
}

// Plans memory for the engine the scheduler builds (its prompt-cache snapshots are sequences
// too) plus the grammars' share, and installs the store; with --ram-budget /metrics gains
// k3_expert_* lines. Returns true on a follower rank of a distributed run, which has then
// followed rank 0's engine to its end.
bool install_for_serve(ServeFlags& f, const std::shared_ptr<model::Model>& shared,
                       store::MemoryOptions& mem) {
  model::Model& model = *shared;
  server::ServerOptions& o = f.o;
  o.sched.collective = start_dist(f.dist);
  if (o.sched.collective) mem.for_distributed_rank();
  store::EngineShape shape = store::shape_of(model, o.sched.engine_options());
  // Constrained decoding's memory: a matcher per slot, and the compiled grammars of every
  // queued and running request together (docs/grammar.md, "Limits").
  shape.app_bytes = static_cast<uint64_t>(o.sched.n_slots) * o.sched.grammar_bytes + o.max_grammar_bytes;
  shape.app_what = "grammars";
  disk_plan_row(o.sched, shape);
  shape.app_note =
      fmt::format("{} slots × {} MiB matcher (--grammar-memory) + {} MiB compiled (--grammars-memory)",
                  o.sched.n_slots, f.grammar_mib, f.grammars_mib);
  store::install_store(model, mem, shape);
  if (o.sched.collective && o.sched.collective->rank() != 0) {
    // A follower of a distributed run: the engine rank 0's scheduler drives, no HTTP here. It
    // ignores SIGINT/SIGTERM (blocked above) and leaves when rank 0, having drained its
    // requests, closes its engine.
    runtime::Engine engine(shared, o.sched.engine_options());
    follow_if_follower(engine);
    return true;
  }
  return false;
}

// Runs the server until a signal: the first drains, a second stops at once.
int run_server(const std::shared_ptr<model::Model>& model, const std::shared_ptr<const text::Tokenizer>& tok,
               const server::ServerOptions& o, const sigset_t& sigs) {
  server::Server srv(model, tok, o);
  // A distributed run's rank that died or hung: 503 for everything until the process ends.
  struct FailureHook {
    dist::Cluster* c;
    ~FailureHook() {
      if (c) c->on_failure(nullptr);
    }
  } failure_hook{dist::Cluster::current()};
  if (failure_hook.c) failure_hook.c->on_failure([&srv](const std::string& why) { srv.declare_failed(why); });
  int port = srv.bind();
  fmt::print(stderr, "k3 serve: {} on http://{}:{} | {} slots × {} tokens | timeout {} s{}{}\n",
             o.model_alias, o.host, port, o.sched.n_slots, o.sched.n_ctx, o.timeout_s,
             o.api_key.empty() ? "" : " | API key required", o.webui ? " | chat page at /" : "");
  if (o.limits.vision)
    fmt::print(stderr, "k3 serve: sees images through {} (data: URLs, at most {} per request)\n",
               o.mmproj_path, o.limits.max_images);
  std::fflush(stderr);
  // First signal: drain (in its own thread, so a second signal can cut it short).
  std::atomic<bool> finished{false};
  std::thread drainer;
  std::thread sig_thread([&] {
    int sig = 0;
    sigwait(&sigs, &sig);
    if (finished) return;
    log::info("k3 serve: signal {}, finishing running requests (up to {} s; signal again to stop now)", sig,
              o.drain_s);
    drainer = std::thread([&] { srv.shutdown(); });
    sigwait(&sigs, &sig);
    if (finished) return;
    log::info("k3 serve: signal {}, stopping now", sig);
    srv.stop();
  });
  std::string failure;
  try {
    srv.run();
  } catch (const std::exception& e) { failure = e.what(); }
  finished = true;
  pthread_kill(sig_thread.native_handle(), SIGTERM);  // wakes the waiter if it still waits
  sig_thread.join();
  if (drainer.joinable()) drainer.join();
  srv.stop();
  if (!failure.empty()) {
    fmt::print(stderr, "error: {}\n", failure);
    return 1;
  }
  fmt::print(stderr, "k3 serve: stopped\n");
  return 0;
}

}  // namespace

int cmd_serve(int argc, char** argv) {
  CLI::App app{"OpenAI-compatible chat server (see docs/serve.md)", "k3 serve"};
  ServeFlags f;
  add_serve_flags(app, f);
  LegacyFlags args(argc, argv, {{"-np", "--parallel"}});  // llama-server's spelling
  if (auto rc = parse_args(app, args.argc(), args.argv())) return *rc;
  store::MemoryOptions mem;
  if (std::string err = check_serve_flags(f, mem); !err.empty()) return usage_error(err);
  if (f.verbose) log::set_level(log::Level::debug);
  std::vector<std::string> scripts;
  if (!f.scripted_path.empty()) {
    scripts = read_scripts(f.scripted_path);
    log::warn("--scripted-output is a TEST mode: the model's answers come from {}", f.scripted_path);
  }
  OpenedModel m = open_model(f.model_path, VocabNeed::Chat, "serve");
  if (f.o.model_alias.empty() || f.o.model_alias == "k3")
    f.o.model_alias = m.embedded ? kEmbeddedModelName : file_stem(f.model_path);
  f.o.model_path = f.model_path;
  if (!scripts.empty()) f.o.sched.answers = server::scripted_answers(*m.tok, scripts);
  std::shared_ptr<vision::EmbeddingCache> vision =
      choose_vision({f.mmproj, f.no_mmproj, m.embedded}, m.model->hparams().n_embd, m.tok.get(),
                    f.image_cache_mib << 20, f.ef.threads);
  if (vision) {
    f.o.limits.vision = vision.get();
    f.o.mmproj_path = f.mmproj.empty() ? "(embedded)" : f.mmproj.substr(f.mmproj.find_last_of('/') + 1);
    if (app.count("--max-body") == 0) f.o.max_body = 32u << 20;
  }
  // Signals are taken by one thread with sigwait, so no handler runs inside library code. Blocked
  // before any thread starts (MPI's own included), so that every thread inherits the mask.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGINT);
  sigaddset(&sigs, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  if (install_for_serve(f, m.model, mem)) return 0;
  return run_server(m.model, m.tok, f.o, sigs);
}

}  // namespace k3::cli
