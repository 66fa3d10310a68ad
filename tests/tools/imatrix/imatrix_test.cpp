// k3 imatrix: the file round-trips through the (independent) imatrix reader; on small-k3mix
// with the golden tokens our layout (entry names, shapes, count structure, KVs) is the one of
// the llama.cpp-written small-imatrix.gguf; inputs shared by several weights give identical
// sums (the address → tensor mapping is right); a model whose router bias shuts out some
// experts reports exactly those as never routed.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <sstream>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "model/model.h"
#include "runtime/eval_logits.h"
#include "tools/imatrix/imatrix.h"
#include "tools/quantize/quantize_imatrix.h"

namespace fs = std::filesystem;
using namespace k3;

namespace {

std::string data(const std::string& rel) { return std::string(K3_TEST_DATA_DIR) + "/" + rel; }

struct Scratch {
  fs::path dir;
  Scratch() {
    dir = fs::temp_directory_path() / ("k3-imatrix-test-" + std::to_string(::getpid()));
    fs::create_directories(dir);
  }
  ~Scratch() { fs::remove_all(dir); }
  std::string operator/(const std::string& n) const { return (dir / n).string(); }
};

std::vector<int32_t> golden_tokens() {
  std::ifstream f(data("golden/small-k3mix.tokens"));
  std::stringstream ss;
  ss << f.rdbuf();
  return runtime::parse_token_list(ss.str(), "small-k3mix.tokens");
}

tools::ImatrixResult run(const std::string& model_path, int64_t n_ctx = 16) {
  auto m = model::Model::load(model_path);
  tools::ImatrixOptions o;
  o.n_ctx = n_ctx;
  o.n_threads = 2;
  o.dataset = "small-k3mix.tokens";
  return tools::collect_imatrix(m, golden_tokens(), o);
}

// A copy of small-k3mix whose layer-`layer` router bias is -100 for `shut` (sigmoid scores
// are in (0,1), so these experts can never make the top-k).
std::string write_biased_model(const std::string& out, uint32_t layer, const std::vector<int>& shut) {
  auto f = gguf::GgufFile::open(data("golden/small-k3mix.gguf"));
  const std::string bias_name = "blk." + std::to_string(layer) + ".exp_probs_b.bias";
  const gguf::TensorInfo* bt = f->tensor(bias_name);
  EXPECT_NE(bt, nullptr);
  std::vector<float> bias(static_cast<size_t>(bt->n_elements()));
  std::memcpy(bias.data(), bt->data, bias.size() * 4);
  for (int e : shut) bias[static_cast<size_t>(e)] = -100.0f;
  std::vector<gguf::TensorSpec> specs;
  for (const auto& t : f->tensors()) {
    gguf::TensorSpec s;
    s.name = t.name;
    s.ne = t.ne;
    s.type = t.type;
    s.data = t.name == bias_name ? reinterpret_cast<const uint8_t*>(bias.data()) : t.data;
    specs.push_back(std::move(s));
  }
  gguf::write_gguf(out, f->kvs(), specs);
  return out;
}

}  // namespace

TEST(Imatrix, WriteReadRoundTrip) {
  Scratch tmp;
  tools::ImatrixStats st;
  st.datasets = {"a.txt", "b.txt"};
  st.chunk_count = 7;
  st.chunk_size = 64;
  tools::ImatrixStat dense{3, 1, false, {1.5, 4.0, 0.25}, {2}};
  tools::ImatrixStat exps{2, 3, true, {6, 8, 0, 0, 3, 9}, {2, 0, 3}};
  st.entries["blk.0.ffn_up.weight"] = dense;
  st.entries["blk.1.ffn_up_exps.weight"] = exps;
  const std::string p = tmp / "im.gguf";
  tools::write_imatrix_gguf(p, st);

  const tools::Imatrix im = tools::load_imatrix(p);
  EXPECT_EQ(im.datasets, st.datasets);
  EXPECT_EQ(im.chunk_count, 7u);
  EXPECT_EQ(im.chunk_size, 64u);
  ASSERT_EQ(im.entries.size(), 2u);
  const auto* d = im.find("blk.0.ffn_up.weight");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->n_in, 3);
  EXPECT_EQ(d->n_mat, 1);
  EXPECT_EQ(d->counts, std::vector<int64_t>{2});
  EXPECT_EQ(d->values, (std::vector<float>{0.75f, 2.0f, 0.125f}));
  const auto* x = im.find("blk.1.ffn_up_exps.weight");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->n_in, 2);
  EXPECT_EQ(x->n_mat, 3);
  EXPECT_EQ(x->counts, (std::vector<int64_t>{2, 0, 3}));
  // Expert 1 was never routed: the reader's convention is uniform importance.
  EXPECT_EQ(x->values, (std::vector<float>{3, 4, 1, 1, 1, 3}));

  // Raw layout as llama.cpp writes it: 1-D for dense, [n_in, n_mat] and [1, n_mat] for experts.
  auto f = gguf::GgufFile::open(p);
  ASSERT_EQ(f->tensors().size(), 4u);
  EXPECT_EQ(f->tensors()[0].name, "blk.0.ffn_up.weight.in_sum2");
  EXPECT_EQ(f->tensors()[0].ne, std::vector<int64_t>{3});
  EXPECT_EQ(f->tensors()[1].name, "blk.0.ffn_up.weight.counts");
  EXPECT_EQ(f->tensors()[1].ne, std::vector<int64_t>{1});
  EXPECT_EQ(f->tensors()[2].ne, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f->tensors()[3].ne, (std::vector<int64_t>{1, 3}));
}

TEST(Imatrix, GoldenLayoutMatchesLlamaCpp) {
  Scratch tmp;
  const auto r = run(data("golden/small-k3mix.gguf"));
  EXPECT_EQ(r.n_chunks, 3);
  const std::string p = tmp / "ours.gguf";
  tools::write_imatrix_gguf(p, r.stats);

  auto ref = gguf::GgufFile::open(data("golden/small-imatrix.gguf"));
  auto ours = gguf::GgufFile::open(p);
  // Same KVs, in the same order and of the same types.
  ASSERT_EQ(ours->kvs().size(), ref->kvs().size());
  for (size_t i = 0; i < ref->kvs().size(); ++i) {
    EXPECT_EQ(ours->kvs()[i].first, ref->kvs()[i].first);
    EXPECT_EQ(ours->kvs()[i].second.type, ref->kvs()[i].second.type);
  }
  EXPECT_EQ(ours->get("imatrix.chunk_count").as_uint(), 3u);
  EXPECT_EQ(ours->get("imatrix.chunk_size").as_uint(), 16u);
  // Same tensors, same order, same shapes and types.
  ASSERT_EQ(ours->tensors().size(), ref->tensors().size());
  for (size_t i = 0; i < ref->tensors().size(); ++i) {
    const auto& a = ours->tensors()[i];
    const auto& b = ref->tensors()[i];
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.ne, b.ne) << b.name;
    EXPECT_EQ(a.type, b.type) << b.name;
  }
  // Count structure: dense entries count every token; expert counts sum to k per token.
  const int64_t n_tok = 48, k = 3;
  const tools::Imatrix im = tools::load_imatrix(p);
  const tools::Imatrix gold = tools::load_imatrix(data("golden/small-imatrix.gguf"));
  for (const auto& [name, g] : gold.entries) {
    const auto* e = im.find(name);
    ASSERT_NE(e, nullptr) << name;
    EXPECT_EQ(e->counts.size(), g.counts.size()) << name;
    const int64_t sum = std::accumulate(e->counts.begin(), e->counts.end(), int64_t{0});
    const int64_t gsum = std::accumulate(g.counts.begin(), g.counts.end(), int64_t{0});
    if (g.n_mat > 1) {
      EXPECT_EQ(sum, k * n_tok) << name;
      EXPECT_EQ(gsum, k * 159 * 256) << name;
    } else {
      EXPECT_EQ(sum, n_tok) << name;
      EXPECT_EQ(gsum, 159 * 256) << name;
    }
  }
  // Weights fed the same activations must see the same sums: proves each matmul was mapped to
  // the right tensor (and heads of attn_k_b to their own column blocks).
  const auto& E = r.stats.entries;
  auto same = [&](const std::string& a, const std::string& b) {
    ASSERT_TRUE(E.count(a) && E.count(b)) << a << " " << b;
    EXPECT_EQ(E.at(a).sums, E.at(b).sums) << a << " vs " << b;
  };
  same("blk.0.attn_q.weight", "blk.0.attn_k.weight");
  same("blk.0.attn_q.weight", "blk.0.ssm_g.weight");
  same("blk.0.ffn_gate.weight", "blk.0.ffn_up.weight");
  same("blk.1.ffn_gate_inp.weight", "blk.1.ffn_gate_shexp.weight");
  same("blk.1.ffn_gate_inp.weight", "blk.1.ffn_routed_down.weight");
  same("blk.2.ffn_gate_exps.weight", "blk.2.ffn_up_exps.weight");
  same("blk.3.attn_q_a.weight", "blk.3.attn_kv_a_mqa.weight");
  EXPECT_NE(E.at("blk.1.ffn_gate_exps.weight").sums, E.at("blk.1.ffn_down_exps.weight").sums);
  // Every column of every routed expert with tokens holds a positive sum; k_b heads differ.
  const auto& kb = E.at("blk.3.attn_k_b.weight");
  ASSERT_EQ(kb.n_in, 256);
  EXPECT_NE(std::vector<double>(kb.sums.begin(), kb.sums.begin() + 64),
            std::vector<double>(kb.sums.begin() + 64, kb.sums.begin() + 128));
  for (double v : kb.sums) EXPECT_GT(v, 0.0);
  // Coverage counts agree with the expert matmul counts.
  for (const auto& c : r.coverage) {
    const auto& x = E.at("blk." + std::to_string(c.layer) + ".ffn_gate_exps.weight");
    EXPECT_EQ(c.tokens, x.counts) << c.layer;
  }
  EXPECT_EQ(r.coverage.size(), 5u);
}

TEST(Imatrix, ReportsNeverRoutedExperts) {
  Scratch tmp;
  const std::vector<int> shut = {2, 5};
  const auto base = run(data("golden/small-k3mix.gguf"));
  ASSERT_GE(base.coverage.size(), 1u);
  ASSERT_EQ(base.coverage[0].layer, 1u);
  EXPECT_TRUE(base.coverage[0].never_routed().empty());

  const auto r = run(write_biased_model(tmp / "biased.gguf", 1, shut));
  ASSERT_EQ(r.coverage[0].layer, 1u);
  EXPECT_EQ(r.coverage[0].never_routed(), (std::vector<int32_t>{2, 5}));
  EXPECT_EQ(r.coverage[0].activated(), 6);
  EXPECT_EQ(r.coverage[0].min_count(), 0);
  const std::string rep = tools::format_coverage(r.coverage);
  EXPECT_NE(rep.find("warning: layer 1: 2 expert(s) never routed: 2,5\n"), std::string::npos) << rep;
  // Unrouted experts still get their (zero) rows, and the reader treats them as uniform.
  const std::string p = tmp / "im.gguf";
  tools::write_imatrix_gguf(p, r.stats);
  const auto im = tools::load_imatrix(p);
  const auto* e = im.find("blk.1.ffn_down_exps.weight");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->counts[2], 0);
  EXPECT_EQ(e->counts[5], 0);
  EXPECT_EQ(e->values[2 * e->n_in], 1.0f);
  EXPECT_GT(e->counts[0] + e->counts[1], 0);
}

TEST(Imatrix, CliWritesFileAndCoverage) {
  Scratch tmp;
  const std::string out = tmp / "cli.gguf", log = tmp / "log.txt";
  const std::string cmd = std::string(K3_BINARY) + " imatrix -m " + data("golden/small-k3mix.gguf") +
                          " --tokens-file " + data("golden/small-k3mix.tokens") + " -o " + out +
                          " -c 24 -t 2 > " + log + " 2>&1";
  if (!fs::exists(K3_BINARY)) GTEST_SKIP() << "k3 binary not built";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const auto im = tools::load_imatrix(out);
  EXPECT_EQ(im.chunk_count, 2u);
  EXPECT_EQ(im.chunk_size, 24u);
  EXPECT_EQ(im.entries.size(), 94u);
  std::ifstream f(log);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_NE(ss.str().find("layer   1:"), std::string::npos) << ss.str();
  // Too few tokens for one chunk is a clear error, not a crash.
  const std::string bad = std::string(K3_BINARY) + " imatrix -m " + data("golden/small-k3mix.gguf") +
                          " --tokens-file " + data("golden/small-k3mix.tokens") + " -o " + out +
                          " -c 100 > " + log + " 2>&1";
  EXPECT_EQ(WEXITSTATUS(std::system(bad.c_str())), 1);
}
