// `k3 quantize` pipeline on the golden models: every produced tensor must equal the reference
// codec (quant::quantize_rows, itself verified against ggml vectors) applied to the decoded
// input, expert slice by expert slice with that slice's imatrix; unchanged tensors are byte
// copies; headers match llama-quantize's own outputs byte for byte; failures leave nothing.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>

#include "core/error.h"
#include "gguf/file.h"
#include "tools/quantize/qtool_util.h"
#include "quant/codec.h"
#include "tools/quantize/quantize.h"
#include "tools/quantize/quantize_imatrix.h"

using k3::quant::Type;
using namespace k3::tools;
using k3::qtest::golden;
using k3::qtest::ScratchDir;

namespace {

// Checks the output against an independent re-computation; returns the number of converted
// tensors checked.
// stride > 1: re-computes only every stride-th converted tensor (the slow grid types).
int verify(const std::string& in_path, const std::string& out_path, const QuantizeResult& r,
           const Imatrix* im, int stride = 1) {
  auto in = k3::gguf::GgufFile::open(in_path);
  auto out = k3::gguf::GgufFile::open(out_path);
  EXPECT_EQ(out->tensors().size(), r.plan.tensors.size());
  int converted = 0;
  for (size_t i = 0; i < r.plan.tensors.size() && i < out->tensors().size(); ++i) {
    const TensorPlan& p = r.plan.tensors[i];
    const auto& o = out->tensors()[i];
    const auto* s = in->tensor(p.name);
    EXPECT_EQ(o.name, p.name);
    EXPECT_EQ(o.type, p.to) << p.name;
    EXPECT_EQ(o.ne, s->ne) << p.name;
    if (s->type == o.type) {
      EXPECT_EQ(o.nbytes, s->nbytes);
      EXPECT_EQ(std::memcmp(o.data, s->data, s->nbytes), 0) << p.name << " should be a byte copy";
      continue;
    }
    if (converted++ % stride != 0) continue;
    const int64_t ne0 = s->dim(0), ne1 = s->dim(1), slices = s->n_elements() / (ne0 * ne1);
    const size_t in_row = k3::quant::row_bytes(s->type, ne0), out_row = k3::quant::row_bytes(o.type, ne0);
    const ImatrixEntry* e = im ? im->find(p.name) : nullptr;
    std::vector<float> x(static_cast<size_t>(ne0 * ne1));
    std::vector<uint8_t> want(out_row * static_cast<size_t>(ne1));
    for (int64_t sl = 0; sl < slices; ++sl) {
      for (int64_t r1 = 0; r1 < ne1; ++r1)
        k3::quant::dequantize_row(s->type, s->data + static_cast<size_t>(sl * ne1 + r1) * in_row,
                                  x.data() + r1 * ne0, ne0);
      const float* w = e ? e->values.data() + sl * ne0 : nullptr;
      k3::quant::quantize_rows(o.type, x.data(), want.data(), ne1, ne0, w);
      const bool same =
          std::memcmp(want.data(), o.data + static_cast<size_t>(sl) * want.size(), want.size()) == 0;
      EXPECT_TRUE(same) << p.name << " slice " << sl << " (" << k3::quant::type_name(o.type) << ")";
      if (!same) break;
    }
  }
  return converted;
}

QuantizeResult run(const std::string& in, const std::string& out, const std::string& type,
                   const std::string& imatrix = "", int threads = 2, std::vector<std::string> rules = {}) {
  QuantizeOptions o;
  o.tensor_types = std::move(rules);
  o.input = in;
  o.output = out;
  o.type = type;
  o.imatrix = imatrix;
  o.allow_requantize = true;
  o.threads = threads;
  return quantize_model(o);
}

uint32_t file_type_of(const std::string& path) {
  return static_cast<uint32_t>(k3::gguf::GgufFile::open(path)->get_int("general.file_type", -1));
}

}  // namespace

TEST(Quantize, F32GoldenModelsToEveryFileType) {
  ScratchDir dir;
  for (const char* model : {"tiny10-base.gguf", "archtest-s1.gguf"}) {
    for (const char* type :
         {"Q8_0", "Q6_K", "Q4_K_M", "Q4_K_S", "Q3_K_S", "Q2_K", "MXFP4_MOE", "F16", "BF16", "F32", "COPY"}) {
      SCOPED_TRACE(std::string(model) + " -> " + type);
      const std::string out = dir.file(std::string(type) + ".gguf");
      QuantizeResult r;
      const bool odd_widths = std::string(model) == "tiny10-base.gguf" &&
                              (std::string(type) == "Q8_0" || std::string(type) == "MXFP4_MOE");
      if (odd_widths) {
        // tiny10 has 16- and 48-wide rows; Q8_0/MXFP4 have no shape fallback, so (as in
        // llama-quantize) the run is refused, naming the tensor; F16 overrides make it pass.
        try {
          run(golden(model), out, type);
          ADD_FAILURE() << "no error";
        } catch (const k3::Error& e) {
          EXPECT_NE(std::string(e.what()).find("no fallback"), std::string::npos) << e.what();
          EXPECT_NE(std::string(e.what()).find("blk."), std::string::npos) << e.what();
        }
        EXPECT_FALSE(std::filesystem::exists(out));
        r = run(golden(model), out, type, "", 2, {"ssm_f_b|attn_k_b|ffn_(gate|up)_exps|ffn_routed_up=f16"});
      } else {
        r = run(golden(model), out, type);
      }
      int converted = verify(golden(model), out, r, nullptr);
      if (std::string(type) != "COPY" && std::string(type) != "F32") { EXPECT_GT(converted, 0); }
      if (std::string(type) != "COPY") { EXPECT_EQ(file_type_of(out), parse_recipe(type).file_type); }
    }
  }
}

// The IQ file types from the F32 goldens, which have no imatrix of their own: with
// --uniform-imatrix every grid tensor is made (64/128-wide rows take the IQ4_NL fallback) and
// matches the reference codec given the same all-ones importance.
TEST(Quantize, F32GoldenModelsToIqTypesWithUniformImatrix) {
  ScratchDir dir;
  for (const char* model : {"tiny10-base.gguf", "archtest-s1.gguf"}) {
    auto in = k3::gguf::GgufFile::open(golden(model));
    const Imatrix flat = uniform_imatrix(*in);
    for (const char* type : {"IQ2_XXS", "IQ1_M", "IQ1_S"}) {
      SCOPED_TRACE(std::string(model) + " -> " + type);
      QuantizeOptions o;
      o.input = golden(model);
      o.output = dir.file(std::string(type) + ".gguf");
      o.type = type;
      o.uniform_imatrix = true;
      o.threads = 2;
      // tiny10's 16/48-wide rows have no IQ4_NL fallback either (F16, as llama-quantize).
      QuantizeResult r = quantize_model(o);
      EXPECT_GT(verify(golden(model), o.output, r, &flat), 0);
      EXPECT_EQ(file_type_of(o.output), parse_recipe(type).file_type);
      EXPECT_EQ(k3::gguf::GgufFile::open(o.output)->find("quantize.imatrix.file"), nullptr);
    }
  }
  QuantizeOptions both;
  both.input = golden("tiny10-base.gguf");
  both.output = dir.file("both.gguf");
  both.type = "IQ1_M";
  both.imatrix = golden("small-imatrix.gguf");
  both.uniform_imatrix = true;
  EXPECT_THROW(quantize_model(both), k3::Error);
  EXPECT_FALSE(std::filesystem::exists(both.output));
}

// --uniform-missing completes the imatrix: a tensor it covers is quantized exactly as with the
// imatrix alone, one it lacks (token_embd.weight, which no matmul reads) exactly as with the
// uniform importance; and the option needs an --imatrix.
TEST(Quantize, UniformMissingFillsOnlyWhatTheImatrixLacks) {
  ScratchDir dir;
  auto make = [&](const char* name, bool imatrix, bool uniform, bool missing) {
    QuantizeOptions o;
    o.input = golden("small-q8_0.gguf");
    o.output = dir.file(name);
    o.type = "Q2_K";
    if (imatrix) o.imatrix = golden("small-imatrix.gguf");
    o.uniform_imatrix = uniform;
    o.uniform_missing = missing;
    o.allow_requantize = true;
    o.threads = 2;
    quantize_model(o);
    return k3::gguf::GgufFile::open(o.output);
  };
  auto plain = make("plain.gguf", true, false, false);
  auto filled = make("filled.gguf", true, false, true);
  auto flat = make("flat.gguf", false, true, false);
  const Imatrix im = load_imatrix(golden("small-imatrix.gguf"));
  auto same = [](const k3::gguf::GgufFile& a, const k3::gguf::GgufFile& b, const std::string& name) {
    const auto* ta = a.tensor(name);
    const auto* tb = b.tensor(name);
    return ta && tb && ta->type == tb->type && ta->nbytes == tb->nbytes &&
           std::equal(ta->data, ta->data + ta->nbytes, tb->data);
  };
  int covered = 0, filled_in = 0;
  for (const auto& t : filled->tensors()) {
    if (t.ne.size() < 2 || t.dim(1) <= 1) continue;
    SCOPED_TRACE(t.name);
    if (im.find(t.name)) {
      EXPECT_TRUE(same(*filled, *plain, t.name));
      ++covered;
    } else {
      EXPECT_TRUE(same(*filled, *flat, t.name));
      ++filled_in;
    }
  }
  EXPECT_GT(covered, 50);
  EXPECT_GE(filled_in, 1);                                   // token_embd.weight at least
  EXPECT_FALSE(same(*filled, *plain, "token_embd.weight"));  // the option changes it

  QuantizeOptions alone;
  alone.input = golden("small-q8_0.gguf");
  alone.output = dir.file("alone.gguf");
  alone.type = "Q2_K";
  alone.uniform_missing = true;
  EXPECT_THROW(quantize_model(alone), k3::Error);
  EXPECT_FALSE(std::filesystem::exists(alone.output));
}

TEST(Quantize, SmallQ8ToEveryFileTypeWithImatrix) {
  ScratchDir dir;
  Imatrix im = load_imatrix(golden("small-imatrix.gguf"));
  // (IQ2_XXS is checked in ThreadCountDoesNotChangeTheBytes, K3_REAP_IQ1M in HeadersMatchLlamaQuantize.)
  for (const char* type :
       {"Q6_K", "Q4_K_M", "Q4_K_S", "Q3_K_S", "Q2_K", "IQ1_M", "IQ1_S", "MXFP4_MOE", "BF16"}) {
    SCOPED_TRACE(type);
    const std::string out = dir.file(std::string(type) + ".gguf");
    QuantizeResult r = run(golden("small-q8_0.gguf"), out, type, golden("small-imatrix.gguf"));
    const bool grid = type[0] == 'I';
    EXPECT_GT(verify(golden("small-q8_0.gguf"), out, r, &im, grid ? 4 : 1), 0);
    EXPECT_EQ(file_type_of(out), parse_recipe(type).file_type);
    auto f = k3::gguf::GgufFile::open(out);
    EXPECT_EQ(f->get_int("quantize.imatrix.entries_count", 0), 94);
  }
}

// Q8_0 → Q8_0 changes nothing: every tensor is copied, KVs and order are kept.
TEST(Quantize, SameTypeIsAByteIdenticalCopy) {
  ScratchDir dir;
  run(golden("small-q8_0.gguf"), dir.file("q8.gguf"), "Q8_0");
  EXPECT_EQ(k3::qtest::read_bytes(dir.file("q8.gguf")), k3::qtest::read_bytes(golden("small-q8_0.gguf")));
}

// Header (KVs, tensor infos, offsets) byte-identical to the files llama-quantize wrote from the
// same master: small-q2k (Q2_K mixture) and small-k3mix (the REAP recipe with the imatrix).
TEST(Quantize, HeadersMatchLlamaQuantize) {
  ScratchDir dir;
  struct Case {
    const char* type;
    const char* ref;
    bool imatrix;
  };
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(std::string(K3_TEST_DATA_DIR) +
                                "/golden");  // quantize.imatrix.file as recorded
  for (Case c : {Case{"Q2_K", "small-q2k.gguf", false}, Case{"K3_REAP_IQ1M", "small-k3mix.gguf", true}}) {
    SCOPED_TRACE(c.type);
    const std::string out = dir.file(std::string(c.type) + ".gguf");
    QuantizeResult r = run("small-q8_0.gguf", out, c.type, c.imatrix ? "small-imatrix.gguf" : "");
    std::unique_ptr<Imatrix> im;
    if (c.imatrix) im = std::make_unique<Imatrix>(load_imatrix("small-imatrix.gguf"));
    EXPECT_GT(verify("small-q8_0.gguf", out, r, im.get()), 0);
    auto ref = k3::gguf::GgufFile::open(c.ref);
    const uint64_t header = ref->shards()[0].data_offset;
    std::vector<uint8_t> a = k3::qtest::read_bytes(out), b = k3::qtest::read_bytes(c.ref);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), header), 0);
    // Tensors that both quantized identically from the same Q8_0/F32 bytes (copies) match too.
    auto o = k3::gguf::GgufFile::open(out);
    auto q8 = k3::gguf::GgufFile::open("small-q8_0.gguf");
    int copies = 0;
    for (const auto& t : ref->tensors())
      if (t.type == q8->tensor(t.name)->type) {
        EXPECT_EQ(std::memcmp(o->tensor(t.name)->data, t.data, t.nbytes), 0) << t.name;
        ++copies;
      }
    EXPECT_GT(copies, 60);
  }
  std::filesystem::current_path(cwd);
}

TEST(Quantize, Mxfp4ExpertsPassThroughUntouched) {
  ScratchDir dir;
  QuantizeResult r = run(golden("small-mxfp4.gguf"), dir.file("m.gguf"), "MXFP4_MOE");
  auto in = k3::gguf::GgufFile::open(golden("small-mxfp4.gguf"));
  auto out = k3::gguf::GgufFile::open(dir.file("m.gguf"));
  int experts = 0;
  for (const TensorPlan& p : r.plan.tensors) {
    if (p.name.find("_exps.weight") == std::string::npos) continue;
    ++experts;
    EXPECT_FALSE(p.convert) << p.name;
    EXPECT_EQ(std::memcmp(out->tensor(p.name)->data, in->tensor(p.name)->data, in->tensor(p.name)->nbytes),
              0);
  }
  EXPECT_EQ(experts, 15);
  verify(golden("small-mxfp4.gguf"), dir.file("m.gguf"), r, nullptr);
}

TEST(Quantize, ThreadCountDoesNotChangeTheBytes) {
  ScratchDir dir;
  double secs[2] = {0, 0};
  int threads[2] = {1, 2};
  QuantizeResult last;
  for (int i = 0; i < 2; ++i) {
    QuantizeResult r = run(golden("small-q8_0.gguf"), dir.file(fmt::format("t{}.gguf", threads[i])),
                           "IQ2_XXS", golden("small-imatrix.gguf"), threads[i]);
    secs[i] = r.seconds;
    last = r;
    std::printf("[ throughput ] small-q8_0 -> IQ2_XXS, %d thread(s): %.2f s, %.2f MB/s of input\n",
                threads[i], r.seconds, static_cast<double>(r.plan.bytes_in) / 1e6 / r.seconds);
  }
  EXPECT_EQ(k3::qtest::read_bytes(dir.file("t1.gguf")), k3::qtest::read_bytes(dir.file("t2.gguf")));
  EXPECT_GT(secs[0], 0);
  Imatrix im = load_imatrix(golden("small-imatrix.gguf"));
  EXPECT_GT(verify(golden("small-q8_0.gguf"), dir.file("t2.gguf"), last, &im, 3), 0);
}

TEST(Quantize, RefusesImatrixTypesWithoutImatrix) {
  ScratchDir dir;
  QuantizeOptions o;
  o.input = golden("small-q8_0.gguf");  // 256-wide rows: no IQ4_NL shape fallback
  o.allow_requantize = true;
  o.output = dir.file("x.gguf");
  o.type = "IQ2_XXS";
  try {
    quantize_model(o);
    FAIL() << "no error";
  } catch (const k3::Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("blk."), std::string::npos) << m;  // names the tensor
    EXPECT_NE(m.find("--imatrix"), std::string::npos) << m;
    EXPECT_NE(m.find("IQ2_XXS"), std::string::npos) << m;
  }
  // An override into IQ1_M is refused the same way.
  o.type = "Q8_0";
  o.tensor_types = {"ffn_up_exps=iq1_m"};
  try {
    quantize_model(o);
    FAIL() << "no error";
  } catch (const k3::Error& e) {
    EXPECT_NE(std::string(e.what()).find("ffn_up_exps"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(dir.list().empty());
}

TEST(Quantize, RefusesRequantizeUnlessAllowed) {
  ScratchDir dir;
  QuantizeOptions o;
  o.input = golden("small-q8_0.gguf");
  o.output = dir.file("x.gguf");
  o.type = "Q4_K_M";
  try {
    quantize_model(o);
    FAIL() << "no error";
  } catch (const k3::Error& e) {
    EXPECT_NE(std::string(e.what()).find("--allow-requantize"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(dir.list().empty());
}

TEST(Quantize, ImatrixOfTheWrongSizeIsRejected) {
  ScratchDir dir;
  QuantizeOptions o;
  o.input = golden("tiny10-base.gguf");  // n_embd 64: the small model's 256-wide entries do not fit
  o.output = dir.file("x.gguf");
  o.type = "IQ2_XXS";
  o.imatrix = golden("small-imatrix.gguf");
  try {
    quantize_model(o);
    FAIL() << "no error";
  } catch (const k3::Error& e) {
    EXPECT_NE(std::string(e.what()).find("imatrix"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(dir.list().empty());
}

// An error half way (here injected after the 40th tensor, also with several shards) leaves no
// file at all: neither the final name nor a temporary.
TEST(Quantize, FailureHalfWayLeavesNothing) {
  ScratchDir dir;
  for (uint32_t max_tensors : {0u, 30u}) {
    QuantizeOptions o;
    o.input = golden("small-q8_0.gguf");
    o.output = dir.file("out.gguf");
    o.type = "Q4_K_M";
    o.allow_requantize = true;
    o.split.max_tensors = max_tensors;
    o.on_tensor = [](const std::string& name, size_t i, size_t) {
      if (i == 40) k3::fail("injected failure at {}", name);
    };
    EXPECT_THROW(quantize_model(o), k3::Error);
    EXPECT_TRUE(dir.list().empty()) << dir.list().front();
  }
}

// A process killed half way (SIGKILL: no destructors run) leaves at most a temporary, never a
// file under the final name.
TEST(Quantize, KilledHalfWayLeavesNoFinalFile) {
  ScratchDir dir;
  const std::string out = dir.file("out.gguf");
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    QuantizeOptions o;
    o.input = golden("small-q8_0.gguf");
    o.output = out;
    o.type = "Q4_K_M";
    o.allow_requantize = true;
    o.threads = 1;
    o.on_tensor = [](const std::string&, size_t i, size_t) {
      if (i == 60) raise(SIGKILL);
    };
    try {
      quantize_model(o);
    } catch (...) {}
    _exit(3);  // not reached when the kill works
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  EXPECT_FALSE(std::filesystem::exists(out));
  for (const std::string& f : dir.list()) EXPECT_NE(f.find(".tmp."), std::string::npos) << f;
}

// Same through the real binary: SIGKILL while `k3 quantize` runs.
TEST(Quantize, KilledBinaryLeavesNoFinalFile) {
  if (!std::filesystem::exists(K3_BINARY)) GTEST_SKIP() << "k3 binary not built";
  ScratchDir dir;
  const std::string out = dir.file("out.gguf");
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const std::string in = golden("small-q8_0.gguf"), im = golden("small-imatrix.gguf");
    execl(K3_BINARY, K3_BINARY, "quantize", in.c_str(), out.c_str(), "IQ1_M", "--imatrix", im.c_str(),
          "--allow-requantize", "-t", "1", "-q", static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until the temporary exists (the run is under way), then kill.
  bool started = false;
  for (int i = 0; i < 400 && !started; ++i) {
    for (const std::string& f : dir.list()) started |= f.find(".tmp.") != std::string::npos;
    if (!started) usleep(10000);
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(started);
  EXPECT_TRUE(WIFSIGNALED(status)) << "k3 quantize finished before it was killed";
  EXPECT_FALSE(std::filesystem::exists(out));
}
