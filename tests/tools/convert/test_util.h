// tests/tools/convert/test_util: temp directories and small helpers shared by the convert tests.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <unistd.h>

namespace k3::test {

// A fresh directory under the system temp dir, removed on destruction.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag) {
    path = std::filesystem::temp_directory_path() / ("k3conv-" + tag + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string str(const std::string& name = "") const { return (name.empty() ? path : path / name).string(); }
  // Every entry of the directory (to prove nothing, not even a temporary, was left).
  std::vector<std::string> entries() const {
    std::vector<std::string> v;
    for (const auto& e : std::filesystem::directory_iterator(path)) v.push_back(e.path().filename().string());
    return v;
  }
};

inline std::string data_path(const std::string& rel) { return std::string(K3_TEST_DATA_DIR) + "/" + rel; }

}  // namespace k3::test
