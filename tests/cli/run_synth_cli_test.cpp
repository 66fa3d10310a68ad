// End-to-end tests of the k3 binary (K3_BINARY): k3 synth → k3 info → k3 run, seeded
// reproducibility, the embedded default model, token-id mode, and usage errors (exit 2).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {

struct Result {
  int rc = -1;
  std::string out, err;
};

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt_dir(::getpid(), ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  static std::string fmt_dir(int pid, const char* name) {
    return std::string("k3-cli-test-") + std::to_string(pid) + "-" + name;
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // Runs `k3 ARGS` through the shell, capturing stdout, stderr and the exit code.
  Result k3(const std::string& args) const {
    std::string out = path("stdout.txt"), err = path("stderr.txt");
    std::string cmd = std::string("'") + K3_BINARY + "' " + args + " >'" + out + "' 2>'" + err + "'";
    int status = std::system(cmd.c_str());
    Result r;
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }
  static std::string slurp(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }
  fs::path dir_;
};

}  // namespace

TEST_F(Cli, SynthInfoRunIsReproducible) {
  const std::string model = path("tiny.gguf");
  Result s = k3("synth --preset tiny -o '" + model + "'");
  ASSERT_EQ(s.rc, 0) << s.err;
  ASSERT_TRUE(fs::exists(model));
  EXPECT_NE(s.out.find("tensors"), std::string::npos);

  Result info = k3("info '" + model + "'");
  ASSERT_EQ(info.rc, 0) << info.err;
  EXPECT_NE(info.out.find("kimi-k3"), std::string::npos) << info.out;

  const std::string run = "run -m '" + model + "' -p 'Hello' -n 8 --seed 1";
  Result a = k3(run), b = k3(run);
  ASSERT_EQ(a.rc, 0) << a.err;
  ASSERT_EQ(b.rc, 0) << b.err;
  EXPECT_FALSE(a.out.empty());
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.err.find("tok/s"), std::string::npos) << a.err;
  EXPECT_NE(a.err.find("generation: "), std::string::npos) << a.err;
}

TEST_F(Cli, EmbeddedDefaultModelRuns) {
  Result a = k3("run -n 6 --seed 7 --ignore-eos"), b = k3("run -n 6 --seed 7 --ignore-eos");
  ASSERT_EQ(a.rc, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.err.find("embedded"), std::string::npos) << a.err;
  EXPECT_NE(a.err.find("generation: 6 tokens"), std::string::npos) << a.err;
}

TEST_F(Cli, ModelWithoutVocabularyTakesTokenIds) {
  const std::string model = path("novocab.gguf");
  ASSERT_EQ(k3("synth -q --vocab 100 -o '" + model + "'").rc, 0);
  Result bad = k3("run -m '" + model + "' -p 'text' -n 2");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("--tokens"), std::string::npos) << bad.err;
  Result ok = k3("run -m '" + model + "' --tokens 1,2,3 -n 4 --seed 2 --temp 0");
  ASSERT_EQ(ok.rc, 0) << ok.err;
  // Four ids, each in 0..99, separated by spaces.
  std::istringstream is(ok.out);
  int id, n = 0;
  while (is >> id) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, 100);
    ++n;
  }
  EXPECT_EQ(n, 4) << ok.out;
}

TEST_F(Cli, BadFlagsExitWithTwoAndAMessage) {
  const char* cases[] = {
      "run --no-such-flag",
      "run --top-p 0",
      "run --cache-type q4",
      "run -n notanumber",
      "synth",                                   // no -o
      "synth -o x.gguf --preset huge",           // unknown preset
      "synth -o x.gguf --n-expert-used 99",      // more than n_expert
      "synth -o x.gguf --type-rule 'ffn=NOPE'",  // unknown type
      "synth -o x.gguf --sparse --no-sparse",
  };
  for (const char* c : cases) {
    Result r = k3(std::string(c));
    EXPECT_EQ(r.rc, 2) << c << "\n" << r.err;
    EXPECT_FALSE(r.err.empty()) << c;
    EXPECT_FALSE(fs::exists("x.gguf"));
  }
}

// Every subcommand parses through cli/parse_args: an unknown flag is a usage error (2) with
// a message (CLI11 names a missing required argument first, where there is one), --help
// prints its usage and exits 0.
TEST_F(Cli, EverySubcommandAgreesOnUsageErrorsAndHelp) {
  for (const char* cmd :
       {"run", "serve", "bench", "info", "dequant", "quantize", "imatrix", "perplexity", "reap", "convert",
        "split", "merge", "synth", "tokenize", "chat-render", "eval-logits"}) {
    Result bad = k3(std::string(cmd) + " --no-such-flag");
    EXPECT_EQ(bad.rc, 2) << cmd << "\n" << bad.err;
    EXPECT_NE(bad.err.find("Run with --help"), std::string::npos) << cmd << "\n" << bad.err;
    Result help = k3(std::string(cmd) + " --help");
    EXPECT_EQ(help.rc, 0) << cmd << "\n" << help.err;
    EXPECT_NE(help.out.find("Usage"), std::string::npos) << cmd << "\n" << help.out;
  }
}

// A command's own checks of its flags go through the same path (cli::usage_error): one line
// `error: …` on stderr and exit status 2, for every command that has such checks.
TEST_F(Cli, CommandsOwnFlagChecksAreUsageErrors) {
  for (const char* line :
       {"nosuch", "run --threads -1", "serve --parallel 0", "quantize",
        "synth --sparse --no-sparse -o x.gguf", "tokenize -m x.gguf", "info", "reap -m x.gguf -o y",
        "eval-logits -m x.gguf -o y", "split x.gguf y", "perplexity -m x.gguf", "imatrix -m x.gguf -o y"}) {
    Result r = k3(line);
    EXPECT_EQ(r.rc, 2) << line << "\n" << r.err;
    EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << line << "\n" << r.err;
  }
}

TEST_F(Cli, MissingModelFileIsAnErrorNamingIt) {
  Result r = k3("run -m '" + path("absent.gguf") + "' -n 1");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("absent.gguf"), std::string::npos) << r.err;
}

// The GPU flags (docs/gpu.md). CI runs these on lavapipe; a machine without a Vulkan device
// still checks the fallback and the usage errors.
TEST_F(Cli, GpuGreedyTextEqualsTheCpuAndLoadLinesNameTheDevice) {
  const std::string args = " -p 'Tell me about the sea.' -n 48 --temp 0 --ignore-eos";
  Result cpu = k3("run" + args);
  Result gpu = k3("run -ngl all" + args);
  ASSERT_EQ(cpu.rc, 0) << cpu.err;
  ASSERT_EQ(gpu.rc, 0) << gpu.err;
  Result list = k3("--list-devices");
  ASSERT_EQ(list.rc, 0);
  if (list.out.find("Vulkan0") == std::string::npos) {
    EXPECT_NE(gpu.err.find("running on the CPU"), std::string::npos) << gpu.err;
  } else {
    EXPECT_NE(gpu.err.find("gpu: using Vulkan0"), std::string::npos) << gpu.err;
    EXPECT_NE(gpu.err.find("offloaded 6/6 layers and the output head"), std::string::npos) << gpu.err;
  }
  // k3-tiny's greedy answer with every product on the GPU: the same 48 tokens.
  EXPECT_EQ(gpu.out, cpu.out);
}

TEST_F(Cli, GpuWithoutADriverFallsBackToTheCpuAndSaysWhy) {
  Result r = k3("run -p 'Hi' -n 4 --temp 0");
  // No Vulkan driver (a loader that finds none): the same answer, from the CPU.
  ::setenv("VK_DRIVER_FILES", "/nonexistent.json", 1);
  Result none = k3("run -ngl all -p 'Hi' -n 4 --temp 0");
  ::unsetenv("VK_DRIVER_FILES");
  ASSERT_EQ(none.rc, 0) << none.err;
  EXPECT_NE(none.err.find("-ngl: no GPU, running on the CPU"), std::string::npos) << none.err;
  EXPECT_EQ(none.out, r.out);
}

TEST_F(Cli, GpuFlagErrorsAreClear) {
  Result bad = k3("run -ngl many -p hi");
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("-ngl takes a number of layers or 'all'"), std::string::npos) << bad.err;
  Result moe = k3("run --cpu-moe -p hi");
  EXPECT_EQ(moe.rc, 2);
  EXPECT_NE(moe.err.find("go with -ngl"), std::string::npos) << moe.err;
  Result dev = k3("run -ngl 1 -dev Vulkanx -p hi");
  EXPECT_EQ(dev.rc, 2);
  EXPECT_NE(dev.err.find("--device takes N or VulkanN"), std::string::npos) << dev.err;
  // imatrix observes every product's input on the CPU: it says so instead of ignoring -ngl.
  Result im =
      k3("imatrix -ngl 1 -m '" + std::string(K3_TEST_DATA_DIR) + "/golden/small-q8_0.gguf' --tokens-file '" +
         std::string(K3_TEST_DATA_DIR) + "/golden/small-q8_0.tokens' -o '" + path("im.gguf") + "'");
  EXPECT_EQ(im.rc, 2);
  EXPECT_NE(im.err.find("k3 imatrix collects every product's input"), std::string::npos) << im.err;
  EXPECT_FALSE(fs::exists(path("im.gguf")));
  Result list = k3("--list-devices");
  if (list.out.find("Vulkan0") == std::string::npos) return;  // no device: the rest needs one
  Result far = k3("run -ngl all --device 9 -p hi");
  EXPECT_EQ(far.rc, 1);
  EXPECT_NE(far.err.find("--device 9"), std::string::npos) << far.err;
  // A VRAM budget too small: refused, with the largest -ngl that fits named.
  Result small = k3("run -ngl all --vram-budget 130M -p hi -n 2");
  EXPECT_EQ(small.rc, 1);
  EXPECT_NE(small.err.find("-ngl 2 fits"), std::string::npos) << small.err;
  Result fits = k3("run -ngl 2 --vram-budget 130M -p hi -n 2");
  EXPECT_EQ(fits.rc, 0) << fits.err;
}
