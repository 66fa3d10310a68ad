// gguf/file: a validated, memory-mapped GGUF model: one file or a sharded set.
// Contract: open() either returns a file whose every header field, KV, tensor info, offset
// and size has been checked against the bytes on disk, or throws k3::Error naming the file,
// the field and the byte offset. Tensor data pointers stay valid for the object's lifetime.
// A sharded set (NAME-00001-of-0000N.gguf) is opened from its first shard; KVs come from the
// first shard, tensors from all shards in one namespace.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gguf/value.h"
#include "quant/types.h"

namespace k3 {
class MappedFile;
}

namespace k3::gguf {

constexpr size_t kMaxDims = 4;

struct TensorInfo {
  std::string name;
  std::vector<int64_t> ne;  // ne[0] is the contiguous dimension; 1..4 entries as stored
  quant::Type type = quant::Type::F32;
  uint64_t offset = 0;            // relative to its shard's data section, as stored
  uint64_t nbytes = 0;            // derived from type and shape
  uint32_t shard = 0;             // index into GgufFile::shards()
  const uint8_t* data = nullptr;  // mapped bytes (nbytes long)
  uint64_t file_offset = 0;       // absolute offset of the data within its shard file

  int64_t n_elements() const;
  int64_t dim(size_t i) const { return i < ne.size() ? ne[i] : 1; }
  std::string shape_string() const;  // "[4096, 7168, 400]"
};

struct Shard {
  std::string path;
  uint32_t version = 3;
  uint64_t file_size = 0;
  uint64_t alignment = 32;
  uint64_t data_offset = 0;  // start of the data section
  uint32_t n_tensors = 0;
};

struct OpenOptions {
  bool load_shards = true;  // follow split.count to the other shards
};

class GgufFile {
 public:
  static std::unique_ptr<GgufFile> open(const std::string& path, const OpenOptions& opt = {});
  // Parses a GGUF image held in memory (one shard; split.* keys are checked but other shards
  // are not looked for). `name` stands for the file in error messages. The bytes are not
  // copied: they must outlive the returned object. mapping() is unavailable (no shards mapped).
  static std::unique_ptr<GgufFile> open_memory(const uint8_t* data, size_t size,
                                               const std::string& name = "<memory>");
  ~GgufFile();

  // Metadata of the first shard, in file order.
  const std::vector<std::pair<std::string, Value>>& kvs() const { return kvs_; }
  const Value* find(std::string_view key) const;
  // Typed lookups that throw "FILE: missing key KEY" / type errors naming the key.
  const Value& get(std::string_view key) const;
  std::string get_string(std::string_view key, std::string_view def) const;
  int64_t get_int(std::string_view key, int64_t def) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* tensor(std::string_view name) const;

  const std::vector<Shard>& shards() const { return shards_; }
  const std::string& path() const { return shards_.front().path; }
  uint32_t version() const { return shards_.front().version; }
  uint64_t total_file_size() const;
  // The raw mapping of shard i (for byte-exact copies and round trips).
  const MappedFile& mapping(size_t shard) const { return *maps_.at(shard); }

 private:
  GgufFile() = default;
  std::vector<std::unique_ptr<MappedFile>> maps_;
  std::vector<Shard> shards_;
  std::vector<std::pair<std::string, Value>> kvs_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, size_t, std::less<>> tensor_index_;
  std::map<std::string, size_t, std::less<>> kv_index_;
  friend class Parser;
};

}  // namespace k3::gguf
