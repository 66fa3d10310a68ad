// model/forward: one forward pass of K3 over a micro-batch of tokens from one or more
// sequences (the forward pass of docs/MODEL.md).
// Contract: tokens are in batch order; each token belongs to a sequence whose state is
// given, and the tokens of one sequence are its next positions in order (the caller checks
// positions). Per-token work (projections, norms, AttnRes, FFN/MoE, head) runs on the whole
// batch in single matmul calls; sequence-mixing work (KDA conv/recurrence, MLA attention)
// runs per sequence. KDA uses the chunked form (16-token chunks) for a sequence with more
// than one token in the batch and the recurrent form otherwise; they agree to rounding.
// Logits are written for tokens with want_logits set, in batch order, n_vocab floats each.
#pragma once

#include <cstdint>
#include <span>

namespace k3 {
class ThreadPool;
}

namespace k3::model {

class Collective;
class Model;
class SequenceState;
struct ForwardObserver;
struct ForwardProfile;
struct Scratch;

// What is attached to a forward pass; null: nothing (one process, the serving path).
struct ForwardHooks {
  ForwardObserver* observer = nullptr;  // activations and routing (k3 imatrix, k3 reap; model/observer.h)
  ForwardProfile* profile = nullptr;    // time per op class (k3 bench --profile; model/profile.h)
  Collective* collective = nullptr;     // the other ranks of a distributed run (model/collective.h)
};

// Verification switches, all off outside the tests (docs/ARCHITECTURE.md says why they are
// switches and not a seam). reference_matmul swaps the fast kernels for the exact
// dequantize-then-double-dot reference, to separate model numerics from kernel rounding. The
// traps make the model deliberately wrong, so the golden tests show that they can fail.
struct ForwardChecks {
  bool reference_matmul = false;  // kernels::matmul_reference everywhere
  // The traps of docs/MODEL.md ("Traps worth repeating"):
  bool moe_weights_from_biased_scores = false;  // MoE weights from p + bias, not p
  bool skip_final_res_mix = false;              // no output_res_score mix before output_norm
  bool kda_decay_on_value_axis = false;         // decay on S's value index (recurrent form only)
};

struct ForwardInput {
  std::span<const int32_t> tokens;
  std::span<SequenceState* const> seq;   // one per token (may repeat)
  std::span<const uint8_t> want_logits;  // one per token
  // Empty, or one per token: non-null replaces that token's embedding row (n_embd floats).
  std::span<const float* const> embd = {};
};

// Returns the number of logit rows written to `logits` (count of want_logits).
// scratch: the working memory, reused from call to call (model/scratch.h).
int64_t forward(const Model& model, const ForwardInput& in, float* logits, ThreadPool* pool, Scratch& scratch,
                const ForwardHooks& hooks = {}, const ForwardChecks& checks = {});

}  // namespace k3::model
