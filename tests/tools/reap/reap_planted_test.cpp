// REAP on a model with a known answer: a synthetic K3 whose MoE layers each hold 8 "weak"
// experts (down projection × 0.02: routed as often as the others, but adding almost nothing)
// among 16. Pruning half with --method reap must keep exactly the 8 strong ones in every
// layer; frequency cannot see the difference. The test also prints the KL divergence of each
// method's pruned model to the unpruned one on held-out tokens. It does not assert an
// ordering: on random weights none holds robustly (here reap is the worst — a pruned expert's
// tokens are re-routed to a full-strength substitute, so the damage follows how much routing
// is displaced, which freq minimises); docs/reap.md has the numbers and the argument.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "model/model.h"
#include "tools/reap/reap_test_util.h"
#include "runtime/engine.h"
#include "tools/reap/reap.h"
#include "tools/synth/synth.h"

using namespace k3;
using reap_test::Scratch;

namespace {

constexpr uint32_t kExperts = 16, kUsed = 2, kLayers = 4;

bool is_weak(uint32_t layer, uint32_t e) { return ((e * 7 + layer * 3) % kExperts) < kExperts / 2; }

std::vector<int32_t> seeded_tokens(uint64_t seed, size_t n) {
  std::vector<int32_t> t(n);
  for (auto& v : t) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    v = static_cast<int32_t>((seed >> 33) % 256);
  }
  return t;
}

// Mean KL(base ‖ pruned) per token over held-out sequences, from full-vocabulary logits.
double mean_kl(const std::string& base, const std::string& pruned,
               const std::vector<std::vector<int32_t>>& seqs) {
  auto run = [&](const std::string& path) {
    auto m = model::Model::load(path);
    runtime::EngineOptions eo;
    eo.n_threads = 2;
    eo.n_ctx = 64;
    runtime::Engine eng(m, eo);
    std::vector<float> all;
    for (const auto& s : seqs) {
      eng.seq_clear(0);
      std::vector<runtime::BatchToken> b;
      for (int32_t t : s) b.push_back({t, 0, -1, true});
      const auto l = eng.decode(b);
      all.insert(all.end(), l.begin(), l.end());
    }
    return std::make_pair(all, static_cast<size_t>(eng.n_vocab()));
  };
  const auto [p, nv] = run(base);
  const auto [q, nv2] = run(pruned);
  EXPECT_EQ(nv, nv2);
  double kl = 0;
  const size_t rows = p.size() / nv;
  for (size_t r = 0; r < rows; ++r) {
    const float* a = p.data() + r * nv;
    const float* b = q.data() + r * nv;
    double ma = a[0], mb = b[0];
    for (size_t i = 0; i < nv; ++i) ma = std::max(ma, double(a[i])), mb = std::max(mb, double(b[i]));
    double sa = 0, sb = 0;
    for (size_t i = 0; i < nv; ++i) sa += std::exp(a[i] - ma), sb += std::exp(b[i] - mb);
    const double la = ma + std::log(sa), lb = mb + std::log(sb);
    for (size_t i = 0; i < nv; ++i) {
      const double lpa = a[i] - la, lpb = b[i] - lb;
      kl += std::exp(lpa) * (lpa - lpb);
    }
  }
  return kl / double(rows);
}

}  // namespace

TEST(ReapPlanted, ReapFindsTheWeakExperts) {
  Scratch s("planted");
  tools::SynthConfig cfg;
  cfg.name = "reap-planted";
  cfg.seed = 11;
  cfg.n_layer = kLayers;
  cfg.n_expert = kExperts;
  cfg.n_expert_used = kUsed;
  cfg.n_ff_exp = 64;
  cfg.n_embd_exp_latent = 64;
  cfg.trunk_type = quant::Type::F32;
  // No ffn_routed_norm: with it, the routed sum is RMS-normalised per token and an expert's
  // scale stops mattering (docs/reap.md, "K3's routed norm").
  cfg.routed_norm = false;
  tools::write_synth(s / "raw.gguf", cfg);
  reap_test::write_edited(s / "raw.gguf", s / "base.gguf", {},
                          [](const std::string& n, std::vector<uint8_t>& b) {
                            if (n.find("ffn_down_exps.weight") == std::string::npos) return;
                            const uint32_t layer = uint32_t(std::stoul(n.substr(4, n.find('.', 4) - 4)));
                            const size_t per = b.size() / sizeof(float) / kExperts;
                            auto* f = reinterpret_cast<float*>(b.data());
                            for (uint32_t e = 0; e < kExperts; ++e)
                              if (is_weak(layer, e))
                                for (size_t i = 0; i < per; ++i) f[e * per + i] *= 0.02f;
                          });

  auto model = model::Model::load(s / "base.gguf");
  const auto calib = tools::chunk_calibration(seeded_tokens(1, 1024), 64);
  std::vector<std::vector<int32_t>> held;
  for (const auto& c : tools::chunk_calibration(seeded_tokens(2, 256), 64)) held.push_back(c);

  std::map<std::string, double> kl;
  for (const char* m : {"reap", "freq", "random"}) {
    tools::ReapOptions o;
    o.method = tools::parse_reap_method(m);
    o.n_keep = kExperts / 2;
    o.seed = 3;
    o.calib.n_ctx = 64;
    o.calib.n_threads = 2;
    o.output = s / (std::string(m) + ".gguf");
    const tools::ReapResult r = tools::run_reap(model, calib, o);
    if (o.method == tools::ReapMethod::Reap) {
      for (const auto& lp : r.plan.layers) {
        std::vector<int32_t> strong;
        for (uint32_t e = 0; e < kExperts; ++e)
          if (!is_weak(lp.layer, e)) strong.push_back(int32_t(e));
        EXPECT_EQ(lp.kept, strong) << "layer " << lp.layer;
      }
    }
    double kept_share = 0;
    for (size_t i = 0; i < r.calib.layers.size(); ++i) {
      const auto& l = r.calib.layers[i];
      int64_t all = 0, kept = 0;
      for (int64_t c : l.count) all += c;
      for (int32_t e : r.plan.layers[i].kept) kept += l.count[size_t(e)];
      kept_share += double(kept) / double(all) / double(r.calib.layers.size());
    }
    if (o.method == tools::ReapMethod::Freq) {
      int same = 0;
      for (const auto& lp : r.plan.layers) {
        std::vector<int32_t> strong;
        for (uint32_t e = 0; e < kExperts; ++e)
          if (!is_weak(lp.layer, e)) strong.push_back(int32_t(e));
        same += lp.kept == strong;
      }
      EXPECT_LT(same, int(r.plan.layers.size()))
          << "frequency alone found the planted experts; the test proves nothing";
    }
    kl[m] = mean_kl(s / "base.gguf", o.output, held);
    std::printf("planted: %-6s kept routing share %.3f  KL %.6f\n", m, kept_share, kl[m]);
    EXPECT_TRUE(std::isfinite(kl[m]) && kl[m] > 0) << m;
    std::filesystem::remove(o.output);
  }
}
