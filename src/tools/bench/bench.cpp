// tools/bench: the pp/tg timing loop, the counted weight traffic and the report formats.
#include "tools/bench/bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "core/error.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "gguf/census.h"
#include "gguf/file.h"
#include "kernels/vec_dot.h"
#include "model/model.h"
#include "model/profile.h"
#include "quant/types.h"
#include "runtime/engine.h"
#include "gpu/bandwidth.h"
#include "model/gpu_products.h"
#include "store/disk_bw.h"
#include "store/engine_shape.h"
#include "store/install.h"

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
  void router_input_hint(uint32_t layer, const float* xn, int64_t n_tok) override {
    inner_->router_input_hint(layer, xn, n_tok);
  }
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

// Bytes this process has caused to be read from storage (/proc/self/io read_bytes), or 0.
uint64_t proc_read_bytes() {
  FILE* f = std::fopen("/proc/self/io", "r");
  if (!f) return 0;
  char line[128];
  unsigned long long v = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "read_bytes: %llu", &v) == 1) break;
  std::fclose(f);
  return v;
}

// CPU seconds of all our threads: on a shared machine, CPU time / threads approximates the
// wall time the test would take with the cores to itself (pool spin-waits count, so it errs
// on the slow side).
double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

bool is_expert_tensor(const std::string& name) { return name.find("_exps.") != std::string::npos; }

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

namespace {

void check_options(const BenchOptions& opt) {
  if (opt.n_prompt < 0 || opt.n_gen < 0) fail("bench: -p and -n must be ≥ 0");
  if (opt.n_prompt == 0 && opt.n_gen == 0) fail("bench: nothing to do (-p 0 and -n 0)");
  if (opt.reps < 1) fail("bench: -r must be ≥ 1 (got {})", opt.reps);
  if (opt.n_ubatch < 1) fail("bench: -ub must be ≥ 1 (got {})", opt.n_ubatch);
  if (opt.depth < 0) fail("bench: -d must be ≥ 0 (got {})", opt.depth);
}

// The model's part of the result: file, census, shape and weight accounting.
BenchResult describe_model(const model::Model& m, const std::string& path) {
  const model::HParams& hp = m.hparams();
  BenchResult r;
  r.model_path = path;
  const gguf::Census c = gguf::take_census(m.gguf());
  r.file_size = c.file_size;
  r.n_params = c.params;
  for (const auto& t : c.types) {
    if (!r.types.empty()) r.types += ", ";
    r.types += fmt::format("{} {}", quant::type_name(t.type), t.tensors);
  }
  r.n_layer = hp.n_layer;
  r.n_expert = hp.n_expert;
  r.n_expert_used = hp.n_expert_used;
  r.n_vocab = hp.n_vocab;
  r.wb = weight_bytes_of(m.gguf(), hp.n_expert, hp.n_expert_used);
  return r;
}

runtime::EngineOptions engine_options(const BenchOptions& opt, model::ForwardProfile& prof) {
  runtime::EngineOptions eo;
  if (opt.profile) eo.hooks.profile = &prof;
  eo.n_threads = opt.n_threads;
  eo.n_ctx = opt.depth + std::max(opt.n_prompt, opt.n_gen) + 1;
  eo.n_seq_max = opt.depth > 0 ? 2 : 1;  // sequence 1 holds the depth, copied before each repetition
  eo.n_ubatch = opt.n_ubatch;
  eo.cache_type = opt.f16_cache ? model::CacheType::F16 : model::CacheType::F32;
  eo.hooks.collective = opt.collective;
  return eo;
}

// Where the experts come from: the store every command installs, behind the counting source.
struct Experts {
  CountingExpertSource* counter = nullptr;
  store::ExpertStore* store = nullptr;  // with --ram-budget
};

Experts install_experts(model::Model& m, const BenchOptions& opt, const runtime::EngineOptions& eo,
                        BenchResult& r) {
  Experts x;
  x.store = store::install_store(m, opt.memory, store::shape_of(m, eo), /*quiet=*/false,
                                 [&x](std::unique_ptr<model::ExpertSource> inner) {
                                   auto counting = std::make_unique<CountingExpertSource>(std::move(inner));
                                   x.counter = counting.get();
                                   return std::unique_ptr<model::ExpertSource>(std::move(counting));
                                 });
  if (const model::GpuProducts* g = m.gpu()) {
    r.gpu_device = gpu::describe(g->device().info());
    r.gpu_weight_bytes = g->weight_bytes();
    r.gpu_copy_bw = gpu::measure_copy_bandwidth(g->device());
  }
  if (const store::ExpertStore* s = x.store) {
    r.memory_mode = store::describe(s);
    r.ram_budget = opt.memory.ram_budget;
    r.cache_bytes = s->plan().cache();
    r.cache_slots = s->plan().slots;
    r.cache_fraction = s->plan().cache_fraction();
    if (opt.measure_disk_bw)
      r.disk_bw = store::measure_disk_bw(m.gguf().path(), 1ull << 30, opt.memory.use_uring).bytes_per_s;
  }
  return x;
}

MemBwOptions membw_options(const BenchOptions& opt, const BenchResult& r) {
  MemBwOptions mo;
  mo.n_threads = r.n_threads;
  mo.buffer_bytes = opt.bw_buffer_bytes;
  return mo;
}

// The run's settings and the machine's bandwidth, once the engine knows its threads.
void describe_run(const BenchOptions& opt, runtime::Engine& eng, BenchResult& r) {
  r.n_threads = eng.pool().size();
  r.n_ubatch = opt.n_ubatch;
  r.reps = opt.reps;
  r.depth = opt.depth;
  r.f16_cache = opt.f16_cache;
  if (opt.measure_bw) {
    r.membw =
        cached_read_bandwidth(membw_options(opt, r), opt.remeasure_bw,
                              opt.bw_cache_path.empty() ? default_membw_cache_path() : opt.bw_cache_path);
  }
}

// The tests on one engine: random tokens from a fixed seed, each test's repetitions timed and
// their counted bytes, profile and disk telemetry added to the result.
class Runner {
 public:
  Runner(const BenchOptions& opt, runtime::Engine& eng, const Experts& x, model::ForwardProfile& prof,
         BenchResult& r)
      : opt_(opt),
        eng_(eng),
        x_(x),
        prof_(prof),
        r_(r),
        rng_(opt.seed),
        pick_(0, static_cast<int32_t>(eng.n_vocab()) - 1),
        cache_row_bytes_(cache_row_bytes(eng.model().hparams(), opt.f16_cache)) {}

  // -d: the context every test starts from, decoded once into sequence 1 (untimed).
  void decode_depth() {
    if (opt_.depth <= 0) return;
    std::vector<runtime::BatchToken> b(static_cast<size_t>(opt_.depth));
    for (size_t i = 0; i < b.size(); ++i) b[i] = {pick_(rng_), 1, -1, false};
    const auto t0 = clock::now();
    eng_.decode(b);
    log::info("bench: {} tokens of depth decoded in {:.1f} s", opt_.depth,
              std::chrono::duration<double>(clock::now() - t0).count());
  }

  void pp() {
    if (opt_.n_prompt > 0)
      run_test(fmt::format("pp{}", opt_.n_prompt), opt_.n_prompt, 0,
               [this](uint64_t& bytes, uint64_t& ebytes) { return pp_once(bytes, ebytes); });
  }

  void tg() {
    if (opt_.n_gen > 0)
      run_test(fmt::format("tg{}", opt_.n_gen), 0, opt_.n_gen,
               [this](uint64_t& bytes, uint64_t& ebytes) { return tg_once(bytes, ebytes); });
  }

 private:
  using clock = std::chrono::steady_clock;

  // MLA cache bytes one generated token reads at position pos: every layer's rows 0…pos.
  static uint64_t cache_row_bytes(const model::HParams& hp, bool f16) {
    return static_cast<uint64_t>(hp.n_mla_layers()) * (hp.kv_lora_rank + hp.n_rot) * (f16 ? 2u : 4u);
  }

  void start_sequence() {
    eng_.seq_clear(0);
    if (opt_.depth > 0) eng_.seq_copy(1, 0);
  }

  // One repetition of a test: returns seconds; the weight bytes it streamed go to `bytes`.
  double pp_once(uint64_t& bytes, uint64_t& ebytes) {
    start_sequence();
    std::vector<runtime::BatchToken> b(static_cast<size_t>(opt_.n_prompt));
    for (size_t i = 0; i < b.size(); ++i) b[i] = {pick_(rng_), 0, -1, i + 1 == b.size()};
    x_.counter->take();
    const auto t0 = clock::now();
    eng_.decode(b);
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    const uint64_t n_ub = static_cast<uint64_t>((opt_.n_prompt + opt_.n_ubatch - 1) / opt_.n_ubatch);
    ebytes = x_.counter->take();
    bytes = n_ub * r_.wb.trunk + static_cast<uint64_t>(opt_.n_prompt) * r_.wb.embd_row + ebytes;
    return s;
  }

  double tg_once(uint64_t& bytes, uint64_t& ebytes) {
    start_sequence();
    x_.counter->take();
    const auto t0 = clock::now();
    for (int64_t i = 0; i < opt_.n_gen; ++i) {
      const runtime::BatchToken t{pick_(rng_), 0, -1, true};
      eng_.decode({&t, 1});
    }
    const double s = std::chrono::duration<double>(clock::now() - t0).count();
    ebytes = x_.counter->take();
    bytes = static_cast<uint64_t>(opt_.n_gen) * (r_.wb.trunk + r_.wb.embd_row) + ebytes;
    return s;
  }

  // What a test's timed repetitions start from: disk and CPU counters, the store's statistics.
  struct Before {
    uint64_t io = 0;
    double cpu = 0;
    store::StoreStats store;
    uint64_t gpu_products = 0, gpu_round_trips = 0, gpu_bytes = 0;
    double gpu_seconds = 0;
  };

  template <class Once>
  void run_test(std::string name, int64_t np, int64_t ng, Once&& once) {
    BenchTest t;
    if (opt_.depth > 0) name += fmt::format(" @ d{}", opt_.depth);
    t.name = name;
    t.n_prompt = np;
    t.n_gen = ng;
    uint64_t bytes = 0, eb = 0;
    if (opt_.warmup) once(bytes, eb);  // warm-up: page in the mapping, size the buffers
    double bsum = 0, esum = 0;
    if (x_.store) x_.store->wait_idle();
    Before b;
    b.io = proc_read_bytes();
    b.cpu = process_cpu_seconds();
    b.store = x_.store ? x_.store->stats() : store::StoreStats{};
    if (const model::GpuProducts* g = eng_.model().gpu()) {
      b.gpu_products = g->products();
      b.gpu_round_trips = g->round_trips();
      b.gpu_bytes = g->bytes_read();
      b.gpu_seconds = g->seconds();
    }
    start_profile();
    for (int i = 0; i < opt_.reps; ++i) {
      const double s = once(bytes, eb);
      t.seconds.push_back(s);
      t.tps.push_back(static_cast<double>(np + ng) / s);
      bsum += static_cast<double>(bytes);
      esum += static_cast<double>(eb);
    }
    t.cpu_seconds_mean = (process_cpu_seconds() - b.cpu) / opt_.reps;
    if (opt_.profile) take_profile(t);
    summarize(t, bsum, esum);
    add_io(t, b);
    add_gpu(t, b);
    r_.tests.push_back(std::move(t));
  }

  void start_profile() {
    prof_ = {};
    if (!opt_.profile) return;
    prof_.pool = &eng_.pool();
    eng_.pool().set_wait_stats(true);
    (void)eng_.pool().take_wait_stats();
  }

  void take_profile(BenchTest& t) {
    // Dispatches outside every forward (none today) count with "other".
    const ThreadPool::WaitStats rest = eng_.pool().take_wait_stats();
    eng_.pool().set_wait_stats(false);
    double covered = 0;
    for (size_t k = 0; k < prof_.rows.size(); ++k) {
      const model::ForwardProfile::Row& row = prof_.rows[k];
      t.pool_waits += row.waits;
      t.profile.push_back({std::string(model::prof_op_name(static_cast<model::ProfOp>(k))), row.seconds,
                           row.matmul_seconds, row.matmul_bytes, row.matmul_ops, row.matmuls,
                           row.waits.dispatches, row.waits.lost_seconds()});
      covered += row.seconds;
    }
    PoolWaits other = prof_.idle_waits;
    other += rest;
    t.pool_waits += other;
    t.profile.push_back({"other", std::max(0.0, prof_.forward_seconds - covered), 0, 0, 0, 0,
                         other.dispatches, other.lost_seconds()});
    t.profile_seconds = prof_.forward_seconds;
  }

  // Means, bytes per token and per second, and their share of the machine's bandwidth.
  void summarize(BenchTest& t, double bsum, double esum) const {
    const int64_t np = t.n_prompt, ng = t.n_gen;
    mean_sd(t.tps, t.tps_mean, t.tps_sd);
    double sd_unused = 0;
    mean_sd(t.seconds, t.seconds_mean, sd_unused);
    t.weight_bytes = static_cast<uint64_t>(std::llround(bsum / opt_.reps));
    t.expert_bytes = static_cast<uint64_t>(std::llround(esum / opt_.reps));
    t.bytes_per_token = static_cast<double>(t.weight_bytes) / static_cast<double>(np + ng);
    t.bytes_per_s = t.seconds_mean > 0 ? static_cast<double>(t.weight_bytes) / t.seconds_mean : 0;
    t.bw_fraction = r_.membw.bytes_per_s > 0 ? t.bytes_per_s / r_.membw.bytes_per_s : 0;
    // Σ over the generated tokens of the rows each attends to: depth + 1 … depth + ng.
    const uint64_t rows = static_cast<uint64_t>(ng) * static_cast<uint64_t>(opt_.depth) +
                          static_cast<uint64_t>(ng) * static_cast<uint64_t>(ng + 1) / 2;
    t.cache_bytes = rows * cache_row_bytes_;
    t.cache_bytes_per_token = ng > 0 ? static_cast<double>(t.cache_bytes) / static_cast<double>(ng) : 0;
    t.total_bytes_per_s =
        t.seconds_mean > 0 ? static_cast<double>(t.weight_bytes + t.cache_bytes) / t.seconds_mean : 0;
    t.roofline_fraction = r_.membw.bytes_per_s > 0 ? t.total_bytes_per_s / r_.membw.bytes_per_s : 0;
  }

  void add_gpu(BenchTest& t, const Before& b) const {
    const model::GpuProducts* g = eng_.model().gpu();
    if (!g) return;
    const double tokens = static_cast<double>((t.n_prompt + t.n_gen) * opt_.reps);
    const double secs = g->seconds() - b.gpu_seconds,
                 bytes = static_cast<double>(g->bytes_read() - b.gpu_bytes);
    t.gpu.products_per_token = static_cast<double>(g->products() - b.gpu_products) / tokens;
    t.gpu.round_trips_per_token = static_cast<double>(g->round_trips() - b.gpu_round_trips) / tokens;
    t.gpu.bytes_per_token = bytes / tokens;
    t.gpu.seconds_per_token = secs / tokens;
    t.gpu.bytes_per_s = secs > 0 ? bytes / secs : 0;
    t.gpu.roofline_fraction = r_.gpu_copy_bw > 0 ? t.gpu.bytes_per_s / r_.gpu_copy_bw : 0;
  }

  // The disk's side of the test: /proc/self/io always, the store's statistics with --ram-budget.
  void add_io(BenchTest& t, const Before& b) const {
    StoreTelemetry& io = t.io;
    const double tokens = static_cast<double>((t.n_prompt + t.n_gen) * opt_.reps);
    const double wall = t.seconds_mean * opt_.reps;
    io.disk_read_bytes = proc_read_bytes() - b.io;
    io.disk_read_bytes_per_token = static_cast<double>(io.disk_read_bytes) / tokens;
    if (!x_.store) return;
    x_.store->wait_idle();
    const store::StoreStats d = x_.store->stats().minus(b.store);
    io.store_bytes_read = d.bytes_read;
    io.store_bytes_per_token = static_cast<double>(d.bytes_read) / tokens;
    io.hit_rate = d.hit_rate();
    io.prefetch_rate = d.needed ? static_cast<double>(d.prefetched) / static_cast<double>(d.needed) : 0;
    io.prediction_recall = d.prediction_recall();
    io.prediction_precision = d.prediction_precision();
    io.io_wait_share = wall > 0 ? d.io_wait_s / wall : 0;
    io.read_bw_busy = d.busy_bw();
    io.read_bw_wall = wall > 0 ? static_cast<double>(d.bytes_read) / wall : 0;
    io.busy_share = wall > 0 ? d.busy_s / wall : 0;
    io.disk_bw_fraction = r_.disk_bw > 0 ? io.read_bw_busy / r_.disk_bw : 0;
    io.read_bw_waiting = d.wait_bw();
    io.waiting_bw_fraction = r_.disk_bw > 0 ? io.read_bw_waiting / r_.disk_bw : 0;
  }

  const BenchOptions& opt_;
  runtime::Engine& eng_;
  Experts x_;
  model::ForwardProfile& prof_;
  BenchResult& r_;
  std::mt19937_64 rng_;
  std::uniform_int_distribution<int32_t> pick_;
  uint64_t cache_row_bytes_;
};

// A bandwidth measured in this run is measured again after the tests, and the roofline uses
// the mean: on a VM the figure drifts by ±10 % within minutes, and one reading taken before
// the tests moved the fraction by as much as the code did.
void remeasure_bandwidth(const BenchOptions& opt, BenchResult& r) {
  if (r.membw.source != "measured" || r.tests.empty()) return;
  r.mem_bw_before = r.membw.bytes_per_s;
  r.mem_bw_after = measure_read_bandwidth(membw_options(opt, r));
  r.membw.bytes_per_s = 0.5 * (r.mem_bw_before + r.mem_bw_after);
  for (BenchTest& t : r.tests) {
    t.bw_fraction = t.bytes_per_s / r.membw.bytes_per_s;
    t.roofline_fraction = t.total_bytes_per_s / r.membw.bytes_per_s;
  }
}

}  // namespace

BenchResult run_bench(const BenchOptions& opt, std::shared_ptr<model::Model> m) {
  check_options(opt);
  BenchResult r = describe_model(*m, opt.model_path);
  model::ForwardProfile prof;
  const runtime::EngineOptions eo = engine_options(opt, prof);
  const Experts x = install_experts(*m, opt, eo, r);

  runtime::Engine eng(m, eo);
  if (eng.follower()) {
    eng.follow();
    r.followed = true;
    return r;
  }
  describe_run(opt, eng, r);
  Runner run(opt, eng, x, prof, r);
  run.decode_depth();
  run.pp();
  run.tg();
  remeasure_bandwidth(opt, r);
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
                     {"avg_cpu_s", t.cpu_seconds_mean},
                     {"weight_bytes", t.weight_bytes},
                     {"expert_bytes", t.expert_bytes},
                     {"weight_bytes_per_token", t.bytes_per_token},
                     {"weight_bytes_per_s", t.bytes_per_s},
                     {"bandwidth_fraction", t.bw_fraction},
                     {"cache_bytes", t.cache_bytes},
                     {"cache_bytes_per_token", t.cache_bytes_per_token},
                     {"total_bytes_per_s", t.total_bytes_per_s},
                     {"roofline_fraction", t.roofline_fraction},
                     {"io",
                      {{"disk_read_bytes", t.io.disk_read_bytes},
                       {"disk_read_bytes_per_token", t.io.disk_read_bytes_per_token},
                       {"store_bytes_read", t.io.store_bytes_read},
                       {"store_bytes_per_token", t.io.store_bytes_per_token},
                       {"hit_rate", t.io.hit_rate},
                       {"prefetch_rate", t.io.prefetch_rate},
                       {"prediction_recall", t.io.prediction_recall},
                       {"prediction_precision", t.io.prediction_precision},
                       {"io_wait_share", t.io.io_wait_share},
                       {"read_bw_busy", t.io.read_bw_busy},
                       {"read_bw_wall", t.io.read_bw_wall},
                       {"busy_share", t.io.busy_share},
                       {"disk_bw_fraction", t.io.disk_bw_fraction},
                       {"read_bw_waiting", t.io.read_bw_waiting},
                       {"waiting_bw_fraction", t.io.waiting_bw_fraction}}},
                     {"gpu",
                      {{"products_per_token", t.gpu.products_per_token},
                       {"round_trips_per_token", t.gpu.round_trips_per_token},
                       {"weight_bytes_per_token", t.gpu.bytes_per_token},
                       {"seconds_per_token", t.gpu.seconds_per_token},
                       {"weight_bytes_per_s", t.gpu.bytes_per_s},
                       {"copy_bandwidth_fraction", t.gpu.roofline_fraction}}}});
    if (!t.profile.empty()) {
      json ops = json::array();
      for (const OpProfile& p : t.profile)
        ops.push_back({{"op", p.op},
                       {"seconds", p.seconds},
                       {"matmul_seconds", p.matmul_seconds},
                       {"matmul_bytes", p.matmul_bytes},
                       {"matmul_ops", p.matmul_ops},
                       {"matmuls", p.matmuls},
                       {"dispatches", p.dispatches},
                       {"pool_idle_seconds", p.idle_seconds}});
      const PoolWaits& w = t.pool_waits;
      tests.back()["profile"] = {{"forward_seconds", t.profile_seconds},
                                 {"ops", ops},
                                 {"pool",
                                  {{"dispatches", w.dispatches},
                                   {"thread_seconds", w.thread_seconds},
                                   {"late_start_seconds", w.late_start_seconds},
                                   {"idle_end_seconds", w.idle_end_seconds}}}};
    }
  }
  json j = {{"schema_version", 1},
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
              {"cpu_kernels", kernels::cpu_kernels()},
              {"mem_bw_bytes_per_s", r.membw.bytes_per_s},
              {"mem_bw_source", r.membw.source.empty() ? "none" : r.membw.source},
              {"mem_bw_before_bytes_per_s", r.mem_bw_before},
              {"mem_bw_after_bytes_per_s", r.mem_bw_after},
              {"mem_bw_buffer_bytes", r.membw.buffer_bytes}}},
            {"params",
             {{"n_threads", r.n_threads},
              {"n_ubatch", r.n_ubatch},
              {"reps", r.reps},
              {"depth", r.depth},
              {"cache_type", r.f16_cache ? "f16" : "f32"}}},
            {"memory",
             {{"mode", r.memory_mode},
              {"ram_budget", r.ram_budget},
              {"cache_bytes", r.cache_bytes},
              {"cache_slots", r.cache_slots},
              {"cache_fraction", r.cache_fraction},
              {"disk_bw_bytes_per_s", r.disk_bw}}},
            {"gpu",
             {{"device", r.gpu_device},
              {"weight_bytes", r.gpu_weight_bytes},
              {"copy_bw_bytes_per_s", r.gpu_copy_bw}}},
            {"tests", tests}};
  return j.dump(indent);
}

// The --profile part of the table: per test, each op's share of the forward time, its time
// per token, for its matrix products the share of its time and the weight bytes/s, and the
// thread time its pool dispatches lost (late starts + idle ends) as a share of threads × its
// time.
static std::string profile_table(const BenchResult& r) {
  std::string s;
  for (const BenchTest& t : r.tests) {
    if (t.profile.empty() || t.profile_seconds <= 0) continue;
    const double tokens = static_cast<double>((t.n_prompt + t.n_gen) * r.reps);
    s += fmt::format("\nprofile {} ({} threads, {:.3f} s of forward over {} repetitions):\n", t.name,
                     r.n_threads, t.profile_seconds, r.reps);
    s += fmt::format("| {:<20} | {:>7} | {:>10} | {:>10} | {:>11} | {:>9} | {:>12} | {:>9} |\n", "op",
                     "share", "ms/token", "in matmul", "matmul GB/s", "% bw", "matmul GOP/s", "pool idle");
    s += "| -------------------- | ------: | ---------: | ---------: | ----------: | --------: | "
         "-----------: | --------: |\n";
    for (const OpProfile& p : t.profile) {
      if (p.seconds <= 0) continue;
      const double gbs =
          p.matmul_seconds > 0 ? static_cast<double>(p.matmul_bytes) / p.matmul_seconds / 1e9 : 0;
      s += fmt::format(
          "| {:<20} | {:>6.1f}% | {:>10.4f} | {:>10} | {:>11} | {:>9} | {:>12} | {:>9} |\n", p.op,
          100 * p.seconds / t.profile_seconds, 1e3 * p.seconds / tokens,
          p.matmuls ? fmt::format("{:.1f}%", 100 * p.matmul_seconds / p.seconds) : "-",
          p.matmuls ? fmt::format("{:.2f}", gbs) : "-",
          p.matmuls && r.membw.bytes_per_s > 0 ? fmt::format("{:.1f}%", 100 * gbs * 1e9 / r.membw.bytes_per_s)
                                               : "-",
          p.matmul_seconds > 0 ? fmt::format("{:.1f}", p.matmul_ops / p.matmul_seconds / 1e9) : "-",
          p.dispatches ? fmt::format("{:.1f}%", 100 * p.idle_seconds / (r.n_threads * p.seconds)) : "-");
    }
    // Lost thread time: late starts and idle ends, per token, and as a share of what the
    // threads had over the forward time (threads × forward seconds).
    const PoolWaits& w = t.pool_waits;
    const double lost = w.lost_seconds();
    s += fmt::format(
        "pool waits: {:.0f} dispatches/token; threads idle inside them {:.3f} ms/token of thread time "
        "(waiting to start {:.3f}, after their last chunk {:.3f}) = {:.1f}% of {} threads x forward time\n",
        static_cast<double>(w.dispatches) / tokens, 1e3 * lost / tokens, 1e3 * w.late_start_seconds / tokens,
        1e3 * w.idle_end_seconds / tokens, 100 * lost / (r.n_threads * t.profile_seconds), r.n_threads);
  }
  return s;
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
                     r.membw.n_threads, r.membw.cpu,
                     r.mem_bw_after > 0
                         ? fmt::format("measured: mean of {:.2f} before and {:.2f} after the tests",
                                       r.mem_bw_before / 1e9, r.mem_bw_after / 1e9)
                         : r.membw.source);
  s += fmt::format("cpu kernels: {} (K3_CPU=avx2|avx-vnni|avx512 picks a narrower set)\n",
                   kernels::cpu_kernels());
  if (r.depth > 0) {
    s += fmt::format("depth: every test starts after {} tokens of context", r.depth);
    for (const BenchTest& t : r.tests)
      if (t.n_gen > 0)
        s += fmt::format("; generation reads {:.2f} MiB of {} MLA cache per token on average",
                         t.cache_bytes_per_token / 1048576.0, r.f16_cache ? "F16" : "F32");
    s += "\n";
  }
  s += fmt::format("\n| {:>8} | {:>7} | {:>3} | {:>18} | {:>10} | {:>8} | {:>7} |\n", "test", "threads", "ub",
                   "t/s", "MiB/token", "GB/s", "% bw");
  s += "| -------: | ------: | --: | -----------------: | ---------: | -------: | ------: |\n";
  for (const BenchTest& t : r.tests) {
    // Weights and, for generation, the MLA cache rows read: the roofline counts both.
    const double tokens = static_cast<double>(t.n_prompt + t.n_gen);
    s += fmt::format("| {:>8} | {:>7} | {:>3} | {:>18} | {:>10.2f} | {:>8.2f} | {:>7} |\n", t.name,
                     r.n_threads, r.n_ubatch, fmt::format("{:.2f} ± {:.2f}", t.tps_mean, t.tps_sd),
                     static_cast<double>(t.weight_bytes + t.cache_bytes) / tokens / 1048576.0,
                     t.total_bytes_per_s / 1e9,
                     r.membw.bytes_per_s > 0 ? fmt::format("{:.1f}%", 100 * t.roofline_fraction) : "-");
  }
  s += fmt::format("\nmemory: {}", r.memory_mode);
  if (r.cache_slots)
    s += fmt::format(" | budget {} | expert cache {} = {:.1f}% of experts", store::format_size(r.ram_budget),
                     store::format_size(r.cache_bytes), 100 * r.cache_fraction);
  if (r.disk_bw > 0) s += fmt::format(" | disk O_DIRECT sequential {:.2f} GB/s", r.disk_bw / 1e9);
  s += "\n";
  for (const BenchTest& t : r.tests) {
    const StoreTelemetry& io = t.io;
    s += fmt::format("{:>8}: disk read {:.2f} MiB/token", t.name, io.disk_read_bytes_per_token / 1048576.0);
    if (r.cache_slots)
      s += fmt::format(
          " | store read {:.2f} MiB/token at {:.3f} GB/s busy ({:.0f}% of disk), {:.3f} GB/s wall | "
          "hit {:.1f}% + prefetched {:.1f}% | prediction recall {:.1f}% precision {:.1f}% | "
          "I/O wait {:.1f}% (reading {:.3f} GB/s = {:.0f}% of disk meanwhile), busy {:.1f}%",
          io.store_bytes_per_token / 1048576.0, io.read_bw_busy / 1e9, 100 * io.disk_bw_fraction,
          io.read_bw_wall / 1e9, 100 * io.hit_rate, 100 * io.prefetch_rate, 100 * io.prediction_recall,
          100 * io.prediction_precision, 100 * io.io_wait_share, io.read_bw_waiting / 1e9,
          100 * io.waiting_bw_fraction, 100 * io.busy_share);
    s += "\n";
  }
  if (!r.gpu_device.empty()) {
    s += fmt::format("gpu: {} | {} of weights on it | copy bandwidth {:.2f} GB/s (its roofline)\n",
                     r.gpu_device, store::format_size(r.gpu_weight_bytes), r.gpu_copy_bw / 1e9);
    for (const BenchTest& t : r.tests)
      s += fmt::format(
          "{:>8}: {:.1f} GPU products/token in {:.1f} host round trips, {:.2f} MiB/token of weights at "
          "{:.2f} GB/s "
          "= {:.1f}% of the device's copy bandwidth; {:.3f} ms/token inside them (transfers, waits, "
          "products)\n",
          t.name, t.gpu.products_per_token, t.gpu.round_trips_per_token, t.gpu.bytes_per_token / 1048576.0,
          t.gpu.bytes_per_s / 1e9, 100 * t.gpu.roofline_fraction, 1e3 * t.gpu.seconds_per_token);
  }
  s += profile_table(r);
  return s;
}

}  // namespace k3::tools
