// gguf/writer: GGUF v3 serialization, shard planning and atomic output (see writer.h).
// Layout per shard: header, KVs, tensor infos, zero padding to the alignment, then each
// tensor's bytes followed by zero padding to the alignment (the last one too), which is what
// ggml and gguf-py emit, so a faithful copy of a parsed file is byte-identical.
#include "gguf/writer.h"

#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <set>

#include "core/atomic_file.h"
#include "core/error.h"
#include "gguf/layout.h"

namespace k3::gguf {

namespace {

class Buf {
 public:
  // resize + memcpy rather than insert: g++ 12 at -O3 (CMAKE_BUILD_TYPE=Release) reports a
  // false stringop-overflow for the inlined insert, which -Werror turns into a failed build.
  void bytes(const void* p, size_t n) {
    if (n == 0) return;
    const size_t at = v_.size();
    v_.resize(at + n);
    std::memcpy(v_.data() + at, p, n);
  }
  void u32(uint32_t x) { bytes(&x, 4); }
  void u64(uint64_t x) { bytes(&x, 8); }
  void str(const std::string& s) {
    u64(s.size());
    bytes(s.data(), s.size());
  }
  const std::vector<uint8_t>& data() const { return v_; }

 private:
  std::vector<uint8_t> v_;
};

void put_value(Buf& b, const Value& v, const std::string& key) {
  switch (v.type) {
    case ValueType::STRING: b.str(v.str); return;
    case ValueType::ARRAY: {
      b.u32(static_cast<uint32_t>(v.elem));
      if (v.elem == ValueType::STRING) {
        b.u64(v.strs.size());
        for (const std::string& s : v.strs) b.str(s);
      } else if (v.elem == ValueType::ARRAY) {
        b.u64(v.nested.size());
        for (const Value& n : v.nested) {
          if (n.type != ValueType::ARRAY) fail("gguf writer: key {}: nested element is not an ARRAY", key);
          put_value(b, n, key);
        }
      } else {
        size_t sz = value_type_size(v.elem);
        if (sz == 0 || v.raw.size() % sz != 0)
          fail("gguf writer: key {}: packed array of {} has {} bytes", key, value_type_name(v.elem),
               v.raw.size());
        b.u64(v.raw.size() / sz);
        b.bytes(v.raw.data(), v.raw.size());
      }
      return;
    }
    default: {
      size_t sz = value_type_size(v.type);
      if (sz == 0) fail("gguf writer: key {}: invalid value type {}", key, static_cast<uint32_t>(v.type));
      b.bytes(&v.bits, sz);  // little-endian host: the low bytes
    }
  }
}

struct Planned {
  const TensorSpec* spec;
  uint64_t nbytes;
  uint64_t padded;
};

bool is_split_key(const std::string& k) {
  return k == "split.no" || k == "split.count" || k == "split.tensors.count";
}

// Writes one shard to a temporary file (not yet committed).
std::unique_ptr<AtomicFile> write_shard(const std::string& path,
                                        const std::vector<std::pair<std::string, Value>>& kvs,
                                        const std::vector<Planned>& tensors, uint64_t alignment,
                                        const WriteOptions& opt, std::vector<uint8_t>& scratch) {
  Buf meta;
  meta.bytes("GGUF", 4);
  meta.u32(3);
  meta.u64(tensors.size());
  meta.u64(kvs.size());
  for (const auto& [key, v] : kvs) {
    meta.str(key);
    meta.u32(static_cast<uint32_t>(v.type));
    put_value(meta, v, key);
  }
  uint64_t offset = 0;
  for (const Planned& t : tensors) {
    meta.str(t.spec->name);
    meta.u32(static_cast<uint32_t>(t.spec->ne.size()));
    for (int64_t e : t.spec->ne) meta.u64(static_cast<uint64_t>(e));
    meta.u32(static_cast<uint32_t>(t.spec->type));
    meta.u64(offset);
    offset += t.padded;
  }
  auto out = std::make_unique<AtomicFile>(path);
  out->write(meta.data().data(), meta.data().size());
  uint64_t data_start = 0;
  align_up(meta.data().size(), alignment, &data_start);
  out->write_zeros(data_start - meta.data().size());
  for (const Planned& t : tensors) {
    const TensorSpec& s = *t.spec;
    if (s.fill) {
      scratch.assign(t.nbytes, 0);
      s.fill(scratch.data(), t.nbytes);
      out->write(scratch.data(), t.nbytes);
      if (opt.on_written) opt.on_written(s, t.nbytes);
    } else if (s.data) {
      out->write(s.data, t.nbytes);
      if (opt.on_written) opt.on_written(s, t.nbytes);
    } else if (opt.sparse_holes) {
      out->skip(t.nbytes);
    } else {
      out->write_zeros(t.nbytes);
    }
    out->write_zeros(t.padded - t.nbytes);
  }
  return out;
}

}  // namespace

std::string shard_path(const std::string& prefix, uint32_t index, uint32_t count) {
  return fmt::format("{}-{:05d}-of-{:05d}.gguf", prefix, index + 1, count);
}

std::vector<std::string> write_gguf(const std::string& path,
                                    const std::vector<std::pair<std::string, Value>>& kvs,
                                    const std::vector<TensorSpec>& tensors, const WriteOptions& opt) {
  // Validate everything before creating any file.
  uint64_t alignment = kDefaultAlignment;
  std::set<std::string, std::less<>> keys;
  for (const auto& [key, v] : kvs) {
    if (key.empty()) fail("{}: cannot write an empty key", path);
    if (!keys.insert(key).second) fail("{}: duplicate key {}", path, key);
    if (key == "general.alignment") {
      if (v.type != ValueType::UINT32 || !valid_alignment(v.bits))
        fail("{}: general.alignment must be a UINT32 power of two", path);
      alignment = v.bits;
    }
  }
  std::vector<Planned> plan;
  plan.reserve(tensors.size());
  std::set<std::string, std::less<>> names;
  for (const TensorSpec& t : tensors) {
    if (t.name.size() > kMaxNameBytes)
      fail("{}: tensor name '{}' is longer than {} bytes", path, t.name, kMaxNameBytes);
    if (!names.insert(t.name).second) fail("{}: duplicate tensor name '{}'", path, t.name);
    uint64_t nbytes = 0;
    std::string why = tensor_nbytes(static_cast<uint32_t>(t.type), t.ne, &nbytes);
    if (!why.empty()) fail("{}: tensor '{}': {}", path, t.name, why);
    plan.push_back({&t, nbytes, 0});
  }

  // Shard plan: consecutive runs; a tensor that would overflow the limit opens the next shard.
  // Shards after the first carry no general.alignment, so they use the default alignment.
  std::vector<std::vector<Planned>> shards(1);
  uint64_t running = 0;
  const SplitOptions& sp = opt.split;
  for (Planned p : plan) {
    uint64_t a = shards.size() == 1 ? alignment : kDefaultAlignment;
    if (!align_up(p.nbytes, a, &p.padded)) fail("{}: tensor '{}' is too large", path, p.spec->name);
    std::vector<Planned>& cur = shards.back();
    bool full = !cur.empty() && ((sp.max_tensors && cur.size() >= sp.max_tensors) ||
                                 (sp.max_bytes && running + p.padded > sp.max_bytes));
    if (full) {
      shards.emplace_back();
      running = 0;
      if (!align_up(p.nbytes, kDefaultAlignment, &p.padded))
        fail("{}: tensor '{}' is too large", path, p.spec->name);
    }
    shards.back().push_back(p);
    running += p.padded;
  }

  std::vector<uint8_t> scratch;
  std::vector<std::unique_ptr<AtomicFile>> outs;
  std::vector<std::string> written;
  if (shards.size() == 1) {
    outs.push_back(write_shard(path, kvs, shards[0], alignment, opt, scratch));
    written.push_back(path);
  } else {
    if (shards.size() > 65535)
      fail("{}: {} shards is more than split.count (UINT16) can hold", path, shards.size());
    std::string prefix;
    uint32_t number = 0, count = 0;
    if (!parse_shard_name(path, &prefix, &number, &count)) {
      prefix = path;
      if (prefix.size() > 5 && prefix.ends_with(".gguf")) prefix.resize(prefix.size() - 5);
    }
    uint32_t n = static_cast<uint32_t>(shards.size());
    for (uint32_t i = 0; i < n; ++i) {
      std::vector<std::pair<std::string, Value>> skv;
      if (i == 0)
        for (const auto& kv : kvs)
          if (!is_split_key(kv.first)) skv.push_back(kv);
      skv.emplace_back("split.no", Value::u16(static_cast<uint16_t>(i)));
      skv.emplace_back("split.count", Value::u16(static_cast<uint16_t>(n)));
      skv.emplace_back("split.tensors.count", Value::i32(static_cast<int32_t>(tensors.size())));
      std::string p = shard_path(prefix, i, n);
      outs.push_back(write_shard(p, skv, shards[i], i == 0 ? alignment : kDefaultAlignment, opt, scratch));
      written.push_back(p);
    }
  }
  // Only now, with every shard complete, do the final names appear.
  for (auto& o : outs) o->commit();
  return written;
}

}  // namespace k3::gguf
