// tools/reap_plan: expert selection per method and the JSON report (see reap_plan.h).
#include "tools/reap/reap_plan.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace k3::tools {

namespace {

// splitmix64: a tiny, fully specified generator, so a seed picks the same experts on every
// platform and standard library (std::shuffle's algorithm is unspecified).
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Uniform in [0, n) without modulo bias.
uint64_t below(uint64_t& state, uint64_t n) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  for (;;) {
    const uint64_t v = splitmix64(state);
    if (v < limit) return v % n;
  }
}

}  // namespace

ReapMethod parse_reap_method(std::string_view name) {
  if (name == "reap") return ReapMethod::Reap;
  if (name == "freq") return ReapMethod::Freq;
  if (name == "random") return ReapMethod::Random;
  fail("reap: unknown --method '{}' (use reap, freq or random)", name);
}

const char* reap_method_name(ReapMethod m) {
  switch (m) {
    case ReapMethod::Reap: return "reap";
    case ReapMethod::Freq: return "freq";
    case ReapMethod::Random: return "random";
  }
  return "?";
}

void check_keep(uint32_t n_expert, uint32_t n_used, int64_t n_keep) {
  if (n_keep < 1) fail("reap: --keep must be at least 1, not {}", n_keep);
  if (n_keep > n_expert)
    fail("reap: --keep {} is more than the model's {} experts per layer", n_keep, n_expert);
  if (n_keep < n_used)
    fail(
        "reap: --keep {} is fewer than the {} experts each token uses (expert_used_count); "
        "keep at least {}",
        n_keep, n_used, n_used);
}

uint32_t keep_from_ratio(uint32_t n_expert, uint32_t n_used, double ratio) {
  if (!(ratio > 0.0 && ratio < 1.0))
    fail("reap: --prune-ratio must be between 0 and 1 (the fraction of experts removed), not {}", ratio);
  const auto removed = static_cast<int64_t>(std::llround(ratio * double(n_expert)));
  const int64_t keep = int64_t(n_expert) - removed;
  if (keep < int64_t(n_used))
    fail(
        "reap: --prune-ratio {} keeps {} of {} experts, fewer than the {} each token uses "
        "(expert_used_count); the largest ratio allowed is {:.4f}",
        ratio, keep, n_expert, n_used, double(n_expert - n_used) / double(n_expert));
  check_keep(n_expert, n_used, keep);
  return static_cast<uint32_t>(keep);
}

std::vector<int32_t> select_experts(ReapMethod method, const LayerSaliency& s, uint32_t n_keep,
                                    uint64_t seed) {
  const size_t X = s.count.size();
  if (n_keep > X) fail("reap: cannot keep {} of {} experts in layer {}", n_keep, X, s.layer);
  std::vector<int32_t> order(X);
  std::iota(order.begin(), order.end(), 0);
  if (method == ReapMethod::Random) {
    // Partial Fisher–Yates: the first n_keep slots become a uniform random subset.
    uint64_t state = seed ^ (0x5851f42d4c957f2dULL * (uint64_t(s.layer) + 1));
    for (size_t i = 0; i < n_keep; ++i) {
      const size_t j = i + static_cast<size_t>(below(state, X - i));
      std::swap(order[i], order[j]);
    }
  } else {
    std::vector<double> score(X);
    for (size_t e = 0; e < X; ++e) score[e] = method == ReapMethod::Reap ? s.reap(e) : double(s.count[e]);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return score[a] > score[b]; });
  }
  std::vector<int32_t> kept(order.begin(), order.begin() + n_keep);
  std::sort(kept.begin(), kept.end());
  return kept;
}

ReapPlan make_reap_plan(ReapMethod method, const std::vector<LayerSaliency>& layers, uint32_t n_expert,
                        uint32_t n_keep, uint64_t seed) {
  ReapPlan p;
  p.n_expert = n_expert;
  p.n_keep = n_keep;
  for (const LayerSaliency& s : layers) {
    if (s.count.size() != n_expert)
      fail("reap: layer {} has statistics for {} experts, the model has {}", s.layer, s.count.size(),
           n_expert);
    p.layers.push_back({s.layer, select_experts(method, s, n_keep, seed)});
  }
  return p;
}

std::string reap_report_json(const ReapReportInfo& info, const ReapPlan& plan,
                             const std::vector<LayerSaliency>& layers) {
  using nlohmann::json;
  json j;
  j["model"] = info.model;
  j["calibration"] = info.calibration;
  j["method"] = reap_method_name(info.method);
  if (info.method == ReapMethod::Random) j["seed"] = info.seed;
  j["n_expert"] = plan.n_expert;
  j["n_keep"] = plan.n_keep;
  j["n_expert_used"] = info.n_expert_used;
  j["calibration_tokens"] = info.n_tokens;
  j["calibration_sequences"] = info.n_sequences;
  json arr = json::array();
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerSaliency& s = layers[i];
    json l;
    l["layer"] = s.layer;
    std::vector<double> reap(s.count.size()), mw(s.count.size());
    int64_t never = 0;
    for (size_t e = 0; e < s.count.size(); ++e) {
      reap[e] = s.reap(e);
      mw[e] = s.mean_weight(e);
      never += s.count[e] == 0;
    }
    l["count"] = s.count;
    l["reap"] = reap;
    l["mean_weight"] = mw;
    l["never_routed"] = never;
    if (i < plan.layers.size()) {
      const auto& kept = plan.layers[i].kept;
      l["kept"] = kept;
      // Share of this layer's routed traffic and REAP mass that the kept experts carried:
      // a quick read of how much the pruning removes.
      int64_t total_c = 0, kept_c = 0;
      double total_r = 0, kept_r = 0;
      for (size_t e = 0; e < s.count.size(); ++e) {
        total_c += s.count[e];
        total_r += s.reap_sum[e];
      }
      for (int32_t e : kept) {
        kept_c += s.count[static_cast<size_t>(e)];
        kept_r += s.reap_sum[static_cast<size_t>(e)];
      }
      l["kept_token_share"] = total_c ? double(kept_c) / double(total_c) : 0.0;
      l["kept_reap_share"] = total_r > 0 ? kept_r / total_r : 0.0;
    }
    arr.push_back(std::move(l));
  }
  j["layers"] = std::move(arr);
  return j.dump(1) + "\n";
}

}  // namespace k3::tools
