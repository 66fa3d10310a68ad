// The cost model of `k3 plan` (tools/plan/cost_model.h) against facts computed here from the
// file's own tensor table: one host holds and reads every byte; N hosts split the trunk's
// matrices and the experts by id; the network terms appear only with N > 1 and follow
// messages × latency × ⌈log2 N⌉; a rank that cannot hold its fixed part is refused; experts
// beyond RAM are read from disk; the MLA cache read grows with the depth.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>

#include "core/error.h"
#include "gguf/file.h"
#include "model/hparams.h"
#include "tools/plan/cost_model.h"
#include "tools/synth/synth.h"

namespace fs = std::filesystem;
using namespace k3;

namespace {

const gguf::GgufFile& tiny_moe() {
  static const std::string path = [] {
    const fs::path p = fs::temp_directory_path() / ("k3-plan-test-" + std::to_string(::getpid()) + ".gguf");
    tools::SynthConfig c = tools::synth_preset("tiny");
    c.seed = 5;
    tools::write_synth(p.string(), c);
    return p.string();
  }();
  static const auto f = gguf::GgufFile::open(path);
  static const bool removed = (fs::remove(path), true);  // the mapping stays valid
  (void)removed;
  return *f;
}

tools::PlanOptions host(int n) {
  tools::PlanOptions o;
  o.hosts = n;
  o.host.ram = 64ull << 30;
  o.host.mem_bw = 50e9;
  o.host.gops = 100e9;
  o.host.decode_efficiency = 0.5;
  o.host.net_latency_s = 10e-6;
  o.host.net_bw = 1e9;
  o.n_ctx = 256;
  o.ubatch = 64;
  return o;
}

struct Facts {
  uint64_t trunk = 0, embd = 0, experts = 0;
};

Facts facts(const gguf::GgufFile& f) {
  Facts x;
  for (const auto& t : f.tensors()) {
    if (t.name.find("_exps.") != std::string::npos) x.experts += t.nbytes;
    else x.trunk += t.nbytes;
    if (t.name == "token_embd.weight") x.embd = t.nbytes;
  }
  return x;
}

}  // namespace

TEST(CostModel, OneHostHoldsAndReadsEverything) {
  const auto& f = tiny_moe();
  const Facts x = facts(f);
  ASSERT_GT(x.experts, 0u);
  const tools::Prediction p = tools::predict(f, host(1));
  EXPECT_TRUE(p.fits);
  EXPECT_EQ(p.rank.trunk, x.trunk);
  EXPECT_EQ(p.rank.experts, x.experts);
  EXPECT_EQ(p.rank.expert_cache, x.experts);
  EXPECT_EQ(p.decode.t_network, 0.0);
  EXPECT_EQ(p.decode.messages, 0u);
  EXPECT_EQ(p.decode.disk_bytes, 0u);
  EXPECT_EQ(p.decode.bound(), p.decode.t_memory >= p.decode.t_compute ? "memory" : "compute");
  EXPECT_NEAR(p.decode.tokens_per_s(1), 1.0 / std::max(p.decode.t_memory, p.decode.t_compute), 1e-6);
}

TEST(CostModel, HostsSplitTheTrunkAndTheExpertsById) {
  const auto& f = tiny_moe();
  const Facts x = facts(f);
  const model::HParams hp = model::load_hparams(f);
  const tools::Prediction one = tools::predict(f, host(1));
  for (int n : {2, 3}) {
    SCOPED_TRACE(n);
    const tools::Prediction p = tools::predict(f, host(n));
    EXPECT_EQ(p.rank.trunk, (x.trunk - x.embd) / n + x.embd);
    const double share = std::ceil(static_cast<double>(hp.n_expert) / n) / hp.n_expert;  // 3 ranks: uneven
    EXPECT_EQ(p.rank.experts, static_cast<uint64_t>(static_cast<double>(x.experts) * share));
    EXPECT_LT(p.decode.mem_bytes, one.decode.mem_bytes);
    EXPECT_GT(p.decode.messages,
              static_cast<uint64_t>(2 * hp.n_layer));  // at least two per layer, then the head
    EXPECT_NEAR(p.decode.t_net_latency, p.decode.messages * 10e-6 * std::ceil(std::log2(n)), 1e-12);
    EXPECT_GT(p.prefill.net_bytes, p.decode.net_bytes);  // the micro-batch's rows
  }
}

TEST(CostModel, RefusesWhatDoesNotFitAndStreamsWhatIsOverRam) {
  const auto& f = tiny_moe();
  const Facts x = facts(f);
  tools::PlanOptions o = host(1);
  o.host.ram = 1 << 20;
  tools::Prediction p = tools::predict(f, o);
  EXPECT_FALSE(p.fits);
  EXPECT_NE(p.refusal.find("before any expert"), std::string::npos) << p.refusal;

  // RAM for the fixed part and half the experts: without a disk refused, with one streamed.
  o.host.ram = tools::predict(f, host(1)).rank.total() - x.experts / 2;
  p = tools::predict(f, o);
  EXPECT_FALSE(p.fits);
  EXPECT_NE(p.refusal.find("no disk"), std::string::npos) << p.refusal;
  o.host.disk_bw = 1e6;  // slow enough to be the bound
  p = tools::predict(f, o);
  EXPECT_TRUE(p.fits);
  EXPECT_NEAR(p.rank.resident_fraction, 0.5, 0.01);
  EXPECT_GT(p.decode.disk_bytes, 0u);
  EXPECT_EQ(p.decode.bound(), "disk");
}

TEST(CostModel, TheCacheReadGrowsWithTheDepth) {
  const auto& f = tiny_moe();
  const model::HParams hp = model::load_hparams(f);
  tools::PlanOptions o = host(1);
  const uint64_t at0 = tools::predict(f, o).decode.mem_bytes;
  o.depth = 1000;
  const uint64_t at1000 = tools::predict(f, o).decode.mem_bytes;
  EXPECT_EQ(at1000 - at0, uint64_t{1000} * hp.n_mla_layers() * hp.n_embd_head_k * 2);  // F16 cache
}

TEST(CostModel, JsonHasTheNumbersOfTheTable) {
  const tools::Prediction p = tools::predict(tiny_moe(), host(2));
  const std::string j = tools::prediction_json(p);
  EXPECT_NE(j.find("\"hosts\": 2"), std::string::npos) << j;
  EXPECT_NE(j.find("\"bound\""), std::string::npos);
  EXPECT_NE(tools::prediction_table(p).find("hosts 2"), std::string::npos);
}

// A GPU holds the trunk less the embedding table; RAM holds the rest; the GPU's read time and the
// round trips add to the CPU's; a GPU too small for the trunk holds what fits.
TEST(CostModel, AGpuTakesTheTrunkOffTheCpu) {
  const auto& f = tiny_moe();
  const Facts x = facts(f);
  tools::PlanOptions o = host(1);
  const tools::Prediction cpu = tools::predict(f, o);
  o.gpu.vram = 8ull << 30;
  o.gpu.bw = 1000e9;
  o.gpu.efficiency = 0.5;
  o.gpu.flops = 1e12;
  o.gpu.pcie_bw = 10e9;
  o.gpu.hop_latency_s = 20e-6;
  const tools::Prediction gpu = tools::predict(f, o);
  EXPECT_EQ(gpu.vram_trunk, x.trunk - x.embd);
  EXPECT_EQ(gpu.rank.trunk, x.embd);
  EXPECT_EQ(cpu.decode.mem_bytes - gpu.decode.mem_bytes, x.trunk - x.embd);
  EXPECT_NEAR(gpu.decode.t_gpu, static_cast<double>(x.trunk - x.embd) / (1000e9 * 0.5), 1e-12);
  EXPECT_GT(gpu.decode.hops, 0u);
  EXPECT_GE(gpu.decode.t_pcie, gpu.decode.hops * 20e-6);
  EXPECT_NEAR(gpu.decode.seconds(),
              std::max(gpu.decode.t_memory, gpu.decode.t_compute) + gpu.decode.t_gpu + gpu.decode.t_pcie,
              1e-12);
  // Two crossings per MoE layer instead of one per product.
  o.gpu.hops_per_layer = true;
  const model::HParams hp = model::load_hparams(f);
  EXPECT_EQ(tools::predict(f, o).decode.hops, 2u * (hp.n_layer - hp.n_layer_dense_lead));
  // Room for half the trunk (plus the 128 MiB of activation buffers, within 95 %).
  o.gpu.vram = ((x.trunk - x.embd) / 2 + (128ull << 20)) * 100 / 95 + 100;
  const tools::Prediction half = tools::predict(f, o);
  EXPECT_NEAR(static_cast<double>(half.vram_trunk), (x.trunk - x.embd) / 2.0, 100.0);
  EXPECT_EQ(half.rank.trunk, x.trunk - half.vram_trunk);
}
