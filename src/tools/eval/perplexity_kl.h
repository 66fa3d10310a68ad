// tools/perplexity_kl: the KL-divergence base file (`k3 perplexity --kl-base-out/--kl-base`)
// and the statistics of a model against it.
//
// File format (little-endian, version 1; see docs/perplexity.md):
//   header  "K3KLBASE" | u32 version | u32 n_vocab | u32 n_ctx | u32 n_chunks |
//           u32 n_scored (per chunk) | u32 top_k | u64 tokens_hash (FNV-1a 64 of the
//           evaluated token ids, each as 4 LE bytes)
//   records n_chunks × n_scored, in evaluation order, each 12 + 8·top_k bytes:
//           i32 target | f32 log p(target) | f32 logsumexp(logits) |
//           top_k × (i32 id, f32 log p(id)), by log-probability descending (ties: lower id)
// Contract: with top_k = n_vocab the file holds the full log-softmax and KL is exact up to
// float rounding; with fewer, KL is that of the two distributions coarsened to {top-k ids of
// the base, everything else}, a lower bound on the true KL (log-sum inequality). Readers
// reject a file whose size, magic or version is wrong, naming the file.
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace k3 {
class AtomicFile;
}

namespace k3::tools {

struct KlBaseHeader {
  uint32_t n_vocab = 0, n_ctx = 0, n_chunks = 0, n_scored = 0, top_k = 0;
  uint64_t tokens_hash = 0;
};

uint64_t tokens_hash(const std::vector<int32_t>& ids);

class KlBaseWriter {
 public:
  KlBaseWriter(const std::string& path, const KlBaseHeader& h);
  ~KlBaseWriter();
  void add(const float* logits, int32_t target);
  void commit();  // checks the record count, then renames into place

 private:
  KlBaseHeader h_;
  std::unique_ptr<AtomicFile> out_;
  uint64_t n_records_ = 0;
  std::vector<int32_t> order_;
  std::vector<double> lp_;
};

struct KlRecord {
  int32_t target = 0;
  float target_logprob = 0, lse = 0;
  std::vector<int32_t> ids;
  std::vector<float> logprobs;
};

class KlBaseReader {
 public:
  explicit KlBaseReader(const std::string& path);
  const KlBaseHeader& header() const { return h_; }
  uint64_t n_records() const { return uint64_t(h_.n_chunks) * h_.n_scored; }
  void next(KlRecord& r);  // records in file order

 private:
  std::string path_;
  std::ifstream in_;
  KlBaseHeader h_;
  uint64_t read_ = 0;
};

// Per-token KL(base ‖ model) from one stored record and the model's logits row.
double kl_divergence(const KlRecord& base, const float* logits, int64_t n_vocab);

struct KlSummary {
  int64_t n = 0;
  double kld_mean = 0, kld_err = 0, kld_median = 0, kld_p99 = 0, kld_max = 0;
  double top1 = 0, top1_err = 0;  // fraction of tokens whose argmax agrees
  double ppl_base = 0, ppl = 0;   // from the stored / the model's target log-probs
  double dppl() const { return ppl - ppl_base; }
};

class KlAccumulator {
 public:
  void add(const KlRecord& base, const float* logits, int64_t n_vocab);
  KlSummary summary() const;

 private:
  std::vector<double> kld_;
  int64_t same_top1_ = 0;
  double nll_base_ = 0, nll_ = 0;
};

}  // namespace k3::tools
