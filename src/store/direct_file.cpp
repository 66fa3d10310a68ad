// store/direct_file: O_DIRECT open with a buffered fallback (see direct_file.h).
#include "store/direct_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace k3::store {

DirectFile::DirectFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
  direct_ = fd_ >= 0;
  if (fd_ < 0) fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) fail("{}: cannot open for expert reads: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) fail("{}: cannot stat: {}", path, std::strerror(errno));
  size_ = static_cast<uint64_t>(st.st_size);
}

DirectFile::~DirectFile() {
  if (fd_ >= 0) ::close(fd_);
}

void DirectFile::drop_cache(uint64_t offset, uint64_t len) const {
  if (!direct_)
    ::posix_fadvise(fd_, static_cast<off_t>(offset), static_cast<off_t>(len), POSIX_FADV_DONTNEED);
}

}  // namespace k3::store
