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
  EXPECT_EQ(f.temp_path().rfind(target + ".tmp.", 0), 0u) << f.temp_path();
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

unsigned mode_of(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 ? st.st_mode & 07777 : ~0u;
}

bool is_link(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

// Regression (issue 41, row 10): the temporary was "<path>.tmp.<pid>", opened without O_EXCL
// or O_NOFOLLOW, so a link planted at that name (in a shared directory, by another user) had
// the bytes written where it pointed. The name is random now and created exclusively.
TEST(AtomicFile, APlantedLinkAtThePredictableTempNameIsNotFollowed) {
  TempDir d;
  const std::string target = d.file("conv.json");
  const std::string victim = d.file("victim");
  {
    std::ofstream v(victim);
    v << "precious";
  }
  ASSERT_EQ(::symlink(victim.c_str(), (target + ".tmp." + std::to_string(::getpid())).c_str()), 0);
  std::string tmp;
  {
    AtomicFile f(target);
    tmp = f.temp_path();
    f.write("new", 3);
    f.commit();
  }
  EXPECT_EQ(slurp(victim), "precious");
  EXPECT_FALSE(is_link(target));
  EXPECT_EQ(slurp(target), "new");
  EXPECT_NE(tmp, target + ".tmp." + std::to_string(::getpid()));
  // Two writers of one path get two temporaries.
  AtomicFile a(target), b(target);
  EXPECT_NE(a.temp_path(), b.temp_path());
}

// Regression (issue 41, row 10): a replaced file got 0644 (a private 0600 file became readable
// by all); it keeps its own mode now, and a new file gets the asked mode less the umask.
TEST(AtomicFile, AReplacedFileKeepsItsModeANewOneGetsTheAskedMode) {
  TempDir d;
  const std::string target = d.file("private.json");
  {
    std::ofstream o(target);
    o << "v1";
  }
  ASSERT_EQ(::chmod(target.c_str(), 0600), 0);
  {
    AtomicFile f(target);
    f.write("v2", 2);
    f.commit();
  }
  EXPECT_EQ(slurp(target), "v2");
  EXPECT_EQ(mode_of(target), 0600u);
  ASSERT_EQ(::chmod(target.c_str(), 0640), 0);
  {
    AtomicFile f(target, AtomicFileOptions{.new_mode = 0600});
    f.write("v3", 2);
    f.commit();
  }
  EXPECT_EQ(mode_of(target), 0640u);
  const mode_t mask = ::umask(022);  // the test's own umask, known
  {
    AtomicFile f(d.file("fresh.json"), AtomicFileOptions{.new_mode = 0600});
    f.commit();
    AtomicFile g(d.file("default.bin"));
    g.commit();
  }
  ::umask(mask);
  EXPECT_EQ(mode_of(d.file("fresh.json")), 0600u);
  EXPECT_EQ(mode_of(d.file("default.bin")), 0644u);
}

// A symbolic link at the target is never written through: replaced by default (as rename()
// does), refused with an error naming it under refuse_symlink, before any temporary exists.
TEST(AtomicFile, ALinkAtTheTargetIsReplacedOrRefusedNeverFollowed) {
  TempDir d;
  const std::string victim = d.file("victim");
  {
    std::ofstream v(victim);
    v << "precious";
  }
  const std::string link = d.file("out.json");
  ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
  try {
    AtomicFile f(link, AtomicFileOptions{.new_mode = 0600, .refuse_symlink = true});
    FAIL() << "a link was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(link + ": is a symbolic link"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(is_link(link));
  EXPECT_EQ(slurp(victim), "precious");
  EXPECT_EQ(d.count(), 2u) << "a temporary was left";
  {
    AtomicFile f(link);
    f.write("mine", 4);
    f.commit();
  }
  EXPECT_FALSE(is_link(link));
  EXPECT_EQ(slurp(link), "mine");
  EXPECT_EQ(slurp(victim), "precious");
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
