// Quantization quality against a master, in KL divergence of the next-token distributions
// (KldRisesAsBitsFall: fewer bits, larger KLD), and the point of an importance matrix: on a
// small model, the K3_REAP_IQ1M mix made with an
// imatrix collected by our own collector must be closer to the master (mean KL divergence of
// the next-token distributions on held-out text) than the same mix made without calibration
// (--uniform-imatrix: every column weighs 1, the only way to make IQ types without an imatrix).
//
// The golden small model has random weights whose activations are nearly the same size in
// every channel, so importance data has little to work with there (measured: mean KLD 0.1490
// with vs 0.1529 without, ±0.002 each). Trained models have a few large-activation channels;
// the master here gets them by scaling 8 of the 256 output rows of every ffn_routed_down (the
// latent the routed experts read) by 10 (measured: 0.0836 with vs 0.1700 uniform; asserted
// with margin as < 0.75×). The KL divergences are computed here from full
// softmaxes in double precision, independently of `k3 perplexity`.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "model/model.h"
#include "tools/quantize/qtool_util.h"
#include "quant/codec.h"
#include "runtime/engine.h"
#include "runtime/eval_logits.h"
#include "text/tokenizer.h"
#include "tools/imatrix/imatrix.h"
#include "tools/quantize/quantize.h"

using namespace k3;
using k3::qtest::golden;
using k3::qtest::ScratchDir;

namespace {

constexpr int64_t kCtx = 128;

bool is_outlier_channel(int64_t row) { return row % 32 == 5; }

// small-q8_0 with outlier latent channels; ffn_routed_down is stored as F32.
std::string write_outlier_master(const std::string& out) {
  auto f = gguf::GgufFile::open(golden("small-q8_0.gguf"));
  std::vector<std::vector<float>> owned;
  std::vector<gguf::TensorSpec> specs;
  for (const auto& t : f->tensors()) {
    gguf::TensorSpec s;
    s.name = t.name;
    s.ne = t.ne;
    s.type = t.type;
    s.data = t.data;
    if (t.name.find("ffn_routed_down.weight") != std::string::npos) {
      const int64_t ne0 = t.dim(0), ne1 = t.dim(1);
      std::vector<float>& w = owned.emplace_back(static_cast<size_t>(ne0 * ne1));
      const size_t rb = quant::row_bytes(t.type, ne0);
      for (int64_t r = 0; r < ne1; ++r) {
        quant::dequantize_row(t.type, t.data + static_cast<size_t>(r) * rb, w.data() + r * ne0, ne0);
        if (is_outlier_channel(r))
          for (int64_t c = 0; c < ne0; ++c) w[static_cast<size_t>(r * ne0 + c)] *= 10.0f;
      }
      s.type = quant::Type::F32;
      s.data = reinterpret_cast<const uint8_t*>(w.data());
    }
    specs.push_back(std::move(s));
  }
  gguf::write_gguf(out, f->kvs(), specs);
  return out;
}

std::vector<int32_t> text_tokens(const gguf::GgufFile& model, size_t offset, size_t bytes) {
  std::ifstream in(std::string(K3_TEST_DATA_DIR) + "/text/k3-synth-vocab.gguf.inp", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_GE(all.size(), offset + bytes);
  return text::Tokenizer::from_gguf(model)->encode(all.substr(offset, bytes), false, false);
}

// Logits of every position of consecutive kCtx-token chunks, each from a cleared sequence.
std::vector<float> chunk_logits(const std::string& path, const std::vector<int32_t>& tokens,
                                int64_t n_chunks) {
  auto m = model::Model::load(path);
  runtime::EngineOptions eo;
  eo.n_threads = 2;
  eo.n_ctx = kCtx;
  eo.n_ubatch = kCtx;
  runtime::Engine engine(m, eo);
  std::vector<float> out;
  for (int64_t c = 0; c < n_chunks; ++c) {
    engine.seq_clear(0);
    std::vector<int32_t> chunk(tokens.begin() + c * kCtx, tokens.begin() + (c + 1) * kCtx);
    std::vector<float> l = runtime::eval_logits(engine, chunk, runtime::EvalMode{});
    out.insert(out.end(), l.begin(), l.end());
  }
  return out;
}

void log_softmax(const float* x, int64_t n, std::vector<double>& out) {
  double mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, double(x[i]));
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += std::exp(double(x[i]) - mx);
  const double lse = mx + std::log(s);
  out.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[static_cast<size_t>(i)] = double(x[i]) - lse;
}

// Mean KL(base ‖ q) over the second half of every chunk (as perplexity, which scores c/2 … c-2).
double mean_kld(const std::vector<float>& base, const std::vector<float>& q, int64_t n_vocab) {
  const int64_t rows = static_cast<int64_t>(base.size()) / n_vocab;
  std::vector<double> lp, lq;
  double sum = 0;
  int64_t n = 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (r % kCtx < kCtx / 2) continue;
    log_softmax(base.data() + r * n_vocab, n_vocab, lp);
    log_softmax(q.data() + r * n_vocab, n_vocab, lq);
    double kl = 0;
    for (int64_t i = 0; i < n_vocab; ++i) kl += std::exp(lp[i]) * (lp[i] - lq[i]);
    sum += kl;
    ++n;
  }
  return sum / double(n);
}

}  // namespace

TEST(QuantQuality, ReapMixWithImatrixBeatsUniformOnKld) {
  ScratchDir dir;
  const std::string master = write_outlier_master(dir.file("master.gguf"));
  auto mf = gguf::GgufFile::open(master);
  const int64_t n_vocab = 272;

  // Calibration: the first 12 kB of the text; held out: 4 chunks from 20 kB on.
  const std::vector<int32_t> calib = text_tokens(*mf, 0, 6000);
  const std::vector<int32_t> held = text_tokens(*mf, 20000, 4 * kCtx + 64);
  ASSERT_GE(held.size(), size_t(4 * kCtx));

  tools::ImatrixOptions io;
  io.n_ctx = kCtx;
  io.n_threads = 2;
  io.dataset = "k3-synth-vocab.gguf.inp[0:12000]";
  const tools::ImatrixResult im = tools::collect_imatrix(model::Model::load(master), calib, io);
  ASSERT_GE(im.n_chunks, 20);
  tools::write_imatrix_gguf(dir.file("im.gguf"), im.stats);

  tools::QuantizeOptions o;
  o.input = master;
  o.type = "K3_REAP_IQ1M";
  o.allow_requantize = true;
  o.threads = 2;
  o.output = dir.file("with.gguf");
  o.imatrix = dir.file("im.gguf");
  tools::quantize_model(o);
  o.output = dir.file("without.gguf");
  o.imatrix.clear();
  o.uniform_imatrix = true;
  const tools::QuantizeResult uni = tools::quantize_model(o);
  // The uniform run writes no imatrix provenance, and the mix is the same.
  auto wf = gguf::GgufFile::open(dir.file("without.gguf"));
  EXPECT_EQ(wf->find("quantize.imatrix.file"), nullptr);
  auto withf = gguf::GgufFile::open(dir.file("with.gguf"));
  ASSERT_EQ(withf->tensors().size(), wf->tensors().size());
  int iq = 0;
  for (size_t i = 0; i < wf->tensors().size(); ++i) {
    EXPECT_EQ(withf->tensors()[i].type, wf->tensors()[i].type) << wf->tensors()[i].name;
    iq += wf->tensors()[i].type == quant::Type::IQ1_M || wf->tensors()[i].type == quant::Type::IQ2_XXS;
  }
  EXPECT_EQ(iq, 15);  // 5 MoE layers × gate/up/down

  const std::vector<float> base = chunk_logits(master, held, 4);
  const double kld_with = mean_kld(base, chunk_logits(dir.file("with.gguf"), held, 4), n_vocab);
  const double kld_without = mean_kld(base, chunk_logits(dir.file("without.gguf"), held, 4), n_vocab);
  std::printf(
      "[ kld ] K3_REAP_IQ1M on small-q8_0 with outlier latents, 256 held-out tokens: "
      "mean KLD with imatrix %.5f, uniform %.5f (ratio %.3f)\n",
      kld_with, kld_without, kld_with / kld_without);
  EXPECT_GT(kld_with, 0.0);
  EXPECT_LT(kld_with, 0.75 * kld_without);
}

// The quality ordering of bench/kld_table.sh in CI, on the cheap K-quant types: the golden
// master's KL divergence grows as the file type's bits fall (measured here on 128 scored tokens:
// 0.0039, 0.037, 0.084, 0.280 — each step ≥ 2×, asserted as > 1.5×).
TEST(QuantQuality, KldRisesAsBitsFall) {
  ScratchDir dir;
  const std::string master = golden("small-q8_0.gguf");
  auto mf = gguf::GgufFile::open(master);
  const std::vector<int32_t> held = text_tokens(*mf, 30000, 2 * kCtx + 64);
  ASSERT_GE(held.size(), size_t(2 * kCtx));
  const std::vector<float> base = chunk_logits(master, held, 2);
  double prev = 0;
  for (const char* type : {"Q6_K", "Q4_K_S", "Q3_K_S", "Q2_K"}) {
    tools::QuantizeOptions o;
    o.input = master;
    o.output = dir.file(std::string(type) + ".gguf");
    o.type = type;
    o.allow_requantize = true;
    o.threads = 2;
    tools::quantize_model(o);
    const double kld = mean_kld(base, chunk_logits(o.output, held, 2), 272);
    std::printf("[ kld ] small-q8_0 -> %s: mean KLD %.5f\n", type, kld);
    EXPECT_GT(kld, prev * 1.5) << type;
    prev = kld;
  }
}
