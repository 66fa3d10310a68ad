// `k3 serve --ram-budget`: an in-process server over the golden small-q8_0 model with the
// streaming store installed answers a chat request and reports the store's counters on
// /metrics (and a server without the store reports none of them).
#include <gtest/gtest.h>
#include <httplib.h>

#include <string>
#include <thread>

#include "model/model.h"
#include "server/server.h"
#include "store/install.h"
#include "text/tokenizer.h"

using namespace k3;

namespace {

std::string metrics_after_one_chat(bool streaming) {
  auto m = model::Model::load(std::string(K3_TEST_DATA_DIR) + "/golden/small-q8_0.gguf");
  auto tok = text::Tokenizer::from_gguf(m->gguf());
  server::ServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  o.sched.n_slots = 1;
  o.sched.n_threads = 1;
  o.sched.n_ctx = 1024;
  store::MemoryOptions mo;
  mo.streaming = streaming;
  mo.ram_budget = store::kUnlimited;
  store::EngineShape shape;
  shape.n_ctx = o.sched.n_ctx;
  store::ExpertStore* st = store::install_store(*m, mo, shape, true);
  EXPECT_EQ(st != nullptr, streaming);
  server::Server srv(m, tok, o);
  const int port = srv.bind();
  std::thread t([&] { srv.run(); });
  httplib::Client c("127.0.0.1", port);
  c.set_read_timeout(60, 0);
  auto r = c.Post("/v1/chat/completions",
                  R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":4,"temperature":0})",
                  "application/json");
  EXPECT_TRUE(r && r->status == 200) << (r ? std::to_string(r->status) + " " + r->body : "no response");
  auto mt = c.Get("/metrics");
  srv.stop();
  t.join();
  return mt ? mt->body : std::string();
}

double value_of(const std::string& body, const std::string& name) {
  const size_t p = body.find("\n" + name + " ");
  if (p == std::string::npos) return -1;
  return std::stod(body.substr(p + name.size() + 2));
}

}  // namespace

TEST(StoreMetrics, ServeReportsExpertCounters) {
  const std::string body = metrics_after_one_chat(true);
  EXPECT_GT(value_of(body, "k3_expert_requests_total"), 0) << body;
  EXPECT_GT(value_of(body, "k3_expert_bytes_read_total"), 0);
  EXPECT_GE(value_of(body, "k3_expert_misses_total"), 1);
  EXPECT_GT(value_of(body, "k3_expert_cache_slots"), 0);
  EXPECT_NE(body.find("# TYPE k3_expert_bytes_read_total counter"), std::string::npos);
  EXPECT_NE(body.find("k3_prompt_tokens_total"), std::string::npos);  // the usual lines stay
}

TEST(StoreMetrics, MmapServerHasNoExpertLines) {
  const std::string body = metrics_after_one_chat(false);
  EXPECT_NE(body.find("k3_prompt_tokens_total"), std::string::npos);
  EXPECT_EQ(body.find("k3_expert_"), std::string::npos);
}
