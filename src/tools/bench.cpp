// tools/bench: the pp/tg timing loop, the counted weight traffic and the report formats.
#include "tools/bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.h"
#include "core/thread_pool.h"
#include "gguf/census.h"
#include "gguf/file.h"
#include "model/model.h"
#include "quant/types.h"
#include "runtime/engine.h"

namespace k3::tools {
namespace {

// Forwards to the model's own store and counts the bytes of every slice handed out.
class CountingExpertSource final : public model::ExpertSource {
 public:
  explicit CountingExpertSource(std::unique_ptr<model::ExpertSource> inner) : inner_(std::move(inner)) {}
  void will_need(uint32_t layer, std::span<const int32_t> experts) override {
    inner_->will_need(layer, experts);
  }
  model::ExpertWeights acquire(uint32_t layer, int32_t expert) override {
    model::ExpertWeights w = inner_->acquire(layer, expert);
    bytes_ += view_bytes(w.gate) + view_bytes(w.up) + view_bytes(w.down);
    return w;
  }
  void release(uint32_t layer, int32_t expert) override { inner_->release(layer, expert); }
  uint64_t take() {
    const uint64_t b = bytes_;
    bytes_ = 0;
    return b;
  }

 private:
  static uint64_t view_bytes(const kernels::WeightView& v) {
    return static_cast<uint64_t>(v.rows) * quant::row_bytes(v.type, v.cols);
  }
  std::unique_ptr<model::ExpertSource> inner_;
  uint64_t bytes_ = 0;
};

bool is_expert_tensor(const std::string& name) {
  return name.find("_exps.") != std::string::npos;
}

void mean_sd(const std::vector<double>& xs, double& mean, double& sd) {
  mean = sd = 0;
  if (xs.empty()) return;
  for (double x : xs) mean += x;
  mean /= static_cast<double>(xs.size());
  if (xs.size() < 2) return;
  double s2 = 0;
  for (double x : xs) s2 += (x - mean) * (x - mean);
  sd = std::sqrt(s2 / static_cast<double>(xs.size() - 1));
}

}  // namespace

WeightBytes weight_bytes_of(const gguf::GgufFile& f, uint32_t n_expert, uint32_t n_expert_used) {
  WeightBytes wb;
  for (const gguf::TensorInfo& t : f.tensors()) {
    wb.total += t.nbytes;
    if (is_expert_tensor(t.name)) {
      wb.experts_total += t.nbytes;
      if (n_expert > 0) wb.expert_per_token += t.nbytes / n_expert * n_expert_used;
    } else if (t.name == "token_embd.weight") {
      wb.embd_row = quant::row_bytes(t.type, t.dim(0));
    } else {
      wb.trunk += t.nbytes;
    }
  }
  return wb;
}

BenchResult run_bench(const BenchOptions& opt) {
  if (opt.n_prompt < 0 || opt.n_gen < 0) fail("bench: -p and -n must be ≥ 0");
  if (opt.n_prompt == 0 && opt.n_gen == 0) fail("bench: nothing to do (-p 0 and -n 0)");
  if (opt.reps < 1) fail("bench: -r must be ≥ 1 (got {})", opt.reps);
  if (opt.n_ubatch < 1) fail("bench: -ub must be ≥ 1 (got {})", opt.n_ubatch);

  std::shared_ptr<model::Model> m = model::Model::load(opt.model_path);
  const model::HParams& hp = m->hparams();
  BenchResult r;
  r.model_path = opt.model_path;
  {
    const gguf::Census c = gguf::take_census(m->gguf());
    r.file_size = c.file_size;
    r.n_params = c.params;
    for (const auto& t : c.types) {
      if (!r.types.empty()) r.types += ", ";
      r.types += fmt::format("{} {}", quant::type_name(t.type), t.tensors);
    }
  }
  r.n_layer = hp.n_layer;
  r.n_expert = hp.n_expert;
  r.n_expert_used = hp.n_expert_used;
  r.n_vocab = hp.n_vocab;
  r.wb = weight_bytes_of(m->gguf(), hp.n_expert, hp.n_expert_used);

  auto counting = std::make_unique<CountingExpertSource>(
      model::make_mapped_expert_source(m->gguf(), hp));
  CountingExpertSource* counter = counting.get();
  m->set_expert_source(std::move(counting));

  runtime::EngineOptions eo;
  eo.n_threads = opt.n_threads;
  eo.n_ctx = std::max(opt.n_prompt, opt.n_gen) + 1;
  eo.n_ubatch = opt.n_ubatch;
  runtime::Engine eng(m, eo);
  r.n_threads = eng.pool().size();
  r.n_ubatch = opt.n_ubatch;
  r.reps = opt.reps;

  if (opt.measure_bw) {
    MemBwOptions mo;
    mo.n_threads = r.n_threads;
    mo.buffer_bytes = opt.bw_buffer_bytes;
    r.membw = cached_read_bandwidth(mo, opt.remeasure_bw,
                                    opt.bw_cache_path.empty() ? default_membw_cache_path()
                                                              : opt.bw_cache_path);
  }

  std::mt19937_64 rng(opt.seed);
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(eng.n_vocab()) - 1);
  using clock = std::chrono::steady_clock;

  // One repetition of a test: returns seconds; the weight bytes it streamed go to `bytes`.
  auto run_pp = [&](uint64_t& bytes, uint64_t& ebytes) {
    eng.seq_clear(0);
    std::vector<runtime::BatchToken> b(static_cast<size_t>(opt.n_prompt));
    for (size_t i = 0; i < b.size(); ++i) b[i] = {pick(rng), 0, -1, i + 1 == b.size()};
    counter->take();
    const auto t0 = clock::now();
    eng.decode(b);
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    const uint64_t n_ub = static_cast<uint64_t>((opt.n_prompt + opt.n_ubatch - 1) / opt.n_ubatch);
    ebytes = counter->take();
    bytes = n_ub * r.wb.trunk + static_cast<uint64_t>(opt.n_prompt) * r.wb.embd_row + ebytes;
    return s;
  };
  auto run_tg = [&](uint64_t& bytes, uint64_t& ebytes) {
    eng.seq_clear(0);
    counter->take();
    const auto t0 = clock::now();
    for (int64_t i = 0; i < opt.n_gen; ++i) {
      const runtime::BatchToken t{pick(rng), 0, -1, true};
      eng.decode({&t, 1});
    }
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    ebytes = counter->take();
    bytes = static_cast<uint64_t>(opt.n_gen) * (r.wb.trunk + r.wb.embd_row) + ebytes;
    return s;
  };

  auto run_test = [&](const std::string& name, int64_t np, int64_t ng, auto&& once) {
    BenchTest t;
    t.name = name;
    t.n_prompt = np;
    t.n_gen = ng;
    uint64_t bytes = 0, eb = 0;
    once(bytes, eb);  // warm-up: page in the mapping, size the buffers
    double bsum = 0, esum = 0;
    for (int i = 0; i < opt.reps; ++i) {
      const double s = once(bytes, eb);
      t.seconds.push_back(s);
      t.tps.push_back(static_cast<double>(np + ng) / s);
      bsum += static_cast<double>(bytes);
      esum += static_cast<double>(eb);
    }
    mean_sd(t.tps, t.tps_mean, t.tps_sd);
    double sd_unused = 0;
    mean_sd(t.seconds, t.seconds_mean, sd_unused);
    t.weight_bytes = static_cast<uint64_t>(std::llround(bsum / opt.reps));
    t.expert_bytes = static_cast<uint64_t>(std::llround(esum / opt.reps));
    t.bytes_per_token = static_cast<double>(t.weight_bytes) / static_cast<double>(np + ng);
    t.bytes_per_s = t.seconds_mean > 0 ? static_cast<double>(t.weight_bytes) / t.seconds_mean : 0;
    t.bw_fraction = r.membw.bytes_per_s > 0 ? t.bytes_per_s / r.membw.bytes_per_s : 0;
    r.tests.push_back(std::move(t));
  };

  if (opt.n_prompt > 0) run_test(fmt::format("pp{}", opt.n_prompt), opt.n_prompt, 0, run_pp);
  if (opt.n_gen > 0) run_test(fmt::format("tg{}", opt.n_gen), 0, opt.n_gen, run_tg);
  return r;
}

std::string bench_json(const BenchResult& r, int indent) {
  using nlohmann::json;
  json tests = json::array();
  for (const BenchTest& t : r.tests) {
    tests.push_back({{"name", t.name},
                     {"n_prompt", t.n_prompt},
                     {"n_gen", t.n_gen},
                     {"samples_s", t.seconds},
                     {"samples_ts", t.tps},
                     {"avg_ts", t.tps_mean},
                     {"stddev_ts", t.tps_sd},
                     {"avg_s", t.seconds_mean},
                     {"weight_bytes", t.weight_bytes},
                     {"expert_bytes", t.expert_bytes},
                     {"weight_bytes_per_token", t.bytes_per_token},
                     {"weight_bytes_per_s", t.bytes_per_s},
                     {"bandwidth_fraction", t.bw_fraction}});
  }
  json j = {
      {"schema_version", 1},
      {"model",
       {{"path", r.model_path},
        {"file_size", r.file_size},
        {"n_params", r.n_params},
        {"types", r.types},
        {"n_layer", r.n_layer},
        {"n_vocab", r.n_vocab},
        {"n_expert", r.n_expert},
        {"n_expert_used", r.n_expert_used},
        {"weight_bytes",
         {{"total", r.wb.total},
          {"trunk", r.wb.trunk},
          {"embd_row", r.wb.embd_row},
          {"experts_total", r.wb.experts_total},
          {"experts_per_token", r.wb.expert_per_token},
          {"per_token", r.wb.per_token()}}}}},
      {"machine",
       {{"cpu", r.membw.cpu.empty() ? cpu_model_name() : r.membw.cpu},
        {"mem_bw_bytes_per_s", r.membw.bytes_per_s},
        {"mem_bw_source", r.membw.source.empty() ? "none" : r.membw.source},
        {"mem_bw_buffer_bytes", r.membw.buffer_bytes}}},
      {"params", {{"n_threads", r.n_threads}, {"n_ubatch", r.n_ubatch}, {"reps", r.reps}}},
      {"tests", tests}};
  return j.dump(indent);
}

std::string bench_table(const BenchResult& r) {
  std::string s;
  s += fmt::format("model: {} ({:.2f} GiB, {} params; {})\n", r.model_path,
                   static_cast<double>(r.file_size) / (1 << 30), gguf::with_commas(r.n_params), r.types);
  s += fmt::format(
      "weights read per generated token: {:.2f} MiB (trunk {:.2f} MiB + routed experts {:.2f} MiB, "
      "{} of {} per MoE layer)\n",
      r.wb.per_token() / 1048576.0, (r.wb.trunk + r.wb.embd_row) / 1048576.0,
      r.wb.expert_per_token / 1048576.0, r.n_expert_used, r.n_expert);
  if (r.membw.bytes_per_s > 0)
    s += fmt::format("memory bandwidth: {:.2f} GB/s ({} threads, {}; {})\n", r.membw.bytes_per_s / 1e9,
                     r.membw.n_threads, r.membw.cpu, r.membw.source);
  s += fmt::format("\n| {:>8} | {:>7} | {:>3} | {:>18} | {:>10} | {:>8} | {:>7} |\n", "test", "threads",
                   "ub", "t/s", "MiB/token", "GB/s", "% bw");
  s += "| -------: | ------: | --: | -----------------: | ---------: | -------: | ------: |\n";
  for (const BenchTest& t : r.tests) {
    s += fmt::format("| {:>8} | {:>7} | {:>3} | {:>18} | {:>10.2f} | {:>8.2f} | {:>7} |\n", t.name,
                     r.n_threads, r.n_ubatch, fmt::format("{:.2f} ± {:.2f}", t.tps_mean, t.tps_sd),
                     t.bytes_per_token / 1048576.0, t.bytes_per_s / 1e9,
                     r.membw.bytes_per_s > 0 ? fmt::format("{:.1f}%", 100 * t.bw_fraction) : "-");
  }
  return s;
}

}  // namespace k3::tools
