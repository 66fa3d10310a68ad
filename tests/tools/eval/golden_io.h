// Shared helpers for the tools tests: golden token lists and logits files.
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/eval_logits.h"

namespace k3::tools::testing {

inline std::string golden_path(const std::string& file) {
  return std::string(K3_TEST_DATA_DIR) + "/golden/" + file;
}

inline std::vector<int32_t> golden_tokens(const std::string& name) {
  std::ifstream f(golden_path(name + ".tokens"));
  std::stringstream ss;
  ss << f.rdbuf();
  return runtime::parse_token_list(ss.str(), name + ".tokens");
}

inline std::vector<float> golden_floats(const std::string& file) {
  std::ifstream f(golden_path(file), std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<float> out(bytes.size() / sizeof(float));
  std::copy(bytes.begin(), bytes.begin() + out.size() * sizeof(float), reinterpret_cast<char*>(out.data()));
  return out;
}

}  // namespace k3::tools::testing
