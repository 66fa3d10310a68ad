// The streaming expert store (docs/expert-store.md): on a small synth model (64 experts, 3 MoE
// layers, a few MB, written to a temp dir) the logits of a multi-micro-batch prompt and a greedy
// continuation are bit-identical to the mapped store at every budget (unlimited, 50%, 25%, 10% of
// the experts), with both read back ends, both eviction policies and with the next-layer prediction
// off; the telemetry adds up; budgets below the plan's minimum are refused with the minimum named;
// sizes parse; the readers return the file's bytes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/error.h"
#include "core/mapped_file.h"
#include "gguf/file.h"
#include "model/model.h"
#include "runtime/engine.h"
#include "store/direct_file.h"
#include "store/disk_bw.h"
#include "store/install.h"
#include "store/memory_limit.h"
#include "store/reader.h"
#include "store/resident_trunk.h"
#include "tools/synth/synth.h"

namespace fs = std::filesystem;
using namespace k3;

namespace {

struct Scratch {
  fs::path dir;
  Scratch() {
    dir = fs::temp_directory_path() / ("k3-store-test-" + std::to_string(::getpid()));
    fs::create_directories(dir);
  }
  ~Scratch() { fs::remove_all(dir); }
  std::string operator/(const std::string& n) const { return (dir / n).string(); }
};

Scratch& scratch() {
  static Scratch s;
  return s;
}

const std::string& model_path() {
  static const std::string path = [] {
    tools::SynthConfig c = tools::synth_preset("tiny");
    c.n_expert = 64;
    c.n_expert_used = 4;
    c.n_layer = 4;  // one dense lead layer, three MoE layers
    c.seed = 7;
    const std::string p = scratch() / "store-small.gguf";
    tools::write_synth(p, c);
    return p;
  }();
  return path;
}

constexpr int64_t kUbatch = 8;
constexpr int kPrompt = 21, kGen = 12;

store::EngineShape shape() {
  store::EngineShape s;
  s.n_ctx = 64;
  s.n_seq = 1;
  s.n_ubatch = kUbatch;
  return s;
}

struct RunOut {
  std::vector<float> logits;    // prompt's last row, then one row per generated token
  std::vector<int32_t> tokens;  // greedy continuation
  store::StoreStats stats;
};

// Prompt in micro-batches of 8 (all rows' logits kept), then greedy generation.
RunOut run(const std::shared_ptr<model::Model>& m, store::ExpertStore* st) {
  runtime::EngineOptions eo;
  eo.n_threads = 2;
  eo.n_ctx = shape().n_ctx;
  eo.n_ubatch = kUbatch;
  runtime::Engine eng(m, eo);
  RunOut out;
  std::vector<runtime::BatchToken> b;
  for (int i = 0; i < kPrompt; ++i) b.push_back({(i * 37 + 11) % eng.n_vocab(), 0, -1, true});
  std::vector<float> lg = eng.decode(b);
  out.logits = lg;
  const int64_t V = eng.n_vocab();
  for (int g = 0; g < kGen; ++g) {
    const float* last = lg.data() + lg.size() - V;
    const int32_t t = static_cast<int32_t>(std::max_element(last, last + V) - last);
    out.tokens.push_back(t);
    runtime::BatchToken bt{t, 0, -1, true};
    lg = eng.decode({&bt, 1});
    out.logits.insert(out.logits.end(), lg.begin(), lg.end());
  }
  if (st) out.stats = st->stats();
  return out;
}

const RunOut& mapped_reference() {
  static const RunOut r = run(model::Model::load(model_path()), nullptr);
  return r;
}

uint64_t budget_for(const model::Model& m, double fraction) {
  const store::MemoryPlan p = store::plan_memory(m, store::kUnlimited, shape());
  const uint64_t slots = static_cast<uint64_t>(std::ceil(fraction * static_cast<double>(p.n_experts)));
  return p.fixed() + slots * p.slot_bytes;
}

struct Variant {
  double fraction;  // <= 0: unlimited
  store::Eviction ev = store::Eviction::LRU;
  bool uring = false;  // io_uring reader instead of the default pread pool
  bool predict = true;
  int depth = 32;
};

void expect_identical(const Variant& v) {
  auto m = model::Model::load(model_path());
  store::MemoryOptions o;
  o.streaming = true;
  o.ram_budget = v.fraction > 0 ? budget_for(*m, v.fraction) : store::kUnlimited;
  o.eviction = v.ev;
  o.use_uring = v.uring;
  o.predict = v.predict;
  o.io_depth = v.depth;
  store::ExpertStore* st = store::install_store(*m, o, shape(), /*quiet=*/true);
  ASSERT_NE(st, nullptr);
  ASSERT_EQ(store::find_store(*m), st);
  if (v.fraction > 0) {
    EXPECT_EQ(st->plan().slots, static_cast<uint64_t>(std::ceil(v.fraction * st->plan().n_experts)));
  }
  if (!v.uring) { EXPECT_STREQ(st->backend(), "pread"); }
  const RunOut r = run(m, st);
  const RunOut& ref = mapped_reference();
  EXPECT_EQ(r.tokens, ref.tokens);
  ASSERT_EQ(r.logits.size(), ref.logits.size());
  EXPECT_EQ(std::memcmp(r.logits.data(), ref.logits.data(), r.logits.size() * sizeof(float)), 0)
      << "logits differ from the mapped store";
  const store::StoreStats& s = r.stats;
  EXPECT_EQ(s.needed, s.hits + s.prefetched + s.misses);
  EXPECT_GT(s.misses, 0u);  // a cold cache starts empty
  EXPECT_GE(s.bytes_read, (s.misses) * st->plan().expert_bytes);
  EXPECT_LE(s.bytes_read, (s.misses + s.predicted) * st->plan().slot_bytes);
  if (v.predict) {
    EXPECT_GT(s.predicted, 0u);
    EXPECT_LE(s.predicted_used, s.predicted);
  } else {
    EXPECT_EQ(s.predicted, 0u);
  }
}

}  // namespace

TEST(StoreIdentity, UnlimitedBudget) { expect_identical({-1}); }
TEST(StoreIdentity, HalfOfExperts) { expect_identical({0.50}); }
TEST(StoreIdentity, QuarterOfExperts) { expect_identical({0.25}); }
TEST(StoreIdentity, TenthOfExperts) { expect_identical({0.10}); }
TEST(StoreIdentity, TenthLfu) { expect_identical({0.10, store::Eviction::LFU}); }
TEST(StoreIdentity, TenthIoUring) { expect_identical({0.10, store::Eviction::LRU, true}); }
TEST(StoreIdentity, TenthNoPrediction) { expect_identical({0.10, store::Eviction::LRU, false, false}); }
TEST(StoreIdentity, TenthOneReadInFlight) { expect_identical({0.10, store::Eviction::LFU, false, true, 1}); }

TEST(StoreIdentity, MinimumBudgetStreams) {
  auto m = model::Model::load(model_path());
  const store::MemoryPlan p = store::plan_memory(*m, store::kUnlimited, shape());
  store::MemoryOptions o;
  o.streaming = true;
  o.ram_budget = p.minimum_budget();
  store::ExpertStore* st = store::install_store(*m, o, shape(), true);
  EXPECT_EQ(st->plan().slots, p.min_slots);
  const RunOut r = run(m, st);
  EXPECT_EQ(r.tokens, mapped_reference().tokens);
  EXPECT_EQ(std::memcmp(r.logits.data(), mapped_reference().logits.data(), r.logits.size() * sizeof(float)),
            0);
}

// mmap mode's trunk in huge pages: every streamed matrix moves out of the mapping with its
// bytes, and the run is identical to the plain mapping's.
TEST(ResidentTrunk, MovesEveryMatrixAndKeepsTheResults) {
  auto m = model::Model::load(model_path());
  std::vector<std::pair<const void*, size_t>> before;
  model::for_each_streamed_matrix(m->weights(), [&](const kernels::WeightView& v) {
    before.push_back({v.data, static_cast<size_t>(v.rows) * v.row_stride});
  });
  ASSERT_FALSE(before.empty());
  const store::ResidentTrunk t = store::make_resident_trunk(*m, /*min_bytes=*/0);
  if (!t.skipped.empty()) GTEST_SKIP() << "trunk not moved here: " << t.skipped;
  uint64_t sum = 0;
  for (const auto& b : before) sum += b.second;
  EXPECT_GE(t.bytes, sum);
  size_t i = 0;
  const uint8_t* map = m->gguf().mapping(0).data();
  const size_t map_size = m->gguf().mapping(0).size();
  model::for_each_streamed_matrix(m->weights(), [&](const kernels::WeightView& v) {
    ASSERT_LT(i, before.size());
    const uint8_t* p = static_cast<const uint8_t*>(v.data);
    EXPECT_TRUE(p < map || p >= map + map_size) << "matrix " << i << " still in the mapping";
    EXPECT_EQ(std::memcmp(p, before[i].first, before[i].second), 0) << "matrix " << i;
    ++i;
  });
  EXPECT_EQ(i, before.size());
  const RunOut r = run(m, nullptr);
  EXPECT_EQ(r.tokens, mapped_reference().tokens);
  ASSERT_EQ(r.logits.size(), mapped_reference().logits.size());
  EXPECT_EQ(std::memcmp(r.logits.data(), mapped_reference().logits.data(), r.logits.size() * sizeof(float)),
            0);
}

auto first_matrix(const model::Model& m) {
  const void* p = nullptr;
  model::for_each_streamed_matrix(m.weights(), [&](const kernels::WeightView& v) {
    if (!p) p = v.data;
  });
  return p;
}

TEST(ResidentTrunk, OnlyWhenAskedAndBigEnough) {
  auto m = model::Model::load(model_path());
  const void* mapped = first_matrix(*m);
  EXPECT_TRUE(store::make_resident_trunk(*m).small);  // the test model's trunk is tiny
  store::MemoryOptions o;
  o.trunk_hugepages = false;
  o.trunk_hugepages_min = 0;
  EXPECT_EQ(store::install_store(*m, o, shape(), true), nullptr);
  EXPECT_EQ(first_matrix(*m), mapped);
  EXPECT_TRUE(m->moved_trunk().empty());
}

// Under --ram-budget the trunk moves too, and the store streams experts beside it with the
// same results.
TEST(ResidentTrunk, StoreRunsOnAMovedTrunk) {
  auto m = model::Model::load(model_path());
  const void* mapped = first_matrix(*m);
  store::MemoryOptions o;
  o.streaming = true;
  o.ram_budget = budget_for(*m, 0.10);
  o.trunk_hugepages_min = 0;
  store::ExpertStore* st = store::install_store(*m, o, shape(), true);
  ASSERT_NE(st, nullptr);
  if (m->moved_trunk().empty()) GTEST_SKIP() << "no transparent huge pages here";
  EXPECT_NE(first_matrix(*m), mapped);
  EXPECT_TRUE(std::binary_search(m->moved_trunk().begin(), m->moved_trunk().end(), mapped));
  const RunOut r = run(m, st);
  EXPECT_EQ(r.tokens, mapped_reference().tokens);
  ASSERT_EQ(r.logits.size(), mapped_reference().logits.size());
  EXPECT_EQ(std::memcmp(r.logits.data(), mapped_reference().logits.data(), r.logits.size() * sizeof(float)),
            0);
}

// Forwards to the source install_store built and counts the experts asked for (what k3 bench
// wraps around every mode's store).
class CountingSource final : public model::ExpertSource {
 public:
  explicit CountingSource(std::unique_ptr<model::ExpertSource> inner) : inner_(std::move(inner)) {}
  void will_need(uint32_t layer, std::span<const int32_t> experts) override {
    inner_->will_need(layer, experts);
  }
  model::ExpertWeights acquire(uint32_t layer, int32_t expert) override {
    ++acquired;
    return inner_->acquire(layer, expert);
  }
  void release(uint32_t layer, int32_t expert) override { inner_->release(layer, expert); }
  void router_input_hint(uint32_t layer, const float* xn, int64_t n_tok) override {
    inner_->router_input_hint(layer, xn, n_tok);
  }
  const model::ExpertSource* inner() const { return inner_.get(); }
  uint64_t acquired = 0;

 private:
  std::unique_ptr<model::ExpertSource> inner_;
};

// install_store hands the source it built to the wrapper, in both modes, and installs what the
// wrapper returns: the streaming store stays the one returned, the results stay the mapped ones.
TEST(InstallStore, WrapsTheSourceItBuilt) {
  for (const bool streaming : {false, true}) {
    auto m = model::Model::load(model_path());
    store::MemoryOptions o;
    o.streaming = streaming;
    o.ram_budget = store::kUnlimited;
    int calls = 0;
    CountingSource* counting = nullptr;
    store::ExpertStore* st =
        store::install_store(*m, o, shape(), true, [&](std::unique_ptr<model::ExpertSource> inner) {
          ++calls;
          auto c = std::make_unique<CountingSource>(std::move(inner));
          counting = c.get();
          return std::unique_ptr<model::ExpertSource>(std::move(c));
        });
    EXPECT_EQ(calls, 1);
    ASSERT_NE(counting, nullptr);
    EXPECT_EQ(&m->experts(), counting);
    EXPECT_EQ(st != nullptr, streaming);
    if (streaming) { EXPECT_EQ(counting->inner(), st); }
    EXPECT_EQ(store::find_store(*m), nullptr);  // wrapped by a tool
    const RunOut r = run(m, st);
    EXPECT_GT(counting->acquired, 0u);
    EXPECT_EQ(r.tokens, mapped_reference().tokens);
    ASSERT_EQ(r.logits.size(), mapped_reference().logits.size());
    EXPECT_EQ(std::memcmp(r.logits.data(), mapped_reference().logits.data(), r.logits.size() * sizeof(float)),
              0);
  }
}

// With every expert cacheable, a second pass over the same tokens reads no needed expert.
TEST(StoreTelemetry, UnlimitedSecondPassHitsEverything) {
  auto m = model::Model::load(model_path());
  store::MemoryOptions o;
  o.streaming = true;
  o.ram_budget = store::kUnlimited;
  store::ExpertStore* st = store::install_store(*m, o, shape(), true);
  run(m, st);
  st->wait_idle();
  const store::StoreStats a = st->stats();
  run(m, st);
  st->wait_idle();
  const store::StoreStats d = st->stats().minus(a);
  EXPECT_GT(d.needed, 0u);
  EXPECT_EQ(d.hits + d.prefetched, d.needed);
  EXPECT_EQ(d.misses, 0u);
  // Only wrong guesses may still read: in pass 1 some were cancelled before their reads
  // started (timing decides which), so pass 2 can guess and read them again.
  EXPECT_LE(d.bytes_read, (d.predicted - d.predicted_used) * st->plan().slot_bytes);
  EXPECT_GE(a.hit_rate(), 0.0);
  EXPECT_LE(a.prediction_recall(), 1.0);
}

TEST(StorePlan, RefusesBudgetBelowMinimumNamingIt) {
  auto m = model::Model::load(model_path());
  const store::MemoryPlan p = store::plan_memory(*m, store::kUnlimited, shape());
  EXPECT_EQ(p.slots, p.n_experts);
  EXPECT_EQ(p.n_experts, 3u * 64u);
  EXPECT_GT(p.trunk, 0u);
  try {
    store::plan_memory(*m, p.minimum_budget() - 1, shape());
    FAIL() << "a budget below the minimum was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the minimum is"), std::string::npos) << e.what();
  }
  const store::MemoryPlan q = store::plan_memory(*m, p.minimum_budget(), shape());
  EXPECT_EQ(q.slots, q.min_slots);
  EXPECT_LE(q.total(), p.minimum_budget());
  // The state grows with the context and the sequences.
  store::EngineShape big = shape();
  big.n_ctx = 4096;
  big.n_seq = 4;
  EXPECT_GT(store::plan_memory(*m, store::kUnlimited, big).state, p.state);
  EXPECT_NE(store::plan_table(q).find("expert cache"), std::string::npos);
}

// A budget beyond what the process may hold (RAM, or its cgroup's limit) is refused before
// anything is allocated, naming the limit.
TEST(StorePlan, RefusesBudgetAboveTheProcessLimit) {
  std::string where;
  const uint64_t limit = store::process_memory_limit(&where);
  ASSERT_GT(limit, 0u);
  EXPECT_TRUE(where == "RAM" || where == "cgroup memory limit") << where;
  auto m = model::Model::load(model_path());
  store::MemoryOptions o;
  o.streaming = true;
  o.ram_budget = limit + (1ull << 30);
  try {
    store::build_store(*m, o, shape(), /*quiet=*/true);
    FAIL() << "a budget above the process limit was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than this process may use"), std::string::npos) << e.what();
  }
}

TEST(StoreOptions, ParsesSizes) {
  EXPECT_EQ(store::parse_size("5G"), 5ull << 30);
  EXPECT_EQ(store::parse_size("512M"), 512ull << 20);
  EXPECT_EQ(store::parse_size("512m"), 512ull << 20);
  EXPECT_EQ(store::parse_size("1.5GiB"), 3ull << 29);
  EXPECT_EQ(store::parse_size("2GB"), 2ull << 30);
  EXPECT_EQ(store::parse_size("4096"), 4096u);
  EXPECT_EQ(store::parse_size("unlimited"), store::kUnlimited);
  EXPECT_THROW(store::parse_size("5X"), Error);
  EXPECT_THROW(store::parse_size(""), Error);
  EXPECT_THROW(store::parse_size("-1G"), Error);
  EXPECT_THROW(store::parse_size("G"), Error);
  EXPECT_EQ(store::parse_eviction("lfu"), store::Eviction::LFU);
  EXPECT_THROW(store::parse_eviction("fifo"), Error);
}

// Both back ends return the file's bytes for aligned reads of many sizes, including a read
// that runs past the end of the file, with many in flight; cancel drops queued reads.
TEST(StoreReader, ReadsMatchTheFile) {
  const std::string p = scratch() / "reader.bin";
  std::vector<uint8_t> bytes((3u << 20) + 1234);
  std::mt19937 rng(5);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  {
    std::ofstream f(p, std::ios::binary);
    f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  for (bool uring : {false, true}) {
    store::DirectFile df(p);
    std::mutex mu;
    std::condition_variable cv;
    size_t done = 0, bad = 0;
    auto reader = store::make_reader(
        [&](uint32_t, bool ok, const std::string&) {
          std::lock_guard<std::mutex> lk(mu);
          ++done;
          bad += !ok;
          cv.notify_all();
        },
        8, uring);
    const size_t n = 40;
    void* mem = nullptr;
    ASSERT_EQ(::posix_memalign(&mem, 4096, n << 16), 0);
    std::vector<store::Read> rs;
    std::vector<uint64_t> offs;
    for (size_t i = 0; i < n; ++i) {
      store::Read r;
      r.fd = df.fd();
      r.offset = (rng() % (bytes.size() / 4096)) * 4096;
      r.len = (1 + rng() % 16) * 4096;
      r.need = std::min<uint64_t>(r.len, bytes.size() - r.offset);
      r.dst = static_cast<uint8_t*>(mem) + (i << 16);
      r.tag = static_cast<uint32_t>(i);
      rs.push_back(r);
    }
    store::Read tail = rs.back();
    tail.offset = bytes.size() / 4096 * 4096;  // the last, partial block
    tail.len = 8192;
    tail.need = bytes.size() - tail.offset;
    rs.back() = tail;
    reader->submit(rs);
    {
      std::unique_lock<std::mutex> lk(mu);
      cv.wait(lk, [&] { return done == n; });
    }
    EXPECT_EQ(bad, 0u) << reader->name();
    for (const store::Read& r : rs)
      EXPECT_EQ(std::memcmp(r.dst, bytes.data() + r.offset, r.need), 0) << reader->name() << " @" << r.offset;
    EXPECT_GE(reader->bytes_read(), 0u);
    EXPECT_EQ(reader->reads_done(), n);
    reader.reset();
    std::free(mem);
  }
}

TEST(StoreReader, DiskBandwidthIsMeasured) {
  const store::DiskBw bw = store::measure_disk_bw(model_path(), 4u << 20);
  EXPECT_GT(bw.bytes, 0u);
  EXPECT_GT(bw.bytes_per_s, 0.0);
}

// `k3 run` gives the same greedy tokens with --mmap and with a small --ram-budget, prints
// the plan, and refuses a budget below the minimum with exit code 1 and the minimum named.
TEST(StoreCli, RunIdenticalAcrossModes) {
  auto sh = [](const std::string& args, std::string& out, std::string& err) {
    const std::string o = scratch() / "cli.out", e = scratch() / "cli.err";
    const std::string cmd = std::string("'") + K3_BINARY + "' " + args + " >'" + o + "' 2>'" + e + "'";
    const int status = std::system(cmd.c_str());
    std::ifstream fo(o), fe(e);
    out.assign(std::istreambuf_iterator<char>(fo), {});
    err.assign(std::istreambuf_iterator<char>(fe), {});
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  auto m = model::Model::load(model_path());
  const uint64_t b = budget_for(*m, 0.10);
  const std::string common =
      "run -m '" + model_path() + "' --tokens 5,9,77,130 -n 10 --temp 0 -t 2 -c 64 -u 8 ";
  std::string out_m, err_m, out_s, err_s;
  ASSERT_EQ(sh(common + "--mmap", out_m, err_m), 0) << err_m;
  ASSERT_EQ(sh(common + "--ram-budget " + std::to_string(b), out_s, err_s), 0) << err_s;
  EXPECT_EQ(out_m, out_s);
  EXPECT_NE(err_s.find("memory plan"), std::string::npos) << err_s;
  std::string out_x, err_x;
  EXPECT_EQ(sh(common + "--ram-budget 1M", out_x, err_x), 1);
  EXPECT_NE(err_x.find("the minimum is"), std::string::npos) << err_x;
  EXPECT_EQ(sh(common + "--ram-budget 1G --mmap", out_x, err_x), 2);
}
