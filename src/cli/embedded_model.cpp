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

}  // namespace

std::shared_ptr<model::Model> load_embedded_model() {
  // An anonymous memory file keeps the loader's path-based mmap contract without touching disk.
  int fd = ::memfd_create("k3-embedded.gguf", MFD_CLOEXEC);
  if (fd >= 0) {
    write_all(fd, k3_embedded_model_data, embedded_size(), "memfd");
    std::string path = "/proc/self/fd/" + std::to_string(fd);
    try {
      auto m = model::Model::load(path);
      ::close(fd);  // the mapping keeps the bytes alive
      return m;
    } catch (...) {
      ::close(fd);
      throw;
    }
  }
  // No memfd (old kernel, restricted sandbox): a temporary file, unlinked once mapped.
  const char* tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/k3-embedded-XXXXXX";
  fd = ::mkstemp(path.data());
  if (fd < 0) fail("embedded model: cannot create a temporary file in {}: {}", path, std::strerror(errno));
  try {
    write_all(fd, k3_embedded_model_data, embedded_size(), path);
    ::close(fd);
    auto m = model::Model::load(path);
    ::unlink(path.c_str());
    return m;
  } catch (...) {
    ::unlink(path.c_str());
    throw;
  }
}

}  // namespace k3::cli
