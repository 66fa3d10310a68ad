// tools/perplexity_kl: writing/reading KL base files and per-token KL statistics.
#include "tools/eval/perplexity_kl.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>

#include "core/atomic_file.h"
#include "core/error.h"
#include "tools/eval/perplexity.h"

namespace k3::tools {
namespace {

constexpr char kMagic[8] = {'K', '3', 'K', 'L', 'B', 'A', 'S', 'E'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kHeaderBytes = 8 + 6 * 4 + 8;

uint64_t record_bytes(uint32_t top_k) { return 12 + 8ull * top_k; }

template <typename T>
void put(std::vector<uint8_t>& b, T v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  b.insert(b.end(), p, p + sizeof(T));
}
template <typename T>
T get(const uint8_t*& p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  p += sizeof(T);
  return v;
}

}  // namespace

uint64_t tokens_hash(const std::vector<int32_t>& ids) {
  uint64_t h = 14695981039346656037ull;
  for (int32_t id : ids) {
    const auto u = static_cast<uint32_t>(id);
    for (int k = 0; k < 4; ++k) {
      h ^= (u >> (8 * k)) & 0xff;
      h *= 1099511628211ull;
    }
  }
  return h;
}

KlBaseWriter::KlBaseWriter(const std::string& path, const KlBaseHeader& h)
    : h_(h), out_(std::make_unique<AtomicFile>(path)) {
  if (h_.top_k == 0 || h_.top_k > h_.n_vocab)
    fail("KL base: top-k {} out of range 1…{}", h_.top_k, h_.n_vocab);
  std::vector<uint8_t> b(kMagic, kMagic + 8);
  put(b, kVersion);
  put(b, h_.n_vocab);
  put(b, h_.n_ctx);
  put(b, h_.n_chunks);
  put(b, h_.n_scored);
  put(b, h_.top_k);
  put(b, h_.tokens_hash);
  out_->write(b.data(), b.size());
  order_.resize(h_.n_vocab);
  lp_.resize(h_.n_vocab);
}

KlBaseWriter::~KlBaseWriter() = default;

void KlBaseWriter::add(const float* logits, int32_t target) {
  double lse = 0;
  log_prob_of(logits, h_.n_vocab, 0, &lse);
  for (uint32_t i = 0; i < h_.n_vocab; ++i) lp_[i] = static_cast<double>(logits[i]) - lse;
  std::iota(order_.begin(), order_.end(), 0);
  std::partial_sort(order_.begin(), order_.begin() + h_.top_k, order_.end(),
                    [&](int32_t a, int32_t b) { return lp_[a] != lp_[b] ? lp_[a] > lp_[b] : a < b; });
  std::vector<uint8_t> b;
  b.reserve(record_bytes(h_.top_k));
  put(b, target);
  put(b, static_cast<float>(lp_[target]));
  put(b, static_cast<float>(lse));
  for (uint32_t k = 0; k < h_.top_k; ++k) {
    put(b, order_[k]);
    put(b, static_cast<float>(lp_[order_[k]]));
  }
  out_->write(b.data(), b.size());
  ++n_records_;
}

void KlBaseWriter::commit() {
  const uint64_t want = uint64_t(h_.n_chunks) * h_.n_scored;
  if (n_records_ != want) fail("KL base: wrote {} records, expected {}", n_records_, want);
  out_->commit();
}

KlBaseReader::KlBaseReader(const std::string& path) : path_(path), in_(path, std::ios::binary) {
  if (!in_) fail("cannot open KL base file '{}'", path);
  uint8_t hb[kHeaderBytes];
  if (!in_.read(reinterpret_cast<char*>(hb), kHeaderBytes))
    fail("'{}' is not a KL base file (shorter than its header)", path);
  if (std::memcmp(hb, kMagic, 8) != 0) fail("'{}' is not a KL base file (bad magic)", path);
  const uint8_t* p = hb + 8;
  const auto version = get<uint32_t>(p);
  if (version != kVersion) fail("KL base file '{}' has version {}, expected {}", path, version, kVersion);
  h_.n_vocab = get<uint32_t>(p);
  h_.n_ctx = get<uint32_t>(p);
  h_.n_chunks = get<uint32_t>(p);
  h_.n_scored = get<uint32_t>(p);
  h_.top_k = get<uint32_t>(p);
  h_.tokens_hash = get<uint64_t>(p);
  if (h_.n_vocab == 0 || h_.top_k == 0 || h_.top_k > h_.n_vocab || h_.n_ctx < 4 || h_.n_chunks == 0 ||
      h_.n_scored != static_cast<uint32_t>(perplexity_scored_per_chunk(h_.n_ctx)))
    fail(
        "KL base file '{}' has an inconsistent header (n_vocab {}, n_ctx {}, chunks {}, scored {}, top-k {})",
        path, h_.n_vocab, h_.n_ctx, h_.n_chunks, h_.n_scored, h_.top_k);
  const uint64_t want = kHeaderBytes + n_records() * record_bytes(h_.top_k);
  const uint64_t size = std::filesystem::file_size(path);
  if (size != want)
    fail("KL base file '{}' has {} bytes, its header implies {} (truncated?)", path, size, want);
}

void KlBaseReader::next(KlRecord& r) {
  if (read_ >= n_records()) fail("KL base file '{}': read past the last record", path_);
  std::vector<uint8_t> b(record_bytes(h_.top_k));
  if (!in_.read(reinterpret_cast<char*>(b.data()), static_cast<std::streamsize>(b.size())))
    fail("KL base file '{}': short read at record {}", path_, read_);
  const uint8_t* p = b.data();
  r.target = get<int32_t>(p);
  r.target_logprob = get<float>(p);
  r.lse = get<float>(p);
  r.ids.resize(h_.top_k);
  r.logprobs.resize(h_.top_k);
  for (uint32_t k = 0; k < h_.top_k; ++k) {
    r.ids[k] = get<int32_t>(p);
    r.logprobs[k] = get<float>(p);
    if (r.ids[k] < 0 || static_cast<uint32_t>(r.ids[k]) >= h_.n_vocab)
      fail("KL base file '{}': record {} holds token id {} outside the vocabulary", path_, read_, r.ids[k]);
  }
  ++read_;
}

double kl_divergence(const KlRecord& base, const float* logits, int64_t n_vocab) {
  double lse = 0;
  log_prob_of(logits, n_vocab, 0, &lse);
  // Both sides go through the same float rounding so a model against its own base gives 0.
  double kl = 0, p_in = 0, q_in = 0;
  for (size_t k = 0; k < base.ids.size(); ++k) {
    const double lp = base.logprobs[k];
    const double lq = static_cast<float>(static_cast<double>(logits[base.ids[k]]) - lse);
    const double p = std::exp(lp);
    kl += p * (lp - lq);
    p_in += p;
    q_in += std::exp(lq);
  }
  if (static_cast<int64_t>(base.ids.size()) < n_vocab) {
    const double p_t = std::max(0.0, 1.0 - p_in), q_t = std::max(1e-300, 1.0 - q_in);
    if (p_t > 0) kl += p_t * std::log(p_t / q_t);
  }
  return std::max(0.0, kl);
}

void KlAccumulator::add(const KlRecord& base, const float* logits, int64_t n_vocab) {
  kld_.push_back(kl_divergence(base, logits, n_vocab));
  if (argmax_of(logits, n_vocab) == base.ids[0]) ++same_top1_;
  nll_base_ -= base.target_logprob;
  nll_ -= log_prob_of(logits, n_vocab, base.target);
}

KlSummary KlAccumulator::summary() const {
  KlSummary s;
  s.n = static_cast<int64_t>(kld_.size());
  if (s.n == 0) return s;
  const double n = static_cast<double>(s.n);
  double sum = 0, sum2 = 0;
  for (double k : kld_) {
    sum += k;
    sum2 += k * k;
  }
  s.kld_mean = sum / n;
  const double var = sum2 / n - s.kld_mean * s.kld_mean;
  s.kld_err = (s.n > 1 && var > 0) ? std::sqrt(var / (n - 1)) : 0;
  std::vector<double> sorted = kld_;
  std::sort(sorted.begin(), sorted.end());
  // Nearest-rank quantiles of the sorted values.
  auto q = [&](double f) {
    const auto i = static_cast<size_t>(std::min<double>(n - 1, std::floor(f * (n - 1) + 0.5)));
    return sorted[i];
  };
  s.kld_median = q(0.5);
  s.kld_p99 = q(0.99);
  s.kld_max = sorted.back();
  s.top1 = static_cast<double>(same_top1_) / n;
  s.top1_err = s.n > 1 ? std::sqrt(s.top1 * (1 - s.top1) / (n - 1)) : 0;
  s.ppl_base = std::exp(nll_base_ / n);
  s.ppl = std::exp(nll_ / n);
  return s;
}

}  // namespace k3::tools
