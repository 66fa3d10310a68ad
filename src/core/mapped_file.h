// core/mapped_file: a read-only memory mapping of a whole file.
// Contract: the mapping lives as long as the object; size() is the file size at open time.
// Opening a missing or unreadable file throws k3::Error naming the path and errno text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace k3 {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace k3
