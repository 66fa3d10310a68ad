// tools/imatrix_file: writes the GGUF imatrix file (see imatrix.h for the layout).
#include <cstring>
#include <utility>

#include "core/error.h"
#include "gguf/writer.h"
#include "tools/imatrix/imatrix.h"

namespace k3::tools {

void write_imatrix_gguf(const std::string& path, const ImatrixStats& stats) {
  if (stats.entries.empty()) fail("imatrix: nothing collected, not writing {}", path);
  std::vector<std::pair<std::string, gguf::Value>> kvs;
  kvs.emplace_back("general.type", gguf::Value::string("imatrix"));
  kvs.emplace_back("imatrix.datasets", gguf::Value::array_string(stats.datasets));
  kvs.emplace_back("imatrix.chunk_count", gguf::Value::u32(stats.chunk_count));
  kvs.emplace_back("imatrix.chunk_size", gguf::Value::u32(stats.chunk_size));

  // The float images must outlive write_gguf (TensorSpec::data is not copied before).
  std::vector<std::vector<float>> bufs;
  bufs.reserve(stats.entries.size() * 2);
  std::vector<gguf::TensorSpec> specs;
  for (const auto& [name, e] : stats.entries) {  // std::map: sorted by name, as llama.cpp writes
    if (e.n_in < 1 || e.n_mat < 1 || e.sums.size() != static_cast<size_t>(e.n_in * e.n_mat) ||
        e.counts.size() != static_cast<size_t>(e.n_mat))
      fail("imatrix: entry {} is inconsistent (n_in {}, n_mat {}, {} sums, {} counts)", name, e.n_in, e.n_mat,
           e.sums.size(), e.counts.size());
    bufs.emplace_back(e.sums.begin(), e.sums.end());
    gguf::TensorSpec s;
    s.name = name + ".in_sum2";
    s.ne = e.n_mat == 1 ? std::vector<int64_t>{e.n_in} : std::vector<int64_t>{e.n_in, e.n_mat};
    s.data = reinterpret_cast<const uint8_t*>(bufs.back().data());
    specs.push_back(std::move(s));
    bufs.emplace_back(e.counts.begin(), e.counts.end());
    gguf::TensorSpec c;
    c.name = name + ".counts";
    c.ne = e.n_mat == 1 ? std::vector<int64_t>{1} : std::vector<int64_t>{1, e.n_mat};
    c.data = reinterpret_cast<const uint8_t*>(bufs.back().data());
    specs.push_back(std::move(c));
  }
  gguf::write_gguf(path, kvs, specs);
}

}  // namespace k3::tools
