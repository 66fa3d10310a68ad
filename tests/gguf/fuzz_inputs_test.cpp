// Regression inputs from fuzzing (fuzz/fuzz_gguf.cpp): every file in tests/data/gguf-fuzz
// (corpus inputs that reach unusual parser paths) and tests/data/gguf-crashers (inputs that
// once crashed or misbehaved, if any) must parse or throw k3::Error, never anything else,
// and a parsed one must survive the census and a write/re-read round trip.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "gguf/census.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "gguf/gguf_test_util.h"

namespace k3::gguf {
namespace {

std::vector<std::string> inputs(const char* sub) {
  std::vector<std::string> out;
  std::filesystem::path dir = std::filesystem::path(K3_TEST_DATA_DIR) / sub;
  if (!std::filesystem::exists(dir)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() != "README.md") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(GgufFuzzInputs, ParseOrCleanError) {
  std::vector<std::string> files = inputs("gguf-fuzz");
  ASSERT_GE(files.size(), 10u) << "tests/data/gguf-fuzz is missing";
  for (const std::string& p : inputs("gguf-crashers")) files.push_back(p);
  testing::ScratchDir dir;
  int parsed = 0, rejected = 0;
  for (const std::string& p : files) {
    std::vector<uint8_t> b = testing::read_bytes(p);
    std::unique_ptr<GgufFile> f;
    try {
      f = GgufFile::open_memory(b.data(), b.size(), p);
    } catch (const Error& e) {
      ++rejected;
      EXPECT_NE(std::string(e.what()).find("byte offset"), std::string::npos) << p << ": " << e.what();
      continue;
    } catch (const std::exception& e) {
      ADD_FAILURE() << p << ": escaped with a non-k3 exception: " << e.what();
      continue;
    }
    ++parsed;
    try {
      (void)census_json(take_census(*f));
    } catch (const Error&) {
      // A census may refuse a key of the wrong type; it must say so as a k3::Error.
    }
    // What the reader accepts, the writer reproduces and the reader accepts again.
    std::vector<TensorSpec> specs;
    for (const TensorInfo& t : f->tensors()) specs.push_back({t.name, t.ne, t.type, nullptr, t.data});
    std::string out = dir.file("rt.gguf");
    write_gguf(out, f->kvs(), specs);
    auto g = GgufFile::open(out, OpenOptions{false});
    EXPECT_EQ(g->tensors().size(), f->tensors().size()) << p;
    EXPECT_EQ(g->kvs().size(), f->kvs().size()) << p;
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(rejected, 0);
}

}  // namespace
}  // namespace k3::gguf
