// tests/model/golden_util: loading the golden models, their tokens and reference logits
// (tests/data/golden, see its README for the acceptance rule) and the comparison metrics.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model.h"
#include "runtime/eval_logits.h"

namespace k3::test {

inline std::string golden_dir() { return std::string(K3_TEST_DATA_DIR) + "/golden"; }

inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::vector<float> read_f32(const std::string& path) {
  const std::string s = read_text(path);
  std::vector<float> v(s.size() / sizeof(float));
  std::memcpy(v.data(), s.data(), v.size() * sizeof(float));
  return v;
}

inline const nlohmann::json& manifest() {
  static const nlohmann::json m = nlohmann::json::parse(read_text(golden_dir() + "/manifest.json"));
  return m;
}

inline std::vector<int32_t> golden_tokens(const std::string& name) {
  return runtime::parse_token_list(read_text(golden_dir() + "/" + name + ".tokens"), name);
}

inline std::vector<float> golden_ref64(const std::string& name) {
  return read_f32(golden_dir() + "/" + name + ".ref64.f32");
}

// Models are immutable once loaded; share them across tests.
inline std::shared_ptr<const model::Model> golden_model(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const model::Model>> cache;
  auto& m = cache[name];
  if (!m) m = model::Model::load(golden_dir() + "/" + name + ".gguf");
  return m;
}

// NMSE = Σ(a−b)² / Σb² in double, b the reference.
inline double nmse(const std::vector<float>& a, const std::vector<float>& b) {
  double num = 0.0, den = 0.0;
  for (size_t i = 0; i < b.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
  }
  return num / den;
}

inline int top1_agree(const std::vector<float>& a, const std::vector<float>& b, size_t n_vocab) {
  int agree = 0;
  for (size_t r = 0; r < b.size() / n_vocab; ++r) {
    size_t ia = 0, ib = 0;
    for (size_t j = 1; j < n_vocab; ++j) {
      if (a[r * n_vocab + j] > a[r * n_vocab + ia]) ia = j;
      if (b[r * n_vocab + j] > b[r * n_vocab + ib]) ib = j;
    }
    agree += ia == ib;
  }
  return agree;
}

}  // namespace k3::test
