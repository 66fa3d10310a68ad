// core/read_file: see read_file.h.
#include "core/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace k3 {

namespace {

std::string limit_text(uint64_t bytes) {
  constexpr uint64_t kMiB = 1ull << 20, kKiB = 1ull << 10;
  if (bytes >= kMiB && bytes % kMiB == 0) return fmt::format("{} MiB", bytes / kMiB);
  if (bytes >= kKiB && bytes % kKiB == 0) return fmt::format("{} KiB", bytes / kKiB);
  return fmt::format("{} bytes", bytes);
}

struct Fd {
  int fd;
  ~Fd() { ::close(fd); }
};

}  // namespace

std::string read_file(const std::string& path, uint64_t max_bytes, std::string_view what) {
  const std::string lead = what.empty() ? std::string() : fmt::format("{}: ", what);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("{}{}: cannot open ({})", lead, path, std::strerror(errno));
  const Fd closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail("{}{}: cannot read ({})", lead, path, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail("{}{}: is a directory, not a file", lead, path);
  const bool regular = S_ISREG(st.st_mode);
  const auto size = static_cast<uint64_t>(st.st_size);
  if (regular && size > max_bytes)
    fail("{}{}: larger than the limit of {} ({} bytes)", lead, path, limit_text(max_bytes), size);

  std::string out;
  if (regular) out.reserve(static_cast<size_t>(size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("{}{}: cannot read ({})", lead, path, std::strerror(errno));
    }
    if (n == 0) break;
    if (static_cast<uint64_t>(n) > max_bytes - out.size())
      fail("{}{}: larger than the limit of {}", lead, path, limit_text(max_bytes));
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace k3
