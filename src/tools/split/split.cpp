// tools/split: re-sharding through the GGUF writer (see split.h).
#include "tools/split/split.h"

#include <cctype>
#include <chrono>

#include "core/error.h"
#include "gguf/file.h"
#include "gguf/layout.h"
#include "core/progress.h"

namespace k3::tools {

namespace {

bool is_split_key(const std::string& k) {
  return k == "split.no" || k == "split.count" || k == "split.tensors.count";
}

std::string strip_gguf(std::string p) {
  if (p.size() > 5 && p.ends_with(".gguf")) p.resize(p.size() - 5);
  return p;
}

ShardingResult copy_model(const std::string& input, const std::string& output, bool keep_split_layout,
                          const gguf::SplitOptions& split, bool progress_on, const char* label) {
  auto in = gguf::GgufFile::open(input);
  std::vector<std::pair<std::string, gguf::Value>> kvs;
  uint64_t alignment = gguf::kDefaultAlignment;
  for (const auto& kv : in->kvs()) {
    if (is_split_key(kv.first)) continue;
    if (kv.first == "general.alignment") alignment = kv.second.as_uint();
    kvs.push_back(kv);
  }
  ShardingResult res;
  uint64_t total = 0;
  std::vector<uint64_t> sizes;
  for (const auto& t : in->tensors()) {
    sizes.push_back(t.nbytes);
    total += t.nbytes;
  }
  Progress progress(total, label, progress_on);
  std::vector<gguf::TensorSpec> specs;
  specs.reserve(in->tensors().size());
  for (const auto& t : in->tensors()) {
    gguf::TensorSpec s;
    s.name = t.name;
    s.ne = t.ne;
    s.type = t.type;
    s.data = t.data;  // written straight from the mapping
    specs.push_back(std::move(s));
  }
  gguf::WriteOptions wo;
  wo.on_written = [&progress](const gguf::TensorSpec& t, uint64_t n) { progress.advance(n, t.name); };
  std::string path = output;
  if (keep_split_layout) {
    wo.split = split;
    std::string prefix = strip_gguf(output);
    const uint32_t n = count_shards(sizes, alignment, split);
    if (n == 1) {
      // The writer adds split keys only when it makes several shards; gguf-split writes them
      // (and the -00001-of-00001 name) even for one.
      kvs.emplace_back("split.no", gguf::Value::u16(0));
      kvs.emplace_back("split.count", gguf::Value::u16(1));
      kvs.emplace_back("split.tensors.count", gguf::Value::i32(static_cast<int32_t>(specs.size())));
      wo.split = {};
    }
    path = gguf::shard_path(prefix, 0, n);
  }
  auto t0 = std::chrono::steady_clock::now();
  res.files = gguf::write_gguf(path, kvs, specs, wo);
  progress.finish();
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.tensors = specs.size();
  res.bytes = total;
  return res;
}

}  // namespace

uint32_t count_shards(const std::vector<uint64_t>& sizes, uint64_t alignment, const gguf::SplitOptions& sp) {
  uint32_t shards = 1;
  uint64_t running = 0, in_cur = 0;
  for (uint64_t nb : sizes) {
    uint64_t a = shards == 1 ? alignment : gguf::kDefaultAlignment, padded = 0;
    if (!gguf::align_up(nb, a, &padded)) fail("tensor of {} bytes is too large", nb);
    bool full = in_cur > 0 && ((sp.max_tensors && in_cur >= sp.max_tensors) ||
                               (sp.max_bytes && running + padded > sp.max_bytes));
    if (full) {
      ++shards;
      running = 0;
      in_cur = 0;
      gguf::align_up(nb, gguf::kDefaultAlignment, &padded);
    }
    running += padded;
    ++in_cur;
  }
  return shards;
}

uint64_t parse_size(const std::string& text) {
  std::string s = text;
  if (!s.empty() && (s.back() == 'B' || s.back() == 'b')) s.pop_back();
  uint64_t mult = 1;
  if (!s.empty()) {
    switch (std::toupper(static_cast<unsigned char>(s.back()))) {
      case 'K': mult = 1000ull; break;
      case 'M': mult = 1000ull * 1000; break;
      case 'G': mult = 1000ull * 1000 * 1000; break;
      case 'T': mult = 1000ull * 1000 * 1000 * 1000; break;
      default: break;
    }
    if (mult != 1) s.pop_back();
  }
  if (s.empty() || s.find_first_not_of("0123456789.") != std::string::npos)
    fail("'{}' is not a size (examples: 45G, 500M, 1000000)", text);
  double v = 0;
  try {
    v = std::stod(s);
  } catch (const std::exception&) { fail("'{}' is not a size (examples: 45G, 500M, 1000000)", text); }
  const double bytes = v * static_cast<double>(mult);
  if (!(bytes >= 1) || bytes > 1.8e19) fail("size '{}' is out of range", text);
  return static_cast<uint64_t>(bytes);
}

ShardingResult split_model(const std::string& input, const std::string& out_prefix,
                           const gguf::SplitOptions& split, bool progress) {
  if (!split.max_bytes && !split.max_tensors) fail("split: give --split-max-size or --split-max-tensors");
  return copy_model(input, out_prefix, true, split, progress, "split");
}

ShardingResult merge_model(const std::string& first_shard, const std::string& output, bool progress) {
  return copy_model(first_shard, output, false, {}, progress, "merge");
}

}  // namespace k3::tools
