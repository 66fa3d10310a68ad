// core/read_file: a file's bytes come back unchanged (NULs and all); a missing file, a
// directory and a file over the limit are k3::Errors naming the path (and the limit), led by
// the caller's `what` when given.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/read_file.h"

namespace fs = std::filesystem;

namespace {

std::string error_of(const std::string& path, uint64_t limit = k3::kNoReadLimit, std::string_view what = {}) {
  try {
    k3::read_file(path, limit, what);
  } catch (const k3::Error& e) { return e.what(); }
  return "";
}

struct ReadFileTest : testing::Test {
  fs::path dir = fs::temp_directory_path() / ("k3-read-file-test-" + std::to_string(::getpid()));
  std::string bytes = std::string("a\0b\r\n\xff", 6) + std::string(100000, 'x');
  std::string file = (dir / "f.bin").string();
  void SetUp() override {
    fs::create_directories(dir);
    std::ofstream(file, std::ios::binary) << bytes;
  }
  void TearDown() override { fs::remove_all(dir); }
};

TEST_F(ReadFileTest, ReturnsTheBytes) {
  EXPECT_EQ(k3::read_file(file), bytes);
  EXPECT_EQ(k3::read_file(file, bytes.size()), bytes);  // exactly at the limit
  const std::string empty = (dir / "empty").string();
  std::ofstream(empty, std::ios::binary).close();
  EXPECT_EQ(k3::read_file(empty, 0), "");
}

TEST_F(ReadFileTest, MissingFileNamesThePath) {
  const std::string missing = (dir / "missing.txt").string();
  const std::string e = error_of(missing);
  EXPECT_NE(e.find(missing), std::string::npos) << e;
  EXPECT_NE(e.find("cannot open"), std::string::npos) << e;
  EXPECT_NE(e.find("No such file"), std::string::npos) << e;
  EXPECT_EQ(error_of(missing, k3::kNoReadLimit, "--haystack").rfind("--haystack: " + missing, 0), 0u);
}

TEST_F(ReadFileTest, DirectoryIsNotAFile) {
  const std::string e = error_of(dir.string());
  EXPECT_NE(e.find(dir.string()), std::string::npos) << e;
  EXPECT_NE(e.find("directory"), std::string::npos) << e;
}

TEST_F(ReadFileTest, TooLargeNamesTheLimit) {
  std::string e = error_of(file, bytes.size() - 1);
  EXPECT_NE(e.find(file), std::string::npos) << e;
  EXPECT_NE(e.find(fmt::format("larger than the limit of {} bytes", bytes.size() - 1)), std::string::npos)
      << e;
  e = error_of(file, 64 << 10, "--tools");
  EXPECT_EQ(e.rfind("--tools: " + file, 0), 0u) << e;
  EXPECT_NE(e.find("limit of 64 KiB"), std::string::npos) << e;
}

TEST_F(ReadFileTest, LimitHoldsWithoutAKnownSize) {
  // A pipe has no size up front: the limit is checked while reading.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "0123456789", 10), 10);
  ::close(fds[1]);
  const std::string path = "/proc/self/fd/" + std::to_string(fds[0]);
  const std::string e = error_of(path, 4);
  ::close(fds[0]);
  EXPECT_NE(e.find("larger than the limit of 4 bytes"), std::string::npos) << e;
}

}  // namespace
