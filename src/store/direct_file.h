// store/direct_file: a read-only descriptor opened with O_DIRECT where the file system
// allows it (tmpfs and some others refuse; then a plain descriptor, direct() false).
// Contract: throws k3::Error naming the path when the file cannot be opened at all. With a
// plain descriptor, drop_cache() asks the kernel to forget a range just read, so the
// process does not grow the page cache with bytes it keeps in its own buffers.
#pragma once

#include <cstdint>
#include <string>

namespace k3::store {

class DirectFile {
 public:
  explicit DirectFile(const std::string& path);
  ~DirectFile();
  DirectFile(const DirectFile&) = delete;
  DirectFile& operator=(const DirectFile&) = delete;
  int fd() const { return fd_; }
  bool direct() const { return direct_; }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  void drop_cache(uint64_t offset, uint64_t len) const;

 private:
  std::string path_;
  int fd_ = -1;
  bool direct_ = false;
  uint64_t size_ = 0;
};

}  // namespace k3::store
