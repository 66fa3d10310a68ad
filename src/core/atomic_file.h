// core/atomic_file: write a file so that readers only ever see nothing or the whole thing.
// Contract: bytes go to a new temporary "<path>.tmp.XXXXXX" in the target's directory, made
// by mkstemp (a random name, created exclusively: never an existing file, never through a
// symbolic link); commit() fsyncs it, gives it the mode of the file it replaces (else
// AtomicFileOptions::new_mode less the umask) and renames it over <path>, so a link at
// <path> is replaced, never written through, or refused (refuse_symlink). If the object is
// destroyed without commit() (error, exception), the temporary is removed. A killed process
// leaves at most a *.tmp.* file, never a truncated file under the final name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace k3 {

struct AtomicFileOptions {
  // The mode of a new file, less the umask; a file that is replaced keeps its own mode.
  unsigned new_mode = 0644;
  // A symbolic link at the path is an error (naming it) instead of being replaced by the
  // file: for files a user names by hand, where a link is either theirs (and replacing it
  // would silently break it) or planted (and following it would write where it points).
  bool refuse_symlink = false;
};

class AtomicFile {
 public:
  explicit AtomicFile(const std::string& path, AtomicFileOptions opt = {});
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
  // The mode the file gets at commit, or a refusal when a symlink is not allowed there.
  unsigned final_mode() const;
  std::string path_, tmp_;
  AtomicFileOptions opt_;
  int fd_ = -1;
  uint64_t offset_ = 0;
  bool committed_ = false;
  char* buf_ = nullptr;
  size_t buf_used_ = 0;
};

}  // namespace k3
