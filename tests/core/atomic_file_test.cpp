// core/atomic_file and core/mapped_file: commit renames the temporary over the target,
// abandonment leaves nothing, holes read back as zeros; mapping errors name the path.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/mapped_file.h"

namespace k3 {
namespace {

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("k3-core-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& n) const { return (path_ / n).string(); }
  size_t count() const {
    size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(path_)) ++n;
    return n;
  }

 private:
  std::filesystem::path path_;
};

std::string slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(AtomicFile, CommitRenamesOverTarget) {
  TempDir d;
  std::string target = d.file("out.bin");
  {
    std::ofstream old(target);
    old << "old contents";
  }
  AtomicFile f(target);
  EXPECT_EQ(f.temp_path(), target + ".tmp." + std::to_string(::getpid()));
  f.write("hello", 5);
  f.write_zeros(3);
  EXPECT_EQ(f.offset(), 8u);
  EXPECT_TRUE(std::filesystem::exists(f.temp_path()));
  EXPECT_EQ(slurp(target), "old contents");  // untouched until commit
  f.commit();
  EXPECT_EQ(slurp(target), std::string("hello\0\0\0", 8));
  EXPECT_FALSE(std::filesystem::exists(f.temp_path()));
  EXPECT_EQ(d.count(), 1u);
}

TEST(AtomicFile, DestructionWithoutCommitLeavesNoFile) {
  TempDir d;
  std::string target = d.file("never.bin");
  std::string tmp;
  {
    AtomicFile f(target);
    tmp = f.temp_path();
    f.write("partial", 7);
    EXPECT_TRUE(std::filesystem::exists(tmp));
  }
  EXPECT_FALSE(std::filesystem::exists(target));
  EXPECT_FALSE(std::filesystem::exists(tmp));
  EXPECT_EQ(d.count(), 0u);
}

TEST(AtomicFile, ExceptionMidWriteKeepsOldFile) {
  TempDir d;
  std::string target = d.file("keep.bin");
  {
    std::ofstream old(target);
    old << "v1";
  }
  try {
    AtomicFile f(target);
    f.write("v2-partial", 10);
    throw Error("interrupted");
  } catch (const Error&) {}
  EXPECT_EQ(slurp(target), "v1");
  EXPECT_EQ(d.count(), 1u);
}

TEST(AtomicFile, LargeWritesAndTrailingHole) {
  TempDir d;
  std::string target = d.file("big.bin");
  std::vector<char> big(3 << 20);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31);
  AtomicFile f(target);
  f.write("ab", 2);
  f.write(big.data(), big.size());  // larger than the internal buffer
  f.skip(5000);                     // trailing hole: needs the explicit size at commit
  f.commit();
  std::string s = slurp(target);
  ASSERT_EQ(s.size(), 2 + big.size() + 5000);
  EXPECT_EQ(s.substr(0, 2), "ab");
  EXPECT_EQ(std::memcmp(s.data() + 2, big.data(), big.size()), 0);
  EXPECT_EQ(s.substr(2 + big.size()), std::string(5000, '\0'));
}

TEST(AtomicFile, UncreatableTargetNamesThePath) {
  try {
    AtomicFile f("/nonexistent-dir-k3/x.bin");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir-k3/x.bin"), std::string::npos) << e.what();
  }
}

TEST(MappedFile, MapsContents) {
  TempDir d;
  {
    std::ofstream o(d.file("m.bin"), std::ios::binary);
    o << "mapped!";
  }
  MappedFile m(d.file("m.bin"));
  ASSERT_EQ(m.size(), 7u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(m.data()), 7), "mapped!");
  EXPECT_EQ(m.path(), d.file("m.bin"));
}

TEST(MappedFile, EmptyFileHasNoData) {
  TempDir d;
  { std::ofstream o(d.file("empty.bin")); }
  MappedFile m(d.file("empty.bin"));
  EXPECT_EQ(m.size(), 0u);
  EXPECT_EQ(m.data(), nullptr);
}

TEST(MappedFile, ErrorsNameThePath) {
  TempDir d;
  try {
    MappedFile m(d.file("missing.bin"));
    FAIL();
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("missing.bin"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cannot open"), std::string::npos) << msg;
  }
  try {
    MappedFile m(d.file(""));  // the directory itself
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
  if (::geteuid() != 0) {  // root can read anything
    std::string p = d.file("noperm.bin");
    {
      std::ofstream o(p);
      o << "x";
    }
    ::chmod(p.c_str(), 0);
    EXPECT_THROW(MappedFile m(p), Error);
  }
}

}  // namespace
}  // namespace k3
