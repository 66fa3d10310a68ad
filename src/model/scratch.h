// model/scratch: the forward pass's working memory. The engine owns one and passes it to every
// forward(); each buffer grows to the largest size asked of it and is then reused, so a forward
// pass over a micro-batch no larger than one seen before allocates nothing for its activations
// or its MoE routing tables. Buffers keep their old contents: a user that needs zeros clears
// what it uses. bytes() is what the buffers hold, which the memory plan's "work" estimate
// covers (tests/store/engine_shape_test.cpp). Work done inside a parallel_for takes its
// temporaries from a per-thread entry (indexed by the pool's thread index), sized before the
// dispatch, so threads never share a buffer.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/matmul_batch.h"
#include "model/expert_source.h"

namespace k3::model {

class SequenceState;
struct HParams;

// The tokens of one sequence within the batch, in order; the first is at position base.
struct SeqGroup {
  SequenceState* st = nullptr;
  std::vector<int64_t> idx;  // batch rows
  int64_t base = 0;          // n_past before this batch
};

struct Scratch {
  // forward(): the batch's tokens grouped by sequence (the first `n` entries are in use; the
  // rest keep their capacity for the next call).
  std::vector<SeqGroup> groups;
  // forward(): the residual stream, the AttnRes mix, its norm, a sublayer's output, the bank of
  // block sums (contiguous, one n×E block each), the dense FFN's hidden layer.
  std::vector<float> hidden, mixed, normed, sublayer, bank, ffn_hidden;
  std::vector<const float*> bank_rows, row_bank;  // the bank's blocks; one row of each
  std::vector<int64_t> logit_rows;

  // moe_forward(): routing (per token: scores, biased scores, selection, weights), the
  // (token, weight) pairs grouped by expert as one array with per-expert starts, and the
  // buffers of up to kExpertGroup experts running at once.
  struct ExpertSlot {
    ExpertWeights ew;
    std::vector<float> x, h, y;
  };
  static constexpr size_t kExpertGroup = 8;
  struct Moe {
    std::vector<float> prob, latent, shared_hidden, shared_out, routed_sum;
    std::vector<double> biased, weights, acc;
    std::vector<int32_t> selected, order, active;
    std::vector<int64_t> start;  // expert e's pairs are pairs[start[e], start[e + 1])
    std::vector<std::pair<int64_t, double>> pairs;
    std::vector<kernels::MatmulJob> jobs;
    std::array<ExpertSlot, kExpertGroup> slots;
    // Expert parallel (model/collective.h): this rank's experts, bytes per rank, the packed
    // and the gathered output rows, where each active expert's rows start in them.
    std::vector<int32_t> mine;
    std::vector<size_t> counts, rank_next;
    std::vector<float> packed, gathered;
    std::vector<int64_t> gathered_at;
  } moe;

  // kda_forward(): the projections (q, k, v, output gate: n×Di; the decay's low-rank input:
  // n×D; β: n×H), the decay's log gates and the output rows (n×Di), and per thread the conv
  // window and the recurrence's temporaries (one head at a time).
  struct KdaThread {
    std::vector<float> win;                                    // conv window: K - 1 + tokens
    std::vector<double> eg, kd, qd;                            // token step: D each
    std::vector<double> state;                                 // chunked: the head's state, D×D
    std::vector<double> q, k, v, G, U, W, Vp, eG, Kp, Km, Qp;  // chunked: chunk×D each
    std::vector<double> beta, vcol, ed, Lm, P;                 // chunked: chunk, chunk, D, chunk², chunk²
  };
  struct Kda {
    std::vector<float> q, k, v, gate, fa, beta, g, o;
    std::vector<KdaThread> threads;
  } kda;

  // mla_forward(): the query (and q-LoRA's down half), the cache rows, the gate, the absorbed
  // queries, the latent results and the decompressed heads; each token's sequence and
  // position; the per-head product jobs; and per thread the attention's temporaries (scores
  // over the context, the block's sums, an F16 cache's rows converted).
  struct MlaThread {
    std::vector<double> score, acc, sum;
    std::vector<float> part, row, alpha, rows_f32;
  };
  struct MlaToken {
    const SeqGroup* g = nullptr;
    int64_t pos = 0;
  };
  struct Mla {
    std::vector<float> qf, qa, ckv, gate, qabs, obar, o;
    std::vector<MlaToken> tok;
    std::vector<kernels::MatmulJob> jobs;
    std::vector<MlaThread> threads;
  } mla;

  size_t bytes() const;
};

// What one thread's Scratch::KdaThread holds after KDA layers of hp ran over at most n_tokens
// tokens of one sequence (the memory plan counts it per engine thread).
uint64_t kda_thread_bytes(const HParams& hp, int64_t n_tokens);
// The same for Scratch::MlaThread with sequences of up to n_ctx tokens (scores span the context).
uint64_t mla_thread_bytes(const HParams& hp, int64_t n_ctx);

// Grows v to at least n elements (never shrinks) and returns its data.
template <class T>
T* reserve_at_least(std::vector<T>& v, size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

}  // namespace k3::model
