// `k3 info` and `k3 dequant` through the binary: JSON census numbers (independent values from
// tests/gguf/census_reference.py), the human report, F32 tensors equal to their raw file bytes,
// Q8_0 tensors equal to an independent decoder written here, and error exits.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

struct Result {
  int rc;
  std::string out;
};

Result run(const std::string& args) {
  std::string cmd = std::string(K3_BINARY) + " " + args;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return {-1, ""};
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = ::pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

std::string golden(const std::string& n) { return std::string(K3_TEST_DATA_DIR) + "/golden/" + n; }

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string tmp_file(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("k3-cli-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

// IEEE half -> float, written out independently of the library's codec.
float half_to_float(uint16_t h) {
  int sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
  float v;
  if (exp == 0) v = std::ldexp(static_cast<float>(man), -24);
  else if (exp == 31) v = man ? NAN : INFINITY;
  else v = std::ldexp(static_cast<float>(man + 1024), exp - 25);
  return sign ? -v : v;
}

TEST(CliInfo, JsonCensusOfSmallQ8) {
  Result r = run("info " + golden("small-q8_0.gguf") + " --json");
  ASSERT_EQ(r.rc, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["tensor_count"], 160);
  EXPECT_EQ(j["kv_count"], 42);
  EXPECT_EQ(j["params"], 12595256);
  EXPECT_EQ(j["file_size"], 13494624);
  EXPECT_EQ(j["types"][0]["type"], "F32");
  EXPECT_EQ(j["types"][0]["tensors"], 69);
  EXPECT_EQ(j["types"][1]["type"], "Q8_0");
  EXPECT_EQ(j["types"][1]["tensors"], 91);
  EXPECT_EQ(j["layers"]["kda"], nlohmann::json::parse("[0,1,2,4]"));
  EXPECT_EQ(j["experts"]["groups"][0]["text"], "15 \u00d7 65,536 \u00d7 8");
}

TEST(CliInfo, HumanReport) {
  Result r = run("info " + golden("small-k3mix.gguf") + " --kv --tensors");
  ASSERT_EQ(r.rc, 0) << r.out;
  for (const char* s : {"kimi-k3", "12,595,256", "IQ1_M", "IQ2_XXS", "15 \u00d7 65,536 \u00d7 8", "KDA",
                        "MLA", "0-2,4", "expert_count", "blk.1.ffn_gate_exps.weight", "tokenizer.ggml.model"})
    EXPECT_NE(r.out.find(s), std::string::npos) << "missing " << s << " in\n" << r.out;
  // A non-model file works too.
  Result im = run("info " + golden("small-imatrix.gguf"));
  ASSERT_EQ(im.rc, 0) << im.out;
  EXPECT_NE(im.out.find("imatrix"), std::string::npos) << im.out;
}

TEST(CliInfo, InvalidFileExitsOneWithContext) {
  std::string p = tmp_file("bad.gguf");
  std::string bytes = slurp(golden("tiny10-base.gguf")).substr(0, 5000);
  std::ofstream(p, std::ios::binary) << bytes;
  Result r = run("info " + p + " 2>&1");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("bad.gguf"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("byte offset"), std::string::npos) << r.out;
  std::filesystem::remove(p);
  EXPECT_EQ(run("info 2>/dev/null").rc, 2);
}

TEST(CliDequant, F32TensorEqualsFileBytes) {
  std::string out = tmp_file("norm.f32");
  Result r = run("dequant " + golden("small-q8_0.gguf") + " --tensor output_norm.weight -o " + out);
  ASSERT_EQ(r.rc, 0) << r.out;
  std::string got = slurp(out);
  // output_norm.weight: F32 [256] at absolute offset 89664 (tests/gguf/census_reference.py).
  std::string file = slurp(golden("small-q8_0.gguf"));
  ASSERT_EQ(got.size(), 1024u);
  EXPECT_EQ(got, file.substr(89664, 1024));
  float first;
  std::memcpy(&first, got.data(), 4);
  EXPECT_FLOAT_EQ(first, 1.011307716369629f);
  std::filesystem::remove(out);
}

TEST(CliDequant, Q8TensorMatchesIndependentDecoder) {
  // token_embd.weight: Q8_0 [256, 272] at data offset 76032, data section at 15680.
  Result r = run("dequant " + golden("small-q8_0.gguf") + " -t token_embd.weight -o -");
  ASSERT_EQ(r.rc, 0);
  ASSERT_EQ(r.out.size(), 256u * 272u * 4u);
  std::string file = slurp(golden("small-q8_0.gguf"));
  const uint8_t* blocks = reinterpret_cast<const uint8_t*>(file.data()) + 15680 + 76032;
  size_t mismatches = 0;
  for (size_t b = 0; b < 256 * 272 / 32; ++b) {
    const uint8_t* blk = blocks + b * 34;
    float d = half_to_float(static_cast<uint16_t>(blk[0] | (blk[1] << 8)));
    for (int i = 0; i < 32; ++i) {
      float want = d * static_cast<float>(static_cast<int8_t>(blk[2 + i]));
      float got;
      std::memcpy(&got, r.out.data() + (b * 32 + i) * 4, 4);
      if (got != want) ++mismatches;
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(CliDequant, Errors) {
  Result r = run("dequant " + golden("small-q8_0.gguf") + " -t token_embd -o /dev/null 2>&1");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.out.find("no tensor named 'token_embd'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("token_embd.weight"), std::string::npos) << r.out;  // suggestion
  EXPECT_EQ(run("dequant " + golden("small-q8_0.gguf") + " -o /dev/null 2>/dev/null").rc, 2);
  // A failed run leaves no output file.
  std::string out = tmp_file("none.f32");
  EXPECT_EQ(run("dequant " + golden("small-q8_0.gguf") + " -t nope -o " + out + " 2>/dev/null").rc, 1);
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
