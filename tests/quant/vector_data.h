// tests/quant/vector_data: loads the format test data (tests/data/formats/*.json) once per
// process and decodes the hex strings, for the quant suites.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace k3::test {

inline const nlohmann::json& formats_json(const std::string& name) {
  struct Cache {
    std::string name;
    nlohmann::json doc;
  };
  static std::vector<Cache>* cache = new std::vector<Cache>();
  for (const Cache& c : *cache)
    if (c.name == name) return c.doc;
  const std::string path = std::string(K3_TEST_DATA_DIR) + "/formats/" + name;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  cache->push_back({name, nlohmann::json::parse(in)});
  return cache->back().doc;
}

inline std::vector<uint8_t> from_hex(const std::string& hex) {
  if (hex.size() % 2) throw std::runtime_error("odd hex length");
  std::vector<uint8_t> out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) out[i] = uint8_t(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
  return out;
}

inline std::vector<float> floats(const nlohmann::json& arr) {
  std::vector<float> out;
  out.reserve(arr.size());
  for (const auto& v : arr) out.push_back(v.get<float>());
  return out;
}

}  // namespace k3::test
