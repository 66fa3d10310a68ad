// Helpers for the gguf tests: a byte builder for hand-made GGUF images (with named positions
// so corruption tests can patch one field), a scratch directory, and file helpers.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace k3::gguf::testing {

inline std::string golden(const std::string& name) {
  return std::string(K3_TEST_DATA_DIR) + "/golden/" + name;
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& b) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// A per-test scratch directory, removed at the end.
class ScratchDir {
 public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() /
            ("k3-gguf-" + std::to_string(::getpid()) + "-" + (info ? info->name() : "x"));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::vector<std::string> list() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(path_)) out.push_back(e.path().filename());
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  std::filesystem::path path_;
};

// Little-endian byte builder with named marks.
class Bytes {
 public:
  Bytes& mark(const std::string& name) {
    at_[name] = v_.size();
    return *this;
  }
  size_t at(const std::string& name) const { return at_.at(name); }
  Bytes& raw(const void* p, size_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    v_.insert(v_.end(), b, b + n);
    return *this;
  }
  Bytes& u8(uint8_t x) { return raw(&x, 1); }
  Bytes& u16(uint16_t x) { return raw(&x, 2); }
  Bytes& u32(uint32_t x) { return raw(&x, 4); }
  Bytes& u64(uint64_t x) { return raw(&x, 8); }
  Bytes& f32(float x) { return raw(&x, 4); }
  Bytes& f64(double x) { return raw(&x, 8); }
  Bytes& str(const std::string& s) {
    u64(s.size());
    return raw(s.data(), s.size());
  }
  Bytes& pad_to(size_t alignment) {
    while (v_.size() % alignment) v_.push_back(0);
    return *this;
  }
  Bytes& zeros(size_t n) {
    v_.insert(v_.end(), n, 0);
    return *this;
  }
  size_t size() const { return v_.size(); }
  std::vector<uint8_t>& bytes() { return v_; }
  // Overwrites bytes at a mark (plus delta).
  void put_u32(const std::string& name, uint32_t x, size_t delta = 0) {
    std::memcpy(v_.data() + at(name) + delta, &x, 4);
  }
  void put_u64(const std::string& name, uint64_t x, size_t delta = 0) {
    std::memcpy(v_.data() + at(name) + delta, &x, 8);
  }

 private:
  std::vector<uint8_t> v_;
  std::map<std::string, size_t> at_;
};

}  // namespace k3::gguf::testing
