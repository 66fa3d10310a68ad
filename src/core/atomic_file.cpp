#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/error.h"

namespace k3 {

namespace {
constexpr size_t kBufSize = 1 << 20;
}

AtomicFile::AtomicFile(const std::string& path)
    : path_(path), tmp_(path + ".tmp." + std::to_string(::getpid())) {
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("{}: cannot create: {}", tmp_, std::strerror(errno));
  buf_ = static_cast<char*>(std::malloc(kBufSize));
  if (!buf_) fail("{}: out of memory for write buffer", path_);
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
  if (::fsync(fd_) != 0) fail("{}: fsync failed: {}", tmp_, std::strerror(errno));
  ::close(fd_);
  fd_ = -1;
  if (::rename(tmp_.c_str(), path_.c_str()) != 0)
    fail("{}: rename to {} failed: {}", tmp_, path_, std::strerror(errno));
  committed_ = true;
}

}  // namespace k3
