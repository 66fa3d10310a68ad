// Shared helpers for the tokenizer tests: data paths, file reading, the vocab test format.
#pragma once

#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace k3::text::test {

inline std::string data_path(const std::string& name) {
  return std::string(K3_TEST_DATA_DIR) + "/text/" + name;
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// One tokenizer per vocabulary file for the whole test binary.
inline std::shared_ptr<const Tokenizer> vocab(const std::string& name) {
  static std::map<std::string, std::shared_ptr<const Tokenizer>> cache;
  auto& t = cache[name];
  if (!t) t = Tokenizer::from_gguf_path(data_path(name));
  return t;
}

struct VocabCase {
  std::string text;
  std::vector<TokenId> ids;
};

// llama.cpp test-tokenizer-0 format: .inp strings separated by "\n__ggml_vocab_test__\n",
// .out one line of space-separated ids per string.
inline std::vector<VocabCase> read_vocab_cases(const std::string& inp_path, const std::string& out_path) {
  const std::string inp = read_file(inp_path), outs = read_file(out_path);
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<VocabCase> cases;
  size_t pos = 0;
  while (pos < inp.size()) {
    size_t e = inp.find(sep, pos);
    if (e == std::string::npos) throw std::runtime_error("unterminated case in " + inp_path);
    cases.push_back({inp.substr(pos, e - pos), {}});
    pos = e + sep.size();
  }
  std::istringstream lines(outs);
  std::string line;
  size_t i = 0;
  while (std::getline(lines, line)) {
    if (i >= cases.size()) throw std::runtime_error("more .out lines than cases in " + out_path);
    std::istringstream ids(line);
    TokenId id;
    while (ids >> id) cases[i].ids.push_back(id);
    ++i;
  }
  if (i != cases.size()) throw std::runtime_error("fewer .out lines than cases in " + out_path);
  return cases;
}

}  // namespace k3::text::test
