// tools/plan/cost_model: see cost_model.h.
#include "tools/plan/cost_model.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"
#include "gguf/file.h"
#include "model/hparams.h"
#include "store/memory_plan.h"

namespace k3::tools {
namespace {

bool is_expert(const std::string& name) { return name.find("_exps.") != std::string::npos; }

int layer_of(const std::string& name) {
  if (!name.starts_with("blk.")) return -1;
  return std::atoi(name.c_str() + 4);
}

double log2_steps(int n) { return n > 1 ? std::ceil(std::log2(static_cast<double>(n))) : 0.0; }

// The collectives of one token through the model, as the distributed forward pass makes them
// (docs/distributed.md): one all-gather per product group (ops::Matmul's row split, one per
// mm.batch), with the width (floats per token) each one gathers, plus the experts' outputs.
std::vector<uint64_t> collective_widths(const model::HParams& hp, const gguf::GgufFile& f) {
  std::vector<uint64_t> w;
  const uint64_t E = hp.n_embd, Di = hp.kda_inner(), H = hp.n_head, L = hp.expert_in();
  for (uint32_t il = 0; il < hp.n_layer; ++il) {
    if (hp.is_kda(il)) {
      w.push_back(4 * Di + H + hp.kda_head_dim);  // q, k, v, output gate, beta, decay's first half
      w.push_back(Di);                            // decay's second half
      w.push_back(E);                             // output projection
    } else {
      const uint64_t QW = hp.n_embd_head_k_mla, C = hp.kv_lora_rank, Vh = hp.n_embd_head_v_mla;
      const uint64_t q_in = hp.q_lora_rank > 0 ? hp.q_lora_rank : H * QW;
      const bool gate = f.tensor(fmt::format("blk.{}.attn_gate.weight", il)) != nullptr;
      w.push_back(q_in + C + hp.n_rot + (gate ? H * Vh : 0));  // q (or q_a), kv_a, output gate
      if (hp.q_lora_rank > 0) w.push_back(H * QW);             // q_b
      w.push_back(H * C);                                      // k_b, per head
      w.push_back(H * Vh);                                     // v_b, per head
      w.push_back(E);                                          // output projection
    }
    if (hp.is_dense(il)) {
      w.push_back(hp.n_ff);  // gate/up (fused: the SiTU rows)
      w.push_back(E);        // down
    } else {
      // The router, the routed input's projection into the latent space (when the model has
      // one) and the shared experts' gate/up go in one exchange.
      const bool latent = hp.n_embd_exp_latent > 0;
      w.push_back(hp.n_expert + (latent ? L : 0) + hp.n_ff_shexp());
      w.push_back(static_cast<uint64_t>(hp.n_expert_used) * L);  // the chosen experts' outputs
      if (hp.n_ff_shexp() > 0) w.push_back(E);                   // shared down
      if (latent) w.push_back(E);                                // routed up
    }
  }
  return w;
}

// `tokens` rows through every layer's collectives, then the head's logits of the one row that
// is sampled (prefill samples the last position only), all-gathered like every product.
void add_network(PhaseCost& c, const std::vector<uint64_t>& widths, uint64_t head, int n, int64_t tokens,
                 const HostSpec& h) {
  if (n <= 1) return;
  uint64_t bytes = head * 4 * static_cast<uint64_t>(n - 1) / n;
  for (uint64_t w : widths) bytes += w * 4 * static_cast<uint64_t>(tokens) * static_cast<uint64_t>(n - 1) / n;
  c.messages = widths.size() + 1 + 2;  // + the head; + rank 0's request (its header, its tokens)
  c.net_bytes = bytes;
  c.t_net_latency = static_cast<double>(c.messages) * h.net_latency_s * log2_steps(n);
  c.t_net_bandwidth = h.net_bw > 0 ? static_cast<double>(bytes) / h.net_bw : 0.0;
  c.t_network = c.t_net_latency + c.t_net_bandwidth;
}

}  // namespace

// The CPU's and the GPU's parts of a layer run one after the other (each needs the other's
// output), so their times add.
double PhaseCost::seconds() const {
  return std::max(t_memory, t_compute) + t_gpu + t_pcie + t_disk + t_network;
}

std::string PhaseCost::bound() const {
  const double m = std::max(t_memory, t_compute);
  const double worst = std::max({m, t_gpu, t_pcie, t_disk, t_network});
  if (m == worst) return t_memory >= t_compute ? "memory" : "compute";
  if (t_gpu == worst) return "gpu";
  if (t_pcie == worst) return "pcie";
  if (t_disk == worst) return "disk";
  return t_net_latency >= t_net_bandwidth ? "network latency" : "network bandwidth";
}

Prediction predict(const gguf::GgufFile& f, const PlanOptions& o) {
  const model::HParams hp = model::load_hparams(f);
  const HostSpec& h = o.host;
  const int n = std::max(1, o.hosts);
  if (h.mem_bw <= 0 || h.gops <= 0 || h.decode_efficiency <= 0)
    fail("plan: the host needs a memory bandwidth, an int8 rate and a decode efficiency");
  Prediction p;
  p.hosts = n;
  p.ubatch = o.ubatch;

  // The file's facts: trunk and expert bytes, per token and in all.
  uint64_t embd_bytes = 0, embd_row = 0, trunk_params = 0;
  uint64_t product_floats = 0;  // per token: the trunk matrices' in + out widths
  std::map<int, uint64_t> expert_layer_bytes, expert_layer_params;
  for (const gguf::TensorInfo& t : f.tensors()) {
    if (is_expert(t.name)) {
      expert_layer_bytes[layer_of(t.name)] += t.nbytes;
      expert_layer_params[layer_of(t.name)] += static_cast<uint64_t>(t.n_elements());
      p.expert_bytes_total += t.nbytes;
      continue;
    }
    p.trunk_bytes += t.nbytes;
    if (t.name == "token_embd.weight") {
      embd_bytes = t.nbytes;
      embd_row = t.nbytes / static_cast<uint64_t>(std::max<int64_t>(1, t.dim(1)));
    } else {
      trunk_params += static_cast<uint64_t>(t.n_elements());
      if (t.ne.size() >= 2 && t.dim(1) > 1) product_floats += static_cast<uint64_t>(t.dim(0) + t.dim(1));
    }
  }
  const uint64_t X = std::max<uint32_t>(1, hp.n_expert), k = hp.n_expert_used;
  uint64_t expert_params_per_token = 0;
  for (auto& [il, b] : expert_layer_bytes) {
    p.expert_bytes_per_token += b / X * k;
    expert_params_per_token += expert_layer_params[il] / X * k;
  }
  p.trunk_bytes_per_token = p.trunk_bytes - embd_bytes + embd_row;
  p.active_params_per_token = trunk_params + expert_params_per_token;

  // The GPU's share: the trunk less the embedding table (one row per token, read where it is), as
  // far as it fits beside the activation buffers and the driver's reserve (model/gpu_placement.h).
  const GpuSpec& g = o.gpu;
  double share = 0;
  if (g.vram) {
    const uint64_t placeable = (p.trunk_bytes - embd_bytes) / n, io = 128ull << 20;
    const uint64_t room = g.vram * 95 / 100 > io ? g.vram * 95 / 100 - io : 0;
    p.vram_trunk = std::min(placeable, room);
    p.vram_total = p.vram_trunk + io;
    share = placeable ? static_cast<double>(p.vram_trunk) / static_cast<double>(placeable) : 0.0;
  }
  const uint64_t moe_layers = expert_layer_bytes.size();
  // Today's design: one round trip per product group (the products of one input, as
  // ops::Matmul::batch sends them: the groups the distributed pass all-gathers) and the head.
  const uint64_t groups = collective_widths(hp, f).size() + 1;
  const uint64_t hops =
      g.hops_per_layer ? 2 * moe_layers : static_cast<uint64_t>(std::llround(share * groups));
  const uint64_t hop_floats = g.hops_per_layer
                                  ? moe_layers * (hp.expert_in() + hp.n_embd)
                                  : static_cast<uint64_t>(share * static_cast<double>(product_floats));
  const double gpu_params = share * static_cast<double>(trunk_params) / n;
  auto add_gpu = [&](PhaseCost& c, double tokens) {
    if (!g.vram) return;
    c.gpu_bytes = p.vram_trunk;
    c.hops = hops;
    c.t_gpu = std::max(static_cast<double>(p.vram_trunk) / (g.bw * g.efficiency),
                       g.flops > 0 ? 2.0 * gpu_params * tokens / g.flops : 0.0);
    c.t_pcie = static_cast<double>(hops) * g.hop_latency_s +
               (g.pcie_bw > 0 ? static_cast<double>(hop_floats) * 4 * tokens / g.pcie_bw : 0.0);
  };

  // Memory per rank.
  RankMemory& r = p.rank;
  r.trunk = (p.trunk_bytes - embd_bytes) / n + embd_bytes - p.vram_trunk;
  r.experts = static_cast<uint64_t>(static_cast<double>(p.expert_bytes_total) *
                                    std::ceil(static_cast<double>(X) / n) / static_cast<double>(X));
  const uint64_t cache_elt = o.cache_f16 ? 2 : 4;
  const uint64_t mla_cache = static_cast<uint64_t>(hp.n_mla_layers()) * hp.n_embd_head_k * cache_elt *
                             static_cast<uint64_t>(std::max<int64_t>(1, o.n_ctx));
  // Every rank runs the sequence mixing of all heads (only the products are split), so each
  // holds the whole state.
  const uint64_t kda_state =
      static_cast<uint64_t>(hp.n_kda_layers()) * hp.n_head * hp.kda_head_dim * hp.kda_head_dim * 4;
  r.state = mla_cache + kda_state;
  r.work = store::work_bytes(hp, o.ubatch, o.n_ctx);  // the memory plan's own estimate
  r.overhead = store::kOverheadBytes;
  const uint64_t fixed = r.trunk + r.state + r.work + r.overhead;
  if (h.ram && fixed > h.ram) {
    p.fits = false;
    p.refusal = fmt::format(
        "a rank needs {:.1f} GiB before any expert (trunk share, state, buffers) but has "
        "{:.1f} GiB",
        fixed / 1073741824.0, h.ram / 1073741824.0);
  }
  r.expert_cache = h.ram ? std::min(r.experts, h.ram > fixed ? h.ram - fixed : 0) : r.experts;
  r.resident_fraction =
      r.experts ? static_cast<double>(r.expert_cache) / static_cast<double>(r.experts) : 1.0;
  if (r.resident_fraction < 1.0 && h.disk_bw <= 0 && p.fits) {
    p.fits = false;
    p.refusal = "the experts do not fit in RAM and no disk bandwidth was given to stream them";
  }
  const double miss = 1.0 - r.resident_fraction;
  const std::vector<uint64_t> widths = collective_widths(hp, f);

  // Decode, one token at depth o.depth.
  {
    PhaseCost& c = p.decode;
    const uint64_t experts = p.expert_bytes_per_token / n;
    const uint64_t cache_read = static_cast<uint64_t>(hp.n_mla_layers()) * hp.n_embd_head_k * cache_elt *
                                static_cast<uint64_t>(std::max<int64_t>(0, o.depth));
    c.disk_bytes = static_cast<uint64_t>(miss * static_cast<double>(experts));
    c.mem_bytes =
        p.trunk_bytes_per_token / n - p.vram_trunk + experts - c.disk_bytes + cache_read + 2 * kda_state;
    c.t_memory = static_cast<double>(c.mem_bytes) / (h.mem_bw * h.decode_efficiency);
    c.t_compute = 2.0 * (static_cast<double>(p.active_params_per_token) / n - gpu_params) / h.gops;
    add_gpu(c, 1.0);
    c.t_disk = h.disk_bw > 0 ? static_cast<double>(c.disk_bytes) / h.disk_bw : 0.0;
    add_network(c, widths, hp.n_vocab, n, 1, h);
  }
  // Prefill, one micro-batch of o.ubatch tokens: each active expert read once.
  {
    PhaseCost& c = p.prefill;
    const double U = static_cast<double>(std::max<int64_t>(1, o.ubatch));
    const double active = 1.0 - std::pow(1.0 - static_cast<double>(k) / static_cast<double>(X), U);
    const uint64_t experts = static_cast<uint64_t>(active * static_cast<double>(p.expert_bytes_total) / n);
    c.disk_bytes = static_cast<uint64_t>(miss * static_cast<double>(experts));
    c.mem_bytes = p.trunk_bytes_per_token / n - p.vram_trunk + experts - c.disk_bytes;
    c.t_memory = static_cast<double>(c.mem_bytes) / (h.mem_bw * h.decode_efficiency);
    c.t_compute = 2.0 * (static_cast<double>(p.active_params_per_token) / n - gpu_params) * U / h.gops;
    add_gpu(c, U);
    c.t_disk = h.disk_bw > 0 ? static_cast<double>(c.disk_bytes) / h.disk_bw : 0.0;
    add_network(c, widths, hp.n_vocab, n, o.ubatch, h);
  }
  return p;
}

std::string prediction_table(const Prediction& p) {
  auto gib = [](uint64_t b) { return fmt::format("{:.2f} GiB", b / 1073741824.0); };
  auto ms = [](double s) { return fmt::format("{:.3f} ms", s * 1e3); };
  std::string o;
  o += fmt::format(
      "hosts {}: per rank trunk {} + experts {} of {} in RAM ({:.0f} %) + state {} + buffers {} + "
      "overhead {} = {}\n",
      p.hosts, gib(p.rank.trunk), gib(p.rank.expert_cache), gib(p.rank.experts),
      100 * p.rank.resident_fraction, gib(p.rank.state), gib(p.rank.work), gib(p.rank.overhead),
      gib(p.rank.total()));
  if (p.vram_total)
    o += fmt::format("         GPU: trunk {} in VRAM ({} with activation buffers)\n", gib(p.vram_trunk),
                     gib(p.vram_total));
  if (!p.fits) return o + fmt::format("does not fit: {}\n", p.refusal);
  auto phase = [&](const char* name, const PhaseCost& c, int64_t tokens) {
    o += fmt::format(
        "{:<8} {:>9.2f} tok/s  bound: {:<17} memory {} ({} per rank) | compute {} | disk {} ({}) | network "
        "{} "
        "({} collectives, {} KiB)\n",
        name, c.tokens_per_s(tokens), c.bound(), ms(c.t_memory), gib(c.mem_bytes), ms(c.t_compute),
        ms(c.t_disk), gib(c.disk_bytes), ms(c.t_network), c.messages, c.net_bytes / 1024);
    if (c.gpu_bytes)
      o += fmt::format("{:<8} {:>15}  GPU {} ({} read) | PCIe {} ({} round trips)\n", "", "", ms(c.t_gpu),
                       gib(c.gpu_bytes), ms(c.t_pcie), c.hops);
  };
  phase("decode", p.decode, 1);
  phase(fmt::format("pp{}", p.ubatch).c_str(), p.prefill, p.ubatch);
  return o;
}

std::string prediction_json(const Prediction& p) {
  auto phase = [](const PhaseCost& c, int64_t tokens) {
    return nlohmann::json{{"tokens_per_s", c.tokens_per_s(tokens)},
                          {"bound", c.bound()},
                          {"t_memory_s", c.t_memory},
                          {"t_compute_s", c.t_compute},
                          {"t_disk_s", c.t_disk},
                          {"t_network_s", c.t_network},
                          {"t_network_latency_s", c.t_net_latency},
                          {"t_gpu_s", c.t_gpu},
                          {"t_pcie_s", c.t_pcie},
                          {"gpu_bytes", c.gpu_bytes},
                          {"pcie_round_trips", c.hops},
                          {"mem_bytes", c.mem_bytes},
                          {"disk_bytes", c.disk_bytes},
                          {"net_bytes", c.net_bytes},
                          {"collectives", c.messages}};
  };
  nlohmann::json j{{"hosts", p.hosts},
                   {"fits", p.fits},
                   {"refusal", p.refusal},
                   {"rank",
                    {{"trunk", p.rank.trunk},
                     {"experts", p.rank.experts},
                     {"expert_cache", p.rank.expert_cache},
                     {"resident_fraction", p.rank.resident_fraction},
                     {"state", p.rank.state},
                     {"work", p.rank.work},
                     {"overhead", p.rank.overhead},
                     {"total", p.rank.total()}}},
                   {"model",
                    {{"trunk_bytes", p.trunk_bytes},
                     {"expert_bytes", p.expert_bytes_total},
                     {"trunk_bytes_per_token", p.trunk_bytes_per_token},
                     {"expert_bytes_per_token", p.expert_bytes_per_token},
                     {"active_params_per_token", p.active_params_per_token}}},
                   {"decode", phase(p.decode, 1)},
                   {"prefill", phase(p.prefill, p.ubatch)},
                   {"vram", {{"trunk", p.vram_trunk}, {"total", p.vram_total}}},
                   {"ubatch", p.ubatch}};
  return j.dump(1);
}

}  // namespace k3::tools
