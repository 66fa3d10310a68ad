// runtime/sampler: the sampling chain (see sampler.h).
#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.h"

namespace k3::runtime {

SamplerParamsError check_sampler_params(const SamplerParams& p) {
  if (!std::isfinite(p.temperature) || p.temperature < 0.0f)
    return {"temperature", "must be finite and >= 0"};
  // As floats, after the caller's conversion: 1e-50 is 0 here.
  if (!(p.top_p > 0.0f) || p.top_p > 1.0f) return {"top_p", "must be > 0 and <= 1"};
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) return {"min_p", "must be in [0, 1]"};
  if (!(p.repeat_penalty > 0.0f) || !std::isfinite(p.repeat_penalty))
    return {"repeat_penalty", "must be > 0"};
  if (p.repeat_last_n < 0) return {"repeat_last_n", "must be >= 0"};
  if (!std::isfinite(p.presence_penalty)) return {"presence_penalty", "must be finite"};
  if (!std::isfinite(p.frequency_penalty)) return {"frequency_penalty", "must be finite"};
  return {};
}

Sampler::Sampler(const SamplerParams& params) : params_(params), rng_(params.seed) {
  if (SamplerParamsError e = check_sampler_params(params); !e.field.empty())
    fail("sampler: {} {}", e.field, e.message);
}

void Sampler::accept(int32_t token) {
  if (params_.repeat_last_n <= 0) return;
  history_.push_back(token);
  while (history_.size() > static_cast<size_t>(params_.repeat_last_n)) history_.pop_front();
}

void Sampler::reset() {
  history_.clear();
  rng_.seed(params_.seed);
}

namespace {

bool better(const TokenProb& a, const TokenProb& b) { return a.p != b.p ? a.p > b.p : a.token < b.token; }

// Softmax of the `p` fields (which hold logits on entry) in place; returns nothing.
void softmax(std::vector<TokenProb>& c) {
  float mx = c.front().p;
  for (const auto& x : c) mx = std::max(mx, x.p);
  double sum = 0;
  for (auto& x : c) {
    x.p = std::exp(x.p - mx);
    sum += x.p;
  }
  for (auto& x : c) x.p = static_cast<float>(x.p / sum);
}

}  // namespace

std::vector<TokenProb> Sampler::candidates(std::span<const float> logits,
                                           std::span<const uint64_t> allowed) const {
  const int32_t n_vocab = static_cast<int32_t>(logits.size());
  if (n_vocab == 0) fail("sampler: empty logits");
  std::vector<TokenProb> c;
  if (allowed.empty()) {
    c.resize(static_cast<size_t>(n_vocab));
    for (int32_t i = 0; i < n_vocab; ++i) c[static_cast<size_t>(i)] = {i, logits[static_cast<size_t>(i)]};
  } else {
    if (allowed.size() * 64 < static_cast<size_t>(n_vocab))
      fail("sampler: the mask is shorter than the vocabulary");
    for (size_t w = 0; w < allowed.size(); ++w)
      for (uint64_t bits = allowed[w]; bits; bits &= bits - 1) {
        const int32_t i = static_cast<int32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits)));
        if (i < n_vocab) c.push_back({i, logits[static_cast<size_t>(i)]});
      }
    if (c.empty()) fail("sampler: the grammar allows no token");
  }
  const int32_t n_cand = static_cast<int32_t>(c.size());

  // Penalties, once per distinct token of the window.
  const SamplerParams& P = params_;
  if (!history_.empty() &&
      (P.repeat_penalty != 1.0f || P.frequency_penalty != 0.0f || P.presence_penalty != 0.0f)) {
    std::map<int32_t, int> counts;
    for (int32_t t : history_)
      if (t >= 0 && t < n_vocab) ++counts[t];
    for (auto [t, n] : counts) {
      float* lp = nullptr;
      if (allowed.empty()) {
        lp = &c[static_cast<size_t>(t)].p;
      } else {
        auto it = std::lower_bound(c.begin(), c.end(), t,
                                   [](const TokenProb& a, int32_t id) { return a.token < id; });
        if (it == c.end() || it->token != t) continue;
        lp = &it->p;
      }
      float& l = *lp;
      l = l <= 0.0f ? l * P.repeat_penalty : l / P.repeat_penalty;
      l -= static_cast<float>(n) * P.frequency_penalty + P.presence_penalty;
    }
  }

  if (P.temperature <= 0.0f) {
    auto best = std::max_element(c.begin(), c.end(), [](const TokenProb& a, const TokenProb& b) {
      return a.p < b.p || (a.p == b.p && a.token > b.token);
    });
    return {{best->token, 1.0f}};
  }

  // top-k (sorting the survivors, most likely first).
  if (P.top_k > 0 && P.top_k < n_cand) {
    std::partial_sort(c.begin(), c.begin() + P.top_k, c.end(), better);
    c.resize(P.top_k);
  } else {
    std::sort(c.begin(), c.end(), better);
  }

  // top-p: the shortest prefix whose probability mass reaches p.
  if (P.top_p < 1.0f) {
    std::vector<TokenProb> probs = c;
    softmax(probs);
    double cum = 0;
    size_t keep = probs.size();
    for (size_t i = 0; i < probs.size(); ++i) {
      cum += probs[i].p;
      if (cum >= P.top_p) {
        keep = i + 1;
        break;
      }
    }
    c.resize(keep);
  }

  // min-p: tokens at least min_p times as likely as the best one.
  if (P.min_p > 0.0f) {
    const float min_logit = c.front().p + std::log(P.min_p);
    size_t keep = 1;
    while (keep < c.size() && c[keep].p >= min_logit) ++keep;
    c.resize(keep);
  }

  for (auto& x : c) x.p /= P.temperature;
  softmax(c);
  return c;
}

std::vector<TokenProb> Sampler::distribution(std::span<const float> logits,
                                             std::span<const uint64_t> allowed) const {
  return candidates(logits, allowed);
}

int32_t Sampler::sample(std::span<const float> logits, std::span<const uint64_t> allowed) {
  std::vector<TokenProb> c = candidates(logits, allowed);
  if (c.size() == 1) return c.front().token;
  // 53 random bits → u in [0, 1): identical on every platform (unlike the std distributions).
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  double sum = 0;
  for (const auto& x : c) sum += x.p;
  double target = u * sum, cum = 0;
  for (const auto& x : c) {
    cum += x.p;
    if (target < cum) return x.token;
  }
  return c.back().token;
}

}  // namespace k3::runtime
