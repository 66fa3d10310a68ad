// Bad input: each defect gives a k3::Error naming the thing at fault, and no output file (not
// even a temporary) is left behind.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "tools/convert/hf_fixture.h"
#include "tools/convert/test_util.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "gguf/file.h"
#include "tools/convert/convert.h"
#include "tools/convert/safetensors.h"

namespace k3::test {
namespace {

namespace fs = std::filesystem;

class ConvertErrors : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    base_ = new TempDir("errbase");
    auto g = gguf::GgufFile::open(data_path("golden/tiny10-base.gguf"));
    FixtureOptions fo;
    fo.dir = base_->str("hf");
    write_hf_fixture(*g, fo);
  }
  static void TearDownTestSuite() {
    delete base_;
    base_ = nullptr;
  }
  void SetUp() override {
    tmp_ = std::make_unique<TempDir>("err");
    fs::copy(base_->path / "hf", tmp_->path / "hf", fs::copy_options::recursive);
    fs::create_directories(tmp_->path / "out");
  }
  std::string hf() const { return tmp_->str("hf"); }
  std::string st() const { return tmp_->str("hf/model.safetensors"); }

  // Rewrites model.safetensors after `edit` changed its entries.
  void rewrite(const std::function<void(std::vector<StEntry>&)>& edit) {
    std::vector<StEntry> es;
    {
      MappedFile m(st());
      for (const tools::StTensor& t : tools::parse_safetensors(m.data(), m.size(), st()))
        es.push_back({t.name, tools::st_dtype_name(t.dtype), t.shape,
                      std::string(reinterpret_cast<const char*>(t.data), t.nbytes)});
    }
    edit(es);
    write_safetensors(st(), es);
  }

  // Converts; returns the error text ("" if it succeeded) and checks nothing was written.
  std::string convert_error() {
    tools::ConvertOptions o;
    o.hf_dir = hf();
    o.out_path = tmp_->str("out/model.gguf");
    o.threads = 1;
    std::string msg;
    try {
      tools::convert_hf(o);
    } catch (const Error& e) { msg = e.what(); }
    if (msg.empty()) return msg;
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(tmp_->path / "out"))
      left.push_back(e.path().filename().string());
    EXPECT_TRUE(left.empty()) << "left behind: " << (left.empty() ? "" : left.front());
    return msg;
  }

  static TempDir* base_;
  std::unique_ptr<TempDir> tmp_;
};
TempDir* ConvertErrors::base_ = nullptr;

const char* kQ = "language_model.model.layers.1.self_attn.q_proj.weight";

TEST_F(ConvertErrors, FixtureConvertsCleanly) {
  EXPECT_EQ(convert_error(), "");
  EXPECT_TRUE(fs::exists(tmp_->path / "out/model.gguf"));
}

TEST_F(ConvertErrors, TruncatedSafetensors) {
  fs::resize_file(st(), fs::file_size(st()) - 100);
  std::string m = convert_error();
  EXPECT_NE(m.find("out of range"), std::string::npos) << m;
  EXPECT_NE(m.find("model.safetensors"), std::string::npos) << m;
}

TEST_F(ConvertErrors, HeaderLengthBeyondTheFile) {
  std::ofstream(st(), std::ios::binary) << std::string("\xff\xff\xff\x00\x00\x00\x00\x00{}", 10);
  std::string m = convert_error();
  EXPECT_NE(m.find("header length"), std::string::npos) << m;
}

TEST_F(ConvertErrors, HeaderIsNotJson) {
  std::ofstream(st(), std::ios::binary) << std::string("\x04\x00\x00\x00\x00\x00\x00\x00{{{{", 12);
  EXPECT_NE(convert_error().find("does not parse"), std::string::npos);
}

TEST_F(ConvertErrors, WrongShape) {
  rewrite([](std::vector<StEntry>& es) {
    for (StEntry& e : es)
      if (e.name == kQ) e.shape = {32, 128};
  });
  std::string m = convert_error();
  EXPECT_NE(m.find(kQ), std::string::npos) << m;
  EXPECT_NE(m.find("shape [32, 128]"), std::string::npos) << m;
}

TEST_F(ConvertErrors, UnknownDtype) {
  rewrite([](std::vector<StEntry>& es) {
    for (StEntry& e : es)
      if (e.name == kQ) e.dtype = "F12";
  });
  std::string m = convert_error();
  EXPECT_NE(m.find("unknown dtype 'F12'"), std::string::npos) << m;
  EXPECT_NE(m.find(kQ), std::string::npos) << m;
}

TEST_F(ConvertErrors, UnsupportedDtype) {
  rewrite([](std::vector<StEntry>& es) {
    for (StEntry& e : es)
      if (e.name == kQ) e.dtype = "I32";
  });
  std::string m = convert_error();
  EXPECT_NE(m.find("dtype I32 is not supported"), std::string::npos) << m;
}

TEST_F(ConvertErrors, ByteCountDisagreesWithShape) {
  rewrite([](std::vector<StEntry>& es) {
    for (StEntry& e : es)
      if (e.name == kQ) e.bytes.resize(e.bytes.size() - 4);
  });
  EXPECT_NE(convert_error().find("needs 16384 bytes"), std::string::npos);
}

// Regression: numel x element size wrapped 64 bits: shape [2^61] F64 "needed" 0 bytes,
// matched an empty span and was accepted (reads past the file followed).
TEST(SafetensorsHeader, ElementCountTimesSizeDoesNotWrap) {
  auto file = [](const std::string& header) {
    std::string f(8, '\0');
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) f[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
    return f + header;
  };
  for (const char* shape : {"[2305843009213693952]", "[1152921504606846976,2]", "[4611686018427387904]"}) {
    const std::string f =
        file(std::string(R"({"x":{"dtype":"F64","shape":)") + shape + R"(,"data_offsets":[0,0]}})");
    EXPECT_THROW(tools::parse_safetensors(reinterpret_cast<const uint8_t*>(f.data()), f.size(), "crafted"),
                 Error)
        << shape;
  }
  const std::string ok = file(R"({"x":{"dtype":"F64","shape":[0],"data_offsets":[0,0]}})");
  EXPECT_EQ(tools::parse_safetensors(reinterpret_cast<const uint8_t*>(ok.data()), ok.size(), "ok").size(),
            1u);
}

TEST_F(ConvertErrors, MissingTensor) {
  rewrite([](std::vector<StEntry>& es) {
    std::erase_if(es, [](const StEntry& e) {
      return e.name == "language_model.model.layers.7.self_attn.kv_b_proj.weight";
    });
  });
  std::string m = convert_error();
  EXPECT_NE(m.find("missing tensor 'language_model.model.layers.7.self_attn.kv_b_proj.weight'"),
            std::string::npos)
      << m;
}

TEST_F(ConvertErrors, MissingExpert) {
  rewrite([](std::vector<StEntry>& es) {
    std::erase_if(es, [](const StEntry& e) {
      return e.name == "language_model.model.layers.4.block_sparse_moe.experts.5.w2.weight";
    });
  });
  EXPECT_NE(convert_error().find("experts.5.w2.weight"), std::string::npos);
}

TEST_F(ConvertErrors, UnexpectedTensor) {
  rewrite([](std::vector<StEntry>& es) {
    es.push_back({"language_model.model.layers.0.mystery.weight", "F32", {1}, std::string(4, '\0')});
  });
  EXPECT_NE(convert_error().find("unexpected tensor 'language_model.model.layers.0.mystery.weight'"),
            std::string::npos);
}

TEST_F(ConvertErrors, ZeroIndexedFullAttnLayers) {
  nlohmann::json c;
  std::ifstream(hf() + "/config.json") >> c;
  c["text_config"]["linear_attn_config"]["full_attn_layers"] = {0, 3, 7};  // read as 0-based: wrong
  std::ofstream(hf() + "/config.json") << c.dump();
  EXPECT_NE(convert_error().find("1-indexed"), std::string::npos);
}

TEST_F(ConvertErrors, ShiftedLayerTypesAreCaught) {
  // MLA at 1-indexed {3, 7, 9} instead of {4, 8, 10}: layer 2 would need MLA weights it lacks.
  nlohmann::json c;
  std::ifstream(hf() + "/config.json") >> c;
  c["text_config"]["linear_attn_config"]["full_attn_layers"] = {3, 7, 9};
  std::ofstream(hf() + "/config.json") << c.dump();
  EXPECT_NE(convert_error().find("'language_model.model.layers.2.self_attn."), std::string::npos);
}

TEST_F(ConvertErrors, MissingConfigKey) {
  nlohmann::json c;
  std::ifstream(hf() + "/config.json") >> c;
  c["text_config"].erase("kv_lora_rank");
  std::ofstream(hf() + "/config.json") << c.dump();
  EXPECT_NE(convert_error().find("missing required key 'kv_lora_rank'"), std::string::npos);
}

TEST_F(ConvertErrors, MissingTokenizer) {
  fs::remove(hf() + "/tiktoken.model");
  EXPECT_NE(convert_error().find("tiktoken.model"), std::string::npos);
}

TEST_F(ConvertErrors, OutputDirectoryMissingOrADirectory) {
  for (const std::string& out : {tmp_->str("no-such-dir/model.gguf"), tmp_->str("out")}) {
    tools::ConvertOptions o;
    o.hf_dir = hf();
    o.out_path = out;
    o.threads = 1;
    try {
      tools::convert_hf(o);
      ADD_FAILURE() << "converted to " << out;
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_TRUE(m.find("does not exist") != std::string::npos ||
                  m.find("is a directory") != std::string::npos)
          << m;
    }
    EXPECT_FALSE(fs::exists(tmp_->path / "no-such-dir"));
    EXPECT_TRUE(fs::is_empty(tmp_->path / "out"));
  }
}

TEST_F(ConvertErrors, CliReportsTheErrorAndExits1) {
  if (!fs::exists(K3_BINARY)) GTEST_SKIP() << "k3 binary not built";
  fs::resize_file(st(), fs::file_size(st()) - 100);
  const std::string log = tmp_->str("log.txt");
  const std::string cmd =
      std::string(K3_BINARY) + " convert " + hf() + " -o " + tmp_->str("out/m.gguf") + " 2> " + log;
  int rc = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 1);
  std::ifstream f(log);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("error: "), std::string::npos) << text;
  EXPECT_TRUE(fs::is_empty(tmp_->path / "out"));
}

// Not an error, but the same fixture: the CLI's progress lines (stderr not a terminal: a
// plain line per tenth), and none with --no-progress.
TEST_F(ConvertErrors, CliShowsProgressUnlessNoProgress) {
  if (!fs::exists(K3_BINARY)) GTEST_SKIP() << "k3 binary not built";
  auto run = [&](const std::string& extra, const std::string& out) {
    const std::string log = tmp_->str("log.txt");
    const std::string cmd =
        std::string(K3_BINARY) + " convert " + hf() + " -o " + tmp_->str(out) + extra + " 2> " + log;
    EXPECT_EQ(WEXITSTATUS(std::system(cmd.c_str())), 0);
    std::ifstream f(log);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  };
  const std::string with = run("", "out/a.gguf");
  EXPECT_NE(with.find("convert: ["), std::string::npos) << with;
  EXPECT_NE(with.find("100%"), std::string::npos) << with;
  EXPECT_NE(with.find("ETA"), std::string::npos) << with;
  const std::string without = run(" --no-progress", "out/b.gguf");
  EXPECT_EQ(without.find("convert: ["), std::string::npos) << without;
}

}  // namespace
}  // namespace k3::test
