// tools/reap_plan: which experts each MoE layer keeps, and the JSON report that explains it.
//
// Contract:
// * Pruning is uniform: every MoE layer keeps the same number of experts, n_keep.
//   check_keep() refuses n_keep > n_expert, n_keep < expert_used_count (top-k would have
//   fewer candidates than it picks) and n_keep < 1. keep_from_ratio(X, R) = X − round(R·X)
//   for 0 < R < 1 (R is the fraction removed), then the same checks.
// * select_experts ranks by the method's score, highest first, and returns the n_keep winners
//   in ascending original order (the order the sliced tensors store them):
//     reap   — LayerSaliency::reap(e) (mean of router weight × ‖output‖ over routed tokens);
//     freq   — count(e), tokens routed;
//     random — a uniformly random subset, a pure function of (seed, layer).
//   Ties keep the lower expert id (among unrouted experts, all scoring 0, the highest ids are
//   pruned first), which makes every method deterministic.
// * reap_report_json() is the --scores-out document (docs/reap.md): method, seed, sizes, token
//   counts and per layer the counts, REAP scores, mean router weights and the kept list.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tools/reap/reap_saliency.h"

namespace k3::tools {

enum class ReapMethod { Reap, Freq, Random };
ReapMethod parse_reap_method(std::string_view name);  // "reap" | "freq" | "random", else throws
const char* reap_method_name(ReapMethod m);

void check_keep(uint32_t n_expert, uint32_t n_used, int64_t n_keep);
uint32_t keep_from_ratio(uint32_t n_expert, uint32_t n_used, double ratio);

struct LayerPlan {
  uint32_t layer = 0;
  std::vector<int32_t> kept;  // ascending original expert ids
};

struct ReapPlan {
  uint32_t n_expert = 0;          // before
  uint32_t n_keep = 0;            // after
  std::vector<LayerPlan> layers;  // one per MoE layer, ascending
};

std::vector<int32_t> select_experts(ReapMethod method, const LayerSaliency& s, uint32_t n_keep,
                                    uint64_t seed);
ReapPlan make_reap_plan(ReapMethod method, const std::vector<LayerSaliency>& layers, uint32_t n_expert,
                        uint32_t n_keep, uint64_t seed);

struct ReapReportInfo {
  std::string model, calibration;
  ReapMethod method = ReapMethod::Reap;
  uint64_t seed = 0;
  uint32_t n_expert_used = 0;
  int64_t n_tokens = 0, n_sequences = 0;
};
std::string reap_report_json(const ReapReportInfo& info, const ReapPlan& plan,
                             const std::vector<LayerSaliency>& layers);

}  // namespace k3::tools
