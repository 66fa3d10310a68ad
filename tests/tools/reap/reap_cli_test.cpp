// `k3 reap` end to end through the binary: token, text and chat calibration; the report's
// kept lists are what the output file holds (byte-exact experts); the streaming expert store
// (--ram-budget) and a sharded input change nothing; --prune-ratio and seeded random
// selection; and every refused request exits non-zero, names the problem and leaves no
// output file.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "gguf/file.h"
#include "model/model.h"
#include "tools/reap/reap_test_util.h"

using namespace k3;
using reap_test::data;
using reap_test::Scratch;

namespace {

struct Result {
  int rc = -1;
  std::string out, err;
};

std::string slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

Result run_k3(const Scratch& s, const std::string& args) {
  const std::string out = s / "stdout.txt", err = s / "stderr.txt";
  const std::string cmd = std::string("'") + K3_BINARY + "' " + args + " >'" + out + "' 2>'" + err + "'";
  const int status = std::system(cmd.c_str());
  Result r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

const std::string kModel = data("golden/small-q8_0.gguf");
const std::string kTokens = data("golden/small-q8_0.tokens");

// Every kept expert of `out` equals the source expert the report names.
void expect_report_matches_file(const std::string& out_path, const nlohmann::json& report) {
  auto src = gguf::GgufFile::open(kModel);
  auto out = gguf::GgufFile::open(out_path);
  for (const auto& l : report["layers"]) {
    const std::vector<int32_t> kept = l["kept"];
    for (const char* t : {"ffn_gate_exps.weight", "ffn_up_exps.weight", "ffn_down_exps.weight"}) {
      const std::string name = "blk." + std::to_string(l["layer"].get<int>()) + "." + t;
      const gguf::TensorInfo* a = src->tensor(name);
      const gguf::TensorInfo* b = out->tensor(name);
      ASSERT_TRUE(a && b) << name;
      const uint64_t stride = a->nbytes / 8;
      ASSERT_EQ(b->nbytes, stride * kept.size());
      for (size_t k = 0; k < kept.size(); ++k)
        EXPECT_EQ(0, std::memcmp(b->data + k * stride, a->data + uint64_t(kept[k]) * stride, stride)) << name;
    }
  }
}

}  // namespace

TEST(ReapCli, TokensTextAndChatCalibration) {
  Scratch s("cli");
  const std::string common = " -m '" + kModel + "' -t 2 --no-progress -c 16 ";
  Result r = run_k3(s, "reap" + common + "--calib-tokens '" + kTokens + "' --keep 4 -o '" + (s / "a.gguf") +
                           "' --scores-out '" + (s / "a.json") + "'");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("kept 4 of 8 experts in each of 5 MoE layers"), std::string::npos) << r.out;
  const auto ja = nlohmann::json::parse(slurp(s / "a.json"));
  EXPECT_EQ(ja["method"], "reap");
  EXPECT_EQ(ja["calibration_tokens"], 48);
  EXPECT_EQ(ja["layers"].size(), 5u);
  expect_report_matches_file(s / "a.gguf", ja);
  EXPECT_EQ(model::Model::load(s / "a.gguf")->hparams().n_expert, 4u);

  // Calibrating through the streaming expert store gives the same scores and the same file.
  r = run_k3(s, "reap" + common + "--calib-tokens '" + kTokens + "' --keep 4 --ram-budget unlimited -o '" +
                    (s / "a2.gguf") + "' --scores-out '" + (s / "a2.json") + "'");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(slurp(s / "a.json"), slurp(s / "a2.json"));
  EXPECT_EQ(slurp(s / "a.gguf"), slurp(s / "a2.gguf"));

  // A sharded input (split.* keys, tensors in 3 files) gives the very same file.
  r = run_k3(s, "split --split-max-size 5M '" + kModel + "' '" + (s / "in") + "'");
  ASSERT_EQ(r.rc, 0) << r.err;
  r = run_k3(s, "reap -m '" + (s / "in-00001-of-00003.gguf") + "' -t 2 --no-progress -c 16 --calib-tokens '" +
                    kTokens + "' --keep 4 -o '" + (s / "a3.gguf") + "'");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(slurp(s / "a.gguf"), slurp(s / "a3.gguf"));

  // --prune-ratio 0.5 of 8 keeps 4: the same plan as --keep 4.
  r = run_k3(s, "reap" + common + "--calib-tokens '" + kTokens + "' --prune-ratio 0.5 -o '" + (s / "b.gguf") +
                    "' --scores-out '" + (s / "b.json") + "'");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto jb = nlohmann::json::parse(slurp(s / "b.json"));
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(ja["layers"][i]["kept"], jb["layers"][i]["kept"]);
  EXPECT_EQ(slurp(s / "a.gguf"), slurp(s / "b.gguf"));

  // Random: reproducible with a seed, recorded in the report, and sharded output works.
  for (const char* name : {"c", "d"}) {
    r = run_k3(s, "reap" + common + "--calib-tokens '" + kTokens +
                      "' --keep 5 --method random --seed 7 -o '" + (s / name) + ".gguf' --scores-out '" +
                      (s / name) + ".json' --split-max-size 3M");
    ASSERT_EQ(r.rc, 0) << r.err;
  }
  const auto jc = nlohmann::json::parse(slurp(s / "c.json"));
  EXPECT_EQ(jc["seed"], 7);
  EXPECT_EQ(slurp(s / "c.json"), slurp(s / "d.json"));
  EXPECT_TRUE(std::filesystem::exists(s / "c-00001-of-00004.gguf")) << r.out;
  EXPECT_EQ(model::Model::load(s / "c-00001-of-00004.gguf")->hparams().n_expert, 5u);

  // Text, tokenized with the model's vocabulary, and JSONL chats.
  {
    std::ofstream f(s / "calib.txt");
    f << "The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs.\n";
    std::ofstream g(s / "calib.jsonl");
    g << R"([{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello, how can I help?"}])"
      << "\n";
  }
  r = run_k3(s, "reap" + common + "--calib '" + (s / "calib.txt") + "' --keep 6 --method freq -o '" +
                    (s / "e.gguf") + "'");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("method freq"), std::string::npos);
  r = run_k3(s, "reap" + common + "--chat --calib '" + (s / "calib.jsonl") + "' --keep 3 -o '" +
                    (s / "f.gguf") + "'");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("1 conversations"), std::string::npos) << r.err;
  EXPECT_EQ(model::Model::load(s / "f.gguf")->hparams().n_expert, 3u);
}

TEST(ReapCli, RefusesBadInputWithoutPartialOutput) {
  Scratch s("cli-bad");
  reap_test::write_edited(kModel, s / "broken.gguf", {"blk.4.ffn_gate_inp.weight"});
  const std::string out = s / "out.gguf";
  struct Bad {
    std::string args;
    int rc;
    std::string needle;
  };
  const std::string tok = " --calib-tokens '" + kTokens + "' ";
  const std::vector<Bad> cases = {
      {"-m '" + kModel + "' --calib '" + (s / "nope.txt") + "' --keep 4 -o '" + out + "'", 1, "nope.txt"},
      {"-m '" + kModel + "'" + tok + "--keep 4 -o '" + (s / "no-dir/out.gguf") + "'", 1, "does not exist"},
      {"-m '" + kModel + "'" + tok + "--keep 4 -o '" + out + "' --scores-out '" + (s / "no-dir/s.json") + "'",
       1, "does not exist"},
      {"-m '" + kModel + "'" + tok + "--keep 9 -o '" + out + "'", 1, "more than the model's 8 experts"},
      {"-m '" + kModel + "'" + tok + "--keep 2 -o '" + out + "'", 1, "fewer than the 3 experts"},
      {"-m '" + kModel + "'" + tok + "--prune-ratio 1.5 -o '" + out + "'", 1, "between 0 and 1"},
      {"-m '" + kModel + "'" + tok + "--prune-ratio 0 -o '" + out + "'", 1, "between 0 and 1"},
      {"-m '" + kModel + "'" + tok + "--prune-ratio 0.8 -o '" + out + "'", 1,
       "largest ratio allowed is 0.6250"},
      {"-m '" + (s / "broken.gguf") + "'" + tok + "--keep 4 -o '" + out + "'", 1,
       "blk.4.ffn_gate_inp.weight"},
      {"-m '" + kModel + "'" + tok + "-o '" + out + "'", 2, "--keep"},
      {"-m '" + kModel + "'" + tok + "--keep 4 --prune-ratio 0.5 -o '" + out + "'", 2, "excludes"},
      {"-m '" + kModel + "'" + tok + "--keep 4 --method best -o '" + out + "'", 2, "method"},
      {"-m '" + kModel + "' --chat" + tok + "--keep 4 -o '" + out + "'", 2, "--chat"},
      {"-m '" + kModel + "'" + tok + "--keep 4 -o '" + kModel + "'", 1, "input model itself"},
  };
  for (const Bad& c : cases) {
    const Result r = run_k3(s, "reap " + c.args);
    EXPECT_EQ(r.rc, c.rc) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << c.args << "\nstderr: " << r.err;
    const auto files = s.files();
    EXPECT_EQ(files, std::vector<std::string>{"broken.gguf"}) << c.args;
  }
}
