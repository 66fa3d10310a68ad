// tools/bench: llama-bench-style throughput of a K3 model — prompt processing (pp: n_prompt
// tokens in one decode call, split into n_ubatch micro-batches) and token generation (tg:
// n_gen single-token decode calls from an empty sequence) — together with the weight bytes
// each test streams, so the speed can be read against the machine's memory bandwidth.
//
// Contract:
// * Each test runs once untimed (warm-up, unless opt.warmup is false), then `reps` timed repetitions, each on
// a freshly
//   cleared sequence, with pseudo-random token ids (fixed seed). Throughput is reported per
//   repetition; mean and sample standard deviation are over the repetitions.
// * Weight bytes are counted, not estimated: the model's expert source is wrapped so every
//   expert slice acquired by the forward pass adds its gate+up+down bytes (the MoE code
//   acquires each distinct active expert once per micro-batch), and every forward pass adds
//   the trunk (all non-expert tensors incl. output head and shared experts, except the
//   embedding table) plus one embedding row per token.
// * bench_json() is the stable machine format documented in docs/bench.md (schema_version).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "store/memory_options.h"
#include "tools/bench/membw.h"

namespace k3::gguf {
class GgufFile;
}

namespace k3::model {
class Collective;
class Model;
}  // namespace k3::model

namespace k3::tools {

struct BenchOptions {
  std::string model_path;
  int64_t n_prompt = 512;  // 0: skip pp
  int64_t n_gen = 128;     // 0: skip tg
  int n_threads = 0;       // 0: ThreadPool::default_threads()
  int64_t n_ubatch = 512;
  int reps = 5;
  bool remeasure_bw = false;
  bool measure_bw = true;      // false: skip the roofline (fields report 0)
  std::string bw_cache_path;   // "": default_membw_cache_path()
  size_t bw_buffer_bytes = 0;  // 0: membw default
  uint64_t seed = 42;
  store::MemoryOptions memory;              // --ram-budget: stream experts (docs/expert-store.md)
  bool measure_disk_bw = true;              // with --ram-budget: measure O_DIRECT sequential bandwidth
  bool warmup = true;                       // false: no untimed repetition (cold-start numbers)
  bool profile = false;                     // time per op class over the timed repetitions (model/profile.h)
  model::Collective* collective = nullptr;  // distributed run (model/collective.h); null: one process
  int64_t depth = 0;                        // tokens already in the sequence when each test starts (-d)
  bool f16_cache = false;                   // --cache-type f16: the MLA latent cache in F16 (2 bytes a value)
};

// One op class of a test's profile (BenchOptions::profile): sums over the timed repetitions.
struct OpProfile {
  std::string op;             // "KDA", "MoE experts", …; "other" is forward time no section covers
  double seconds = 0;         // wall time in the op, its products included
  double matmul_seconds = 0;  // of which in matrix products
  uint64_t matmul_bytes = 0;  // weight bytes those products read
  double matmul_ops = 0;      // their operations (2 per multiply-add)
  uint64_t matmuls = 0;
  uint64_t dispatches = 0;  // the thread pool's dispatches in the op
  double idle_seconds = 0;  // threads' time lost in them (late starts + idle ends)
};

// The thread pool's lost time during one test's timed repetitions (BenchOptions::profile):
// dispatches that used the workers, threads × their wall time, and of that the time threads
// waited to take part and sat idle after their last chunk.
using PoolWaits = ThreadPool::WaitStats;

// What the disk did during one test (sums over the timed repetitions). disk_read_bytes comes
// from /proc/self/io (both modes: page faults of the mapping count too); the rest only with
// --ram-budget, from the expert store (store/expert_store.h).
// With -ngl: the products that ran on the GPU during a test (model/gpu_products.h), per token,
// each one a host round trip; the time is the wall time inside them (transfers, waits, products).
struct GpuTelemetry {
  double products_per_token = 0;
  double round_trips_per_token = 0;
  double bytes_per_token = 0;  // weight bytes the GPU's products read
  double seconds_per_token = 0;
  double bytes_per_s = 0;        // bytes / seconds inside the products
  double roofline_fraction = 0;  // of the device's copy bandwidth
};

struct StoreTelemetry {
  uint64_t disk_read_bytes = 0;
  double disk_read_bytes_per_token = 0;
  uint64_t store_bytes_read = 0;
  double store_bytes_per_token = 0;
  double hit_rate = 0;              // experts already cached when asked for
  double prefetch_rate = 0;         // ... cached or in flight thanks to the prediction
  double prediction_recall = 0;     // asked-for experts the prediction had named
  double prediction_precision = 0;  // predicted experts that were asked for
  double io_wait_share = 0;         // share of the test's wall time the model waited on reads
  double read_bw_busy = 0;          // bytes/s while a read was in flight
  double read_bw_wall = 0;          // bytes/s over the test's wall time
  double busy_share = 0;            // share of wall time with a read in flight
  double disk_bw_fraction = 0;      // read_bw_busy / measured O_DIRECT sequential bandwidth
  double read_bw_waiting = 0;       // bytes/s arriving while the model waited on reads
  double waiting_bw_fraction = 0;   // read_bw_waiting / measured O_DIRECT sequential bandwidth
};

// Static weight accounting from the GGUF tensor table.
struct WeightBytes {
  uint64_t total = 0;             // all tensor bytes
  uint64_t trunk = 0;             // non-expert tensors except token_embd
  uint64_t embd_row = 0;          // one row of token_embd
  uint64_t experts_total = 0;     // all routed-expert tensors
  uint64_t expert_per_token = 0;  // Σ over MoE layers of n_expert_used × per-expert bytes
  uint64_t per_token() const { return trunk + embd_row + expert_per_token; }
};

struct BenchTest {
  std::string name;  // "pp512", "tg128"
  int64_t n_prompt = 0, n_gen = 0;
  std::vector<double> seconds;  // per repetition
  std::vector<double> tps;      // tokens/s per repetition
  double tps_mean = 0, tps_sd = 0;
  double seconds_mean = 0;
  double cpu_seconds_mean = 0;  // process CPU seconds (all threads) per repetition
  uint64_t weight_bytes = 0;    // counted weight bytes of one repetition (mean over reps)
  uint64_t expert_bytes = 0;    // of which routed experts
  double bytes_per_token = 0;   // weight_bytes / tokens
  double bytes_per_s = 0;       // weight_bytes / mean seconds
  double bw_fraction = 0;       // bytes_per_s / machine bandwidth (0 when not measured)
  // The MLA latent cache rows generation reads (tg only: each token attends to every row
  // before it, depth included), per repetition; the roofline counts weights and cache.
  uint64_t cache_bytes = 0;
  double cache_bytes_per_token = 0;
  double total_bytes_per_s = 0;  // (weight_bytes + cache_bytes) / mean seconds
  double roofline_fraction = 0;  // total_bytes_per_s / machine bandwidth
  StoreTelemetry io;
  GpuTelemetry gpu;
  std::vector<OpProfile> profile;  // with --profile; empty otherwise
  double profile_seconds = 0;      // forward wall time the profile covers (all repetitions)
  PoolWaits pool_waits;            // with --profile
};

struct BenchResult {
  bool followed = false;  // a rank other than 0 of a distributed run: it followed rank 0, nothing measured
  std::string model_path;
  uint64_t file_size = 0;
  uint64_t n_params = 0;
  std::string types;  // "Q8_0 91, F32 69"
  uint32_t n_layer = 0, n_expert = 0, n_expert_used = 0, n_vocab = 0;
  WeightBytes wb;
  int n_threads = 0;
  int64_t n_ubatch = 0;
  int reps = 0;
  int64_t depth = 0;
  bool f16_cache = false;
  MemBw membw;  // bytes_per_s == 0 when not measured
  // When measured in this run: the figures before and after the tests; membw.bytes_per_s is
  // their mean (the host's bandwidth drifts; the tests ran between the two). 0 from the cache.
  double mem_bw_before = 0, mem_bw_after = 0;
  std::vector<BenchTest> tests;
  std::string memory_mode = "mmap";  // or the store's description
  uint64_t ram_budget = 0;           // with --ram-budget (UINT64_MAX: unlimited)
  uint64_t cache_bytes = 0, cache_slots = 0;
  double cache_fraction = 0;  // share of all experts the cache holds
  double disk_bw = 0;         // measured O_DIRECT sequential read, bytes/s (0: not measured)
  std::string gpu_device;     // with -ngl: the device (gpu::describe), else empty
  uint64_t gpu_weight_bytes = 0;
  double gpu_copy_bw = 0;  // the device's copy bandwidth, bytes/s (its roofline)
};

// `m`: the model to measure, opened by the caller (opt.model_path names it in the report).
BenchResult run_bench(const BenchOptions& opt, std::shared_ptr<model::Model> m);
// Expert tensors are the blk.N.ffn_{gate,up,down}_exps ones (n_expert slices each).
WeightBytes weight_bytes_of(const gguf::GgufFile& f, uint32_t n_expert, uint32_t n_expert_used);

std::string bench_json(const BenchResult& r, int indent = 2);
std::string bench_table(const BenchResult& r);

}  // namespace k3::tools
