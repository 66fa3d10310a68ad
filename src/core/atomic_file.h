// core/atomic_file: write a file so that readers only ever see nothing or the whole thing.
// Contract: bytes go to "<path>.tmp.<pid>"; commit() fsyncs and renames over <path>; if the
// object is destroyed without commit() (error, exception), the temporary is removed. A killed
// process leaves at most a *.tmp.* file, never a truncated file under the final name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace k3 {

class AtomicFile {
 public:
  explicit AtomicFile(const std::string& path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t n);
  void write_zeros(size_t n);
  // Extends the file with a hole of n bytes (sparse files for synthetic giants).
  void skip(size_t n);
  uint64_t offset() const { return offset_; }
  void commit();
  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return tmp_; }

 private:
  void flush();
  std::string path_, tmp_;
  int fd_ = -1;
  uint64_t offset_ = 0;
  bool committed_ = false;
  char* buf_ = nullptr;
  size_t buf_used_ = 0;
};

}  // namespace k3
