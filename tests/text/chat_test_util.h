// tests/text helpers: read the golden text-layer data copied into tests/data/text.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include "text/json_py.h"

namespace k3::test {

inline std::string read_text_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline std::string text_data(const std::string& name) {
  return std::string(K3_TEST_DATA_DIR) + "/text/" + name;
}

inline k3::text::Json load_text_json(const std::string& name) {
  return k3::text::parse_json_exact(read_text_file(text_data(name)), name);
}

}  // namespace k3::test
