// cli/embedded_model: loads the built-in tiny model (see embedded_model.h).
#include "cli/embedded_model.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.h"
#include "model/model.h"
#include "vision/tower.h"

namespace k3::cli {

namespace {

void write_all(int fd, const unsigned char* p, size_t n, const std::string& what) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("embedded model: cannot write {}: {}", what, std::strerror(errno));
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}

size_t embedded_size() { return static_cast<size_t>(k3_embedded_model_end - k3_embedded_model_data); }

// Hands `n` bytes to `open` as a file path: an anonymous memory file (no disk, nothing left
// behind), or where there is none (old kernel, restricted sandbox) a temporary file unlinked
// once opened. The loaders map the file; the mapping keeps the bytes alive.
template <class Open>
auto open_bytes(const unsigned char* p, size_t n, const char* what, Open open) {
  int fd = ::memfd_create(what, MFD_CLOEXEC);
  if (fd >= 0) {
    write_all(fd, p, n, "memfd");
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    try {
      auto r = open(path);
      ::close(fd);
      return r;
    } catch (...) {
      ::close(fd);
      throw;
    }
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/k3-embedded-XXXXXX";
  fd = ::mkstemp(path.data());
  if (fd < 0) fail("embedded {}: cannot create a temporary file in {}: {}", what, path, std::strerror(errno));
  try {
    write_all(fd, p, n, path);
    ::close(fd);
    auto r = open(path);
    ::unlink(path.c_str());
    return r;
  } catch (...) {
    ::unlink(path.c_str());
    throw;
  }
}

}  // namespace

std::shared_ptr<model::Model> load_embedded_model() {
  return open_bytes(k3_embedded_model_data, embedded_size(), "k3-embedded.gguf",
                    [](const std::string& path) { return model::Model::load(path); });
}

bool has_embedded_tower() { return k3_embedded_mmproj_end - k3_embedded_mmproj_data > 0; }

std::shared_ptr<const vision::Tower> load_embedded_tower() {
  if (!has_embedded_tower()) return nullptr;
  const auto n = static_cast<size_t>(k3_embedded_mmproj_end - k3_embedded_mmproj_data);
  return open_bytes(k3_embedded_mmproj_data, n, "k3-embedded-mmproj.gguf", [](const std::string& path) {
    return std::shared_ptr<const vision::Tower>(vision::Tower::open(path));
  });
}

}  // namespace k3::cli
