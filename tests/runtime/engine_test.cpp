// tests/model/engine_test: sequence state through the engine — several sequences in one
// batch, copy/clear, micro-batch splitting — checked against the golden reference logits,
// and batch validation errors.
#include <gtest/gtest.h>

#include <cstring>

#include "core/error.h"
#include "model/golden_util.h"
#include "model/profile.h"
#include "quant/codec.h"
#include "runtime/engine.h"

namespace k3::test {
namespace {

constexpr const char* kModel = "tiny10-base";

double max_nmse() { return manifest()["models"][kModel]["acceptance"]["nmse_vs_ref64_max"].get<double>(); }

std::vector<float> rows(const std::vector<float>& all, size_t r0, size_t r1, size_t V) {
  return {all.begin() + r0 * V, all.begin() + r1 * V};
}

TEST(Engine, InterleavedSequencesInOneBatchMatchGolden) {
  // Sequence 0 gets the golden tokens, sequence 1 a different model's golden tokens fed
  // through the same model; both interleaved in every batch. Sequence 0 must still match the
  // reference, and sequence 1 must match a run of its own.
  auto m = golden_model(kModel);
  const auto t0 = golden_tokens(kModel);
  auto t1 = golden_tokens("tiny10-softplus");
  runtime::EngineOptions exact;
  exact.n_threads = 2;
  exact.checks.reference_matmul = true;  // compare the state handling, not kernel rounding
  runtime::Engine solo(m, exact);
  const auto ref1 = runtime::eval_logits(solo, t1, runtime::EvalMode::parse("batch"));

  exact.n_seq_max = 3;
  exact.n_ubatch = 10;
  runtime::Engine eng(m, exact);
  const size_t V = static_cast<size_t>(eng.n_vocab());
  std::vector<float> out0, out1;
  for (size_t i = 0; i < t0.size(); i += 5) {
    std::vector<runtime::BatchToken> b;
    for (size_t j = i; j < std::min(i + 5, t0.size()); ++j) {
      b.push_back({t0[j], 0, static_cast<int64_t>(j), true});
      b.push_back({t1[j], 2, -1, true});
    }
    const auto l = eng.decode(b);
    for (size_t r = 0; r < b.size(); ++r)
      (b[r].seq == 0 ? out0 : out1)
          .insert((b[r].seq == 0 ? out0 : out1).end(), l.begin() + r * V, l.begin() + (r + 1) * V);
  }
  EXPECT_LE(nmse(out0, golden_ref64(kModel)), max_nmse());
  EXPECT_LE(nmse(out1, ref1), 1e-11);
  EXPECT_EQ(eng.seq_pos(0), 48);
  EXPECT_EQ(eng.seq_pos(1), 0);
  EXPECT_EQ(eng.seq_pos(2), 48);
}

// Profiling times the forward pass; it must not change it. Every section of the K3 graph
// shows up, the sections never sum past the forward time (they do not overlap), and the
// products counted are the model's: prefill and decode alike.
TEST(Engine, ProfileLeavesLogitsBitIdenticalAndCoversEverySection) {
  auto m = golden_model("small-q8_0");
  const auto toks = golden_tokens("small-q8_0");
  runtime::EngineOptions plain;
  plain.n_threads = 2;
  runtime::Engine ref(m, plain);
  const auto want = runtime::eval_logits(ref, toks, runtime::EvalMode::parse("batch"));
  model::ForwardProfile prof;
  runtime::EngineOptions profiled = plain;
  profiled.hooks.profile = &prof;
  runtime::Engine eng(m, profiled);
  const auto got = runtime::eval_logits(eng, toks, runtime::EvalMode::parse("batch"));
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
  EXPECT_GE(prof.forwards, 1u);
  double sum = 0;
  for (const auto& row : prof.rows) {
    sum += row.seconds;
    EXPECT_LE(row.matmul_seconds, row.seconds * (1 + 1e-9) + 1e-9);
  }
  EXPECT_LE(sum, prof.forward_seconds * (1 + 1e-9));
  EXPECT_GT(sum, 0.5 * prof.forward_seconds);
  using model::ProfOp;
  for (ProfOp op : {ProfOp::embed, ProfOp::attn_res_norm, ProfOp::kda, ProfOp::mla, ProfOp::moe_input,
                    ProfOp::moe_experts, ProfOp::head})
    EXPECT_GT(prof[op].seconds, 0) << model::prof_op_name(op);
  for (ProfOp op : {ProfOp::kda, ProfOp::mla, ProfOp::moe_input, ProfOp::moe_experts, ProfOp::head}) {
    EXPECT_GT(prof[op].matmuls, 0u) << model::prof_op_name(op);
    EXPECT_GT(prof[op].matmul_bytes, 0u) << model::prof_op_name(op);
    EXPECT_GT(prof[op].matmul_ops, 0) << model::prof_op_name(op);
  }
  EXPECT_EQ(prof[ProfOp::embed].matmuls, 0u);  // a row lookup, no product
  EXPECT_EQ(prof[ProfOp::attn_res_norm].matmuls, 0u);
}

TEST(Engine, CopyForksAndClearRestarts) {
  auto m = golden_model(kModel);
  const auto toks = golden_tokens(kModel);
  const auto ref = golden_ref64(kModel);
  runtime::Engine eng(m, {.n_threads = 2, .n_seq_max = 2});
  const size_t V = static_cast<size_t>(eng.n_vocab()), cut = 20;

  std::vector<int32_t> head(toks.begin(), toks.begin() + cut), tail(toks.begin() + cut, toks.end());
  const auto l_head = runtime::eval_logits(eng, head, runtime::EvalMode::parse("batch"), 0);
  EXPECT_LE(nmse(l_head, rows(ref, 0, cut, V)), max_nmse());

  eng.seq_copy(0, 1);
  EXPECT_EQ(eng.seq_pos(1), static_cast<int64_t>(cut));
  const auto a = runtime::eval_logits(eng, tail, runtime::EvalMode::parse("chunk:5"), 1);
  const auto b = runtime::eval_logits(eng, tail, runtime::EvalMode::parse("step"), 0);
  EXPECT_LE(nmse(a, rows(ref, cut, toks.size(), V)), max_nmse());
  EXPECT_LE(nmse(b, rows(ref, cut, toks.size(), V)), max_nmse());

  // A fresh start after clear reproduces the reference again (no stale state survives).
  eng.seq_clear(1);
  EXPECT_EQ(eng.seq_pos(1), 0);
  const auto c = runtime::eval_logits(eng, toks, runtime::EvalMode::parse("chunk:16"), 1);
  EXPECT_LE(nmse(c, ref), max_nmse());
}

TEST(Engine, UbatchSplitDoesNotChangeResult) {
  auto m = golden_model("small-q8_0");
  const auto toks = golden_tokens("small-q8_0");
  runtime::EngineOptions o;
  o.n_threads = 2;
  o.checks.reference_matmul = true;
  o.n_ubatch = 48;
  runtime::Engine big(m, o);
  o.n_ubatch = 13;
  runtime::Engine small(m, o);
  const auto a = runtime::eval_logits(big, toks, runtime::EvalMode::parse("batch"));
  const auto b = runtime::eval_logits(small, toks, runtime::EvalMode::parse("batch"));
  EXPECT_LE(nmse(b, a), 1e-11);
}

// An input row (BatchToken::embd, how image tokens enter) that equals a token's embedding row
// gives that token's logits bit for bit, in any position; a different row changes them.
TEST(Engine, EmbeddingRowsStandInForTokens) {
  auto m = golden_model("small-q8_0");
  const auto toks = golden_tokens("small-q8_0");
  const kernels::WeightView& te = m->weights().token_embd;
  const int64_t E = m->hparams().n_embd;
  std::vector<float> rows(toks.size() * E);
  std::vector<const float*> embd(toks.size(), nullptr);
  for (size_t i = 5; i < 12; ++i) {  // positions 5..11 fed as rows
    quant::dequantize_row(te.type, te.row(toks[i]), rows.data() + i * E, E);
    embd[i] = rows.data() + i * E;
  }
  runtime::Engine a(m, {.n_threads = 2}), b(m, {.n_threads = 2});
  const auto mode = runtime::EvalMode::parse("chunk:7");
  const auto want = runtime::eval_logits(a, toks, mode);
  std::vector<int32_t> pads = toks;
  for (size_t i = 5; i < 12; ++i) pads[i] = 0;  // the id only names the position
  const auto got = runtime::eval_logits(b, pads, mode, 0, embd);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0);
  rows[7 * E] += 0.5f;
  runtime::Engine c(m, {.n_threads = 2});
  EXPECT_GT(nmse(runtime::eval_logits(c, pads, mode, 0, embd), want), 1e-12);
}

TEST(Engine, RejectsBadBatchesWithoutChangingState) {
  auto m = golden_model(kModel);
  runtime::Engine eng(m, {.n_threads = 1, .n_seq_max = 2, .n_ctx = 8});
  std::vector<runtime::BatchToken> ok{{1, 0, 0, false}, {2, 0, 1, true}};
  EXPECT_EQ(eng.decode(ok).size(), static_cast<size_t>(eng.n_vocab()));
  auto expect_error = [&](std::vector<runtime::BatchToken> b, const char* what) {
    try {
      eng.decode(b);
      ADD_FAILURE() << "no error for " << what;
    } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what(); }
  };
  expect_error({{5, 0, 1, true}}, "position 1");       // rewinding
  expect_error({{5, 0, 7, true}}, "position 7");       // skipping
  expect_error({{100, 0, -1, true}}, "token id 100");  // outside the vocabulary
  expect_error({{-1, 0, -1, true}}, "token id -1");
  expect_error({{5, 2, -1, true}}, "sequence id 2");  // no such sequence
  expect_error({{1, 1, -1, false},
                {1, 1, -1, false},
                {1, 1, -1, false},
                {1, 1, -1, false},
                {1, 1, -1, false},
                {1, 1, -1, false},
                {1, 1, -1, false},
                {1, 1, -1, false},
                {1, 1, -1, false}},
               "full");  // beyond n_ctx
  EXPECT_EQ(eng.seq_pos(0), 2);
  EXPECT_EQ(eng.seq_pos(1), 0);
  EXPECT_THROW(eng.seq_copy(0, 5), Error);
  EXPECT_THROW((runtime::Engine(m, {.n_seq_max = 0})), Error);
}

}  // namespace
}  // namespace k3::test
