// Helpers of the reap suite: test data paths, a scratch directory, and copies of golden
// models with some tensors edited or dropped.
#pragma once

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "model/model.h"
#include "runtime/engine.h"
#include "runtime/eval_logits.h"

namespace reap_test {

// Logits of every position of one sequence, decoded in one batch.
inline std::vector<float> all_logits(const std::string& path, const std::vector<int32_t>& toks) {
  auto m = k3::model::Model::load(path);
  k3::runtime::EngineOptions eo;
  eo.n_threads = 2;
  eo.n_ctx = 64;
  k3::runtime::Engine eng(m, eo);
  std::vector<k3::runtime::BatchToken> b;
  for (int32_t t : toks) b.push_back({t, 0, -1, true});
  return eng.decode(b);
}

inline std::string data(const std::string& rel) { return std::string(K3_TEST_DATA_DIR) + "/" + rel; }

struct Scratch {
  std::filesystem::path dir;
  explicit Scratch(const std::string& tag) {
    dir = std::filesystem::temp_directory_path() / ("k3-reap-" + tag + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~Scratch() { std::filesystem::remove_all(dir); }
  std::string operator/(const std::string& n) const { return (dir / n).string(); }
  std::vector<std::string> files() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      out.push_back(e.path().filename().string());
    return out;
  }
};

inline std::vector<int32_t> golden_tokens(const std::string& model) {
  std::ifstream f(data("golden/" + model + ".tokens"));
  std::stringstream ss;
  ss << f.rdbuf();
  return k3::runtime::parse_token_list(ss.str(), model + ".tokens");
}

// Copies `src` to `out` without the tensors in `drop`; `edit(name, bytes)` may change a
// tensor's bytes (same size).
inline void write_edited(const std::string& src, const std::string& out, const std::set<std::string>& drop,
                         const std::function<void(const std::string&, std::vector<uint8_t>&)>& edit = {}) {
  auto f = k3::gguf::GgufFile::open(src);
  std::vector<std::vector<uint8_t>> bufs;
  bufs.reserve(f->tensors().size());
  std::vector<k3::gguf::TensorSpec> specs;
  for (const auto& t : f->tensors()) {
    if (drop.count(t.name)) continue;
    bufs.emplace_back(t.data, t.data + t.nbytes);
    if (edit) edit(t.name, bufs.back());
    k3::gguf::TensorSpec s;
    s.name = t.name;
    s.ne = t.ne;
    s.type = t.type;
    s.data = bufs.back().data();
    specs.push_back(std::move(s));
  }
  k3::gguf::write_gguf(out, f->kvs(), specs);
}

}  // namespace reap_test
