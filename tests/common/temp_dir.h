// tests/common/temp_dir: a fresh private directory (mode 0700, mkdtemp) under the system's temp
// folder, removed with everything in it when the object goes, a failed assertion included.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace k3::test {

struct TempDir {
  std::string path;
  explicit TempDir(const std::string& tag = "k3-test") {
    std::string t = (std::filesystem::temp_directory_path() / (tag + "-XXXXXX")).string();
    if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed for " + t);
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace k3::test
