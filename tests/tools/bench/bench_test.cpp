// k3 bench: the JSON shape and sane numbers on a golden model (no timing assertions), the
// weight-byte accounting against the GGUF tensor table, and the bandwidth cache.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tools/eval/golden_io.h"
#include "gguf/file.h"
#include "quant/types.h"
#include "model/model.h"
#include "tools/bench/bench.h"
#include "tools/bench/membw.h"

namespace k3::tools {
namespace {

namespace fs = std::filesystem;

std::string temp_cache() {
  return (fs::temp_directory_path() / ("k3-membw-test." + std::to_string(::getpid()) + ".json")).string();
}

// A quick bench of the golden small model: pp n_prompt, tg4, 2 threads, 2 repetitions.
BenchOptions small_bench(int64_t n_prompt) {
  BenchOptions o;
  o.model_path = testing::golden_path("small-q8_0.gguf");
  o.n_prompt = n_prompt;
  o.n_gen = 4;
  o.n_threads = 2;
  o.reps = 2;
  return o;
}

TEST(Bench, JsonShapeAndSaneNumbers) {
  const std::string cache = temp_cache();
  BenchOptions o = small_bench(32);
  o.n_ubatch = 16;
  o.bw_cache_path = cache;
  o.bw_buffer_bytes = 32 << 20;  // keep the test quick; real runs use ≫ LLC
  const BenchResult r = run_bench(o, model::Model::load(o.model_path));
  const auto j = nlohmann::json::parse(bench_json(r));

  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["model"]["n_expert"], 8);
  EXPECT_EQ(j["model"]["n_expert_used"], 3);
  EXPECT_EQ(j["model"]["file_size"], 13494624);
  EXPECT_GT(j["machine"]["mem_bw_bytes_per_s"].get<double>(), 0);
  EXPECT_EQ(j["machine"]["mem_bw_source"], "measured");
  // Measured in this run: again after the tests, and the roofline is the mean of the two.
  const double before = j["machine"]["mem_bw_before_bytes_per_s"].get<double>();
  const double after = j["machine"]["mem_bw_after_bytes_per_s"].get<double>();
  EXPECT_GT(before, 0);
  EXPECT_GT(after, 0);
  EXPECT_DOUBLE_EQ(j["machine"]["mem_bw_bytes_per_s"].get<double>(), 0.5 * (before + after));
  EXPECT_EQ(j["params"]["n_threads"], 2);
  EXPECT_EQ(j["params"]["n_ubatch"], 16);
  const auto& wb = j["model"]["weight_bytes"];
  EXPECT_EQ(wb["per_token"].get<uint64_t>(), wb["trunk"].get<uint64_t>() + wb["embd_row"].get<uint64_t>() +
                                                 wb["experts_per_token"].get<uint64_t>());

  ASSERT_EQ(j["tests"].size(), 2u);
  EXPECT_EQ(j["tests"][0]["name"], "pp32");
  EXPECT_EQ(j["tests"][1]["name"], "tg4");
  for (const auto& t : j["tests"]) {
    EXPECT_EQ(t["samples_ts"].size(), 2u);
    EXPECT_EQ(t["samples_s"].size(), 2u);
    for (const auto& v : t["samples_ts"]) EXPECT_GT(v.get<double>(), 0);
    EXPECT_GT(t["avg_ts"].get<double>(), 0);
    EXPECT_GE(t["stddev_ts"].get<double>(), 0);
    EXPECT_GT(t["weight_bytes_per_s"].get<double>(), 0);
    EXPECT_GT(t["bandwidth_fraction"].get<double>(), 0);
  }
  // Generation reads exactly n_expert_used slices per MoE layer per token: the counted bytes
  // equal the static per-token figure.
  const auto& tg = j["tests"][1];
  EXPECT_DOUBLE_EQ(tg["weight_bytes_per_token"].get<double>(), double(wb["per_token"].get<uint64_t>()));
  // A 16-token micro-batch activates at least n_expert_used and at most all 8 experts per layer.
  const auto& pp = j["tests"][0];
  EXPECT_GT(pp["expert_bytes"].get<uint64_t>(), 0u);
  EXPECT_LE(pp["expert_bytes"].get<uint64_t>(), 2 * wb["experts_total"].get<uint64_t>());  // 2 ubatches
  EXPECT_GE(pp["expert_bytes"].get<uint64_t>(), 2 * wb["experts_per_token"].get<uint64_t>());

  // The table names both tests and both bandwidth readings; the cache now answers with the
  // reading taken before the tests, without measuring.
  const std::string table = bench_table(r);
  EXPECT_NE(table.find("pp32"), std::string::npos);
  EXPECT_NE(table.find("tg4"), std::string::npos);
  EXPECT_NE(table.find("before and"), std::string::npos);
  MemBwOptions mo;
  mo.n_threads = 2;
  const MemBw again = cached_read_bandwidth(mo, false, cache);
  EXPECT_EQ(again.source, "cache");
  EXPECT_EQ(again.bytes_per_s, r.mem_bw_before);
  fs::remove(cache);
}

// --profile: one row per op class plus "other", in the table and the JSON; the products
// counted in decode read no more than the weights the bench counts, and the experts' row
// at least the routed experts' bytes.
TEST(Bench, ProfileRowsAccountForTheForwardTime) {
  BenchOptions o = small_bench(16);
  o.measure_bw = false;
  o.profile = true;
  const BenchResult r = run_bench(o, model::Model::load(o.model_path));
  ASSERT_EQ(r.tests.size(), 2u);
  for (const BenchTest& t : r.tests) {
    ASSERT_EQ(t.profile.size(), 9u) << t.name;
    EXPECT_EQ(t.profile.back().op, "other");
    double sum = 0;
    for (const OpProfile& p : t.profile) sum += p.seconds;
    EXPECT_NEAR(sum, t.profile_seconds, 1e-6 + 1e-9 * t.profile_seconds) << t.name;
    EXPECT_LE(t.profile_seconds, t.seconds_mean * o.reps * (1 + 1e-6)) << t.name;
    // two threads: the products are dispatched to the pool, whose lost time is a part of it
    EXPECT_GT(t.pool_waits.dispatches, 0u) << t.name;
    EXPECT_LE(t.pool_waits.late_start_seconds + t.pool_waits.idle_end_seconds, t.pool_waits.thread_seconds)
        << t.name;
    EXPECT_LE(t.pool_waits.thread_seconds, 2 * t.seconds_mean * o.reps * (1 + 1e-6)) << t.name;
    // The waits split by op: every dispatch lands in exactly one row, the ops with products
    // made some, and no op lost more than its two threads' time.
    uint64_t dispatches = 0;
    double idle = 0;
    for (const OpProfile& p : t.profile) {
      dispatches += p.dispatches;
      idle += p.idle_seconds;
      if (p.matmuls > 0) { EXPECT_GT(p.dispatches, 0u) << t.name << " " << p.op; }
      EXPECT_LE(p.idle_seconds, 2 * p.seconds * (1 + 1e-6) + 1e-6) << t.name << " " << p.op;
    }
    EXPECT_EQ(dispatches, t.pool_waits.dispatches) << t.name;
    EXPECT_NEAR(idle, t.pool_waits.late_start_seconds + t.pool_waits.idle_end_seconds, 1e-9) << t.name;
  }
  const BenchTest& tg = r.tests[1];
  uint64_t mm_bytes = 0, experts = 0;
  for (const OpProfile& p : tg.profile) {
    mm_bytes += p.matmul_bytes;
    if (p.op == "MoE experts") experts = p.matmul_bytes;
  }
  EXPECT_LE(mm_bytes, tg.weight_bytes * static_cast<uint64_t>(o.reps));
  EXPECT_GT(mm_bytes, tg.weight_bytes * static_cast<uint64_t>(o.reps) / 2);
  EXPECT_GE(experts, tg.expert_bytes * static_cast<uint64_t>(o.reps));
  const std::string table = bench_table(r);
  EXPECT_NE(table.find("profile tg4"), std::string::npos);
  EXPECT_NE(table.find("| KDA "), std::string::npos);
  const auto j = nlohmann::json::parse(bench_json(r));
  EXPECT_EQ(j["tests"][1]["profile"]["ops"].size(), 9u);
  EXPECT_EQ(j["tests"][1]["profile"]["ops"][2]["op"], "KDA");
  EXPECT_EQ(j["tests"][1]["profile"]["pool"]["dispatches"], tg.pool_waits.dispatches);
  EXPECT_NE(table.find("pool waits: "), std::string::npos);
  EXPECT_NE(table.find("pool idle |"), std::string::npos);
  EXPECT_EQ(j["tests"][1]["profile"]["ops"][2]["dispatches"], tg.profile[2].dispatches);
}

// -d: each test starts after `depth` tokens; generation's MLA cache reads are counted:
// token i (1…n_gen) reads depth + i rows of every MLA layer (kv_lora_rank + n_rot floats in
// the F32 cache), so 4 tokens read 4·20 + 10 rows after 20 tokens of depth, 10 without.
TEST(Bench, DepthCountsTheCacheGenerationReads) {
  BenchOptions o = small_bench(8);
  o.measure_bw = false;
  o.depth = 20;
  const BenchResult r = run_bench(o, model::Model::load(o.model_path));
  ASSERT_EQ(r.tests.size(), 2u);
  EXPECT_EQ(r.tests[0].name, "pp8 @ d20");
  EXPECT_EQ(r.tests[1].name, "tg4 @ d20");
  EXPECT_EQ(r.tests[0].cache_bytes, 0u);
  const uint64_t row = r.tests[1].cache_bytes / (4 * 20 + 4 * 5 / 2);  // Σ (20 + i), i = 1…4
  EXPECT_EQ(r.tests[1].cache_bytes, row * 90);
  EXPECT_GT(row, 0u);
  EXPECT_EQ(row % 4, 0u);
  BenchOptions flat = o;
  flat.depth = 0;
  const BenchResult r0 = run_bench(flat, model::Model::load(flat.model_path));
  EXPECT_EQ(r0.tests[1].cache_bytes, row * (4 * 5 / 2));
  EXPECT_EQ(r0.tests[1].name, "tg4");
  EXPECT_EQ(nlohmann::json::parse(bench_json(r))["params"]["depth"], 20);
  EXPECT_EQ(nlohmann::json::parse(bench_json(r))["params"]["cache_type"], "f32");
  // An F16 cache: the same rows at 2 bytes a value, half the bytes.
  BenchOptions half = o;
  half.f16_cache = true;
  const BenchResult rh = run_bench(half, model::Model::load(half.model_path));
  EXPECT_EQ(rh.tests[1].cache_bytes, row / 2 * 90);
  EXPECT_EQ(nlohmann::json::parse(bench_json(rh))["params"]["cache_type"], "f16");
  EXPECT_NE(bench_table(rh).find("of F16 MLA cache"), std::string::npos);
  o.depth = -1;
  EXPECT_THROW(run_bench(o, model::Model::load(o.model_path)), Error);
}

TEST(Bench, WeightBytesSplitTheTensorTable) {
  auto f = gguf::GgufFile::open(testing::golden_path("small-q8_0.gguf"));
  const WeightBytes wb = weight_bytes_of(*f, 8, 3);
  uint64_t total = 0, experts = 0;
  for (const auto& t : f->tensors()) {
    total += t.nbytes;
    if (t.name.find("_exps.") != std::string::npos) experts += t.nbytes;
  }
  const auto* embd = f->tensor("token_embd.weight");
  ASSERT_NE(embd, nullptr);
  EXPECT_EQ(wb.total, total);
  EXPECT_EQ(wb.experts_total, experts);
  EXPECT_EQ(wb.trunk + embd->nbytes + experts, total);
  EXPECT_EQ(wb.embd_row * embd->dim(1), embd->nbytes);
  EXPECT_EQ(wb.expert_per_token * 8, experts * 3);
}

TEST(MemBw, CacheIsKeyedAndCorruptionIsIgnored) {
  const std::string cache = temp_cache();
  {
    std::ofstream f(cache);
    f << "{ not json";
  }
  MemBwOptions mo;
  mo.n_threads = 1;
  mo.buffer_bytes = 8 << 20;
  mo.runs = 2;
  const MemBw a = cached_read_bandwidth(mo, false, cache);
  EXPECT_EQ(a.source, "measured");
  EXPECT_GT(a.bytes_per_s, 1e8);  // any machine streams more than 100 MB/s
  const auto j = nlohmann::json::parse(std::ifstream(cache));
  EXPECT_EQ(j.size(), 1u);
  EXPECT_EQ(cached_read_bandwidth(mo, false, cache).source, "cache");
  EXPECT_EQ(cached_read_bandwidth(mo, true, cache).source, "measured");
  mo.n_threads = 2;  // a new key
  EXPECT_EQ(cached_read_bandwidth(mo, false, cache).source, "measured");
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(cache)).size(), 2u);
  fs::remove(cache);
}

}  // namespace
}  // namespace k3::tools
