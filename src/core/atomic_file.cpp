#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace k3 {

namespace {
constexpr size_t kBufSize = 1 << 20;

// The process's umask, read without changing it (umask() can only be read by setting it,
// which would race with files other threads create): Linux reports it in /proc since 4.7.
unsigned current_umask() {
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    unsigned mask = 022;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "Umask: %o", &mask) == 1) break;
    std::fclose(f);
    return mask & 0777;
  }
  return 022;
}

// The directory holding `path` ("." for a bare name), to fsync after the rename.
std::string parent_dir(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}
}  // namespace

AtomicFile::AtomicFile(const std::string& path, AtomicFileOptions opt) : path_(path), opt_(opt) {
  final_mode();  // a refused link fails before anything is written
  buf_ = static_cast<char*>(std::malloc(kBufSize));
  if (!buf_) fail("{}: out of memory for write buffer", path_);
  std::string templ = path + ".tmp.XXXXXX";
  fd_ = ::mkostemp(templ.data(), O_CLOEXEC);
  if (fd_ < 0) {
    const int e = errno;
    std::free(buf_);
    fail("{}: cannot create a temporary file next to it: {}", path_, std::strerror(e));
  }
  tmp_ = templ;
}

unsigned AtomicFile::final_mode() const {
  struct stat st {};
  if (::lstat(path_.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode) && opt_.refuse_symlink)
      fail(
          "{}: is a symbolic link; not written through or replaced (name the file it points to, or "
          "remove the link)",
          path_);
    if (S_ISREG(st.st_mode)) return st.st_mode & 0777;
  }
  return opt_.new_mode & ~current_umask() & 0777;
}

AtomicFile::~AtomicFile() {
  std::free(buf_);
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(tmp_.c_str());
}

void AtomicFile::flush() {
  size_t done = 0;
  while (done < buf_used_) {
    ssize_t w = ::write(fd_, buf_ + done, buf_used_ - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("{}: write failed: {}", tmp_, std::strerror(errno));
    }
    done += static_cast<size_t>(w);
  }
  buf_used_ = 0;
}

void AtomicFile::write(const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  offset_ += n;
  if (n >= kBufSize) {
    flush();
    size_t done = 0;
    while (done < n) {
      ssize_t w = ::write(fd_, p + done, n - done);
      if (w < 0) {
        if (errno == EINTR) continue;
        fail("{}: write failed: {}", tmp_, std::strerror(errno));
      }
      done += static_cast<size_t>(w);
    }
    return;
  }
  if (buf_used_ + n > kBufSize) flush();
  std::memcpy(buf_ + buf_used_, p, n);
  buf_used_ += n;
}

void AtomicFile::write_zeros(size_t n) {
  static const char zeros[4096] = {};
  while (n) {
    size_t k = n < sizeof zeros ? n : sizeof zeros;
    write(zeros, k);
    n -= k;
  }
}

void AtomicFile::skip(size_t n) {
  flush();
  offset_ += n;
  if (::lseek(fd_, static_cast<off_t>(offset_), SEEK_SET) < 0)
    fail("{}: seek failed: {}", tmp_, std::strerror(errno));
}

void AtomicFile::commit() {
  flush();
  // A trailing hole needs an explicit size.
  if (::ftruncate(fd_, static_cast<off_t>(offset_)) != 0)
    fail("{}: truncate failed: {}", tmp_, std::strerror(errno));
  if (::fchmod(fd_, static_cast<mode_t>(final_mode())) != 0)
    fail("{}: cannot set its mode: {}", tmp_, std::strerror(errno));
  if (::fsync(fd_) != 0) fail("{}: fsync failed: {}", tmp_, std::strerror(errno));
  ::close(fd_);
  fd_ = -1;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0)
    fail("{}: rename to {} failed: {}", tmp_, path_, std::strerror(errno));
  committed_ = true;
  // The rename is durable once the directory is on disk too.
  const int dir = ::open(parent_dir(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace k3
