// gguf/file: opening GGUF files and split sets, KV lookups (see file.h). The byte-level
// validation lives in parser.cpp; this file checks what spans shards: the split.* keys, the
// shard names and the single tensor namespace.
#include "gguf/file.h"

#include <fmt/format.h>

#include "core/error.h"
#include "core/mapped_file.h"
#include "gguf/layout.h"
#include "gguf/parser.h"
#include "gguf/writer.h"

namespace k3::gguf {

int64_t TensorInfo::n_elements() const {
  int64_t n = 1;
  for (int64_t e : ne) n *= e;  // validated not to overflow when the file was opened
  return n;
}

std::string TensorInfo::shape_string() const {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", ne[i]);
  return s + "]";
}

GgufFile::~GgufFile() = default;

const Value* GgufFile::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kvs_[it->second].second;
}

const Value& GgufFile::get(std::string_view key) const {
  const Value* v = find(key);
  if (!v) fail("{}: missing key {}", path(), key);
  return *v;
}

std::string GgufFile::get_string(std::string_view key, std::string_view def) const {
  const Value* v = find(key);
  if (!v) return std::string(def);
  if (v->type != ValueType::STRING)
    fail("{}: key {}: expected STRING, got {}", path(), key, value_type_name(v->type));
  return v->str;
}

int64_t GgufFile::get_int(std::string_view key, int64_t def) const {
  const Value* v = find(key);
  if (!v) return def;
  try {
    return v->as_int();
  } catch (const Error& e) { fail("{}: key {}: {}", path(), key, e.what()); }
}

const TensorInfo* GgufFile::tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

uint64_t GgufFile::total_file_size() const {
  uint64_t n = 0;
  for (const Shard& s : shards_) n += s.file_size;
  return n;
}

void Parser::add_shard(GgufFile& f, ParsedShard&& p) {
  uint32_t index = static_cast<uint32_t>(f.shards_.size());
  if (index == 0) {
    f.kvs_ = std::move(p.kvs);
    for (size_t i = 0; i < f.kvs_.size(); ++i) f.kv_index_.emplace(f.kvs_[i].first, i);
  }
  for (TensorInfo& t : p.tensors) {
    auto prev = f.tensor_index_.find(t.name);
    if (prev != f.tensor_index_.end())
      fail("{}: tensor '{}' also appears in shard {} ({}): tensor names must be unique across shards",
           p.shard.path, t.name, f.tensors_[prev->second].shard + 1,
           f.shards_[f.tensors_[prev->second].shard].path);
    t.shard = index;
    f.tensor_index_.emplace(t.name, f.tensors_.size());
    f.tensors_.push_back(std::move(t));
  }
  f.shards_.push_back(std::move(p.shard));
}

namespace {

// Reads an integer split.* key of `kvs`; -1 when absent.
int64_t split_key(const std::vector<std::pair<std::string, Value>>& kvs, const std::string& file,
                  const char* key) {
  for (const auto& [k, v] : kvs) {
    if (k != key) continue;
    if (!v.is_integer()) fail("{}: key {}: expected an integer, got {}", file, key, value_type_name(v.type));
    int64_t x = v.as_int();
    if (x < 0 || x > 65535) fail("{}: key {}: value {} out of range", file, key, x);
    return x;
  }
  return -1;
}

ParsedShard parse_mapped(const MappedFile& m) { return Parser(m.data(), m.size(), m.path()).parse(); }

}  // namespace

void Parser::load_split(GgufFile& f, const OpenOptions& opt, bool from_disk) {
  const std::string& first = f.shards_.front().path;
  int64_t count = split_key(f.kvs_, first, "split.count");
  int64_t no = split_key(f.kvs_, first, "split.no");
  int64_t total = split_key(f.kvs_, first, "split.tensors.count");
  if (count == -1) {
    if (no > 0) fail("{}: key split.no = {} without split.count", first, no);
    if (total != -1 && static_cast<uint64_t>(total) != f.tensors_.size())
      fail("{}: key split.tensors.count = {} but the file has {} tensors", first, total, f.tensors_.size());
    return;
  }
  if (count == 0) fail("{}: key split.count: value 0 (must be at least 1)", first);
  if (no == -1) fail("{}: key split.no is missing although split.count = {}", first, count);
  if (no >= count) fail("{}: key split.no = {} is not below split.count = {}", first, no, count);
  if (total == -1) fail("{}: key split.tensors.count is missing although split.count = {}", first, count);
  if (count == 1) {
    if (static_cast<uint64_t>(total) != f.tensors_.size())
      fail("{}: key split.tensors.count = {} but the file has {} tensors", first, total, f.tensors_.size());
    return;
  }
  if (!from_disk || !opt.load_shards) return;

  std::string prefix;
  uint32_t number = 0, name_count = 0;
  bool named = parse_shard_name(first, &prefix, &number, &name_count);
  if (no != 0)
    fail("{}: this is shard {} of {} (split.no = {}); open the first shard{}", first, no + 1, count, no,
         named ? " " + shard_path(prefix, 0, static_cast<uint32_t>(count)) : std::string());
  if (!named)
    fail(
        "{}: split.count = {} but the file name does not end in -00001-of-{:05d}.gguf, so the other "
        "shards cannot be located",
        first, count, count);
  if (number != 1 || name_count != count)
    fail("{}: the file name says shard {} of {} but split.no = 0 and split.count = {}", first, number,
         name_count, count);

  for (uint32_t i = 1; i < count; ++i) {
    std::string p = shard_path(prefix, i, static_cast<uint32_t>(count));
    std::unique_ptr<MappedFile> m;
    try {
      m = std::make_unique<MappedFile>(p);
    } catch (const Error& e) {
      fail("{}: shard {} of {} is missing or unreadable: {}", first, i + 1, count, e.what());
    }
    ParsedShard ps = parse_mapped(*m);
    int64_t c = split_key(ps.kvs, p, "split.count");
    int64_t n = split_key(ps.kvs, p, "split.no");
    int64_t t = split_key(ps.kvs, p, "split.tensors.count");
    if (c != count) fail("{}: key split.count = {} but the first shard says {}", p, c, count);
    if (n != i) fail("{}: key split.no = {} but this is shard index {}", p, n, i);
    if (t != total) fail("{}: key split.tensors.count = {} but the first shard says {}", p, t, total);
    f.maps_.push_back(std::move(m));
    add_shard(f, std::move(ps));
  }
  if (f.tensors_.size() != static_cast<uint64_t>(total))
    fail("{}: split.tensors.count = {} but the {} shards hold {} tensors", first, total, count,
         f.tensors_.size());
}

std::unique_ptr<GgufFile> GgufFile::open(const std::string& path, const OpenOptions& opt) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  auto m = std::make_unique<MappedFile>(path);
  ParsedShard p = parse_mapped(*m);
  f->maps_.push_back(std::move(m));
  Parser::add_shard(*f, std::move(p));
  Parser::load_split(*f, opt, true);
  return f;
}

std::unique_ptr<GgufFile> GgufFile::open_memory(const uint8_t* data, size_t size, const std::string& name) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  Parser::add_shard(*f, Parser(data, size, name).parse());
  Parser::load_split(*f, OpenOptions{}, false);
  return f;
}

}  // namespace k3::gguf
