// gguf/parser: turns the bytes of one GGUF file (one shard) into validated KVs and tensor
// infos, and assembles shards into a GgufFile. Internal to the gguf module.
// Contract: parse() reads only inside [data, data+size); every count, length, type id, shape,
// offset and size is checked before use; any violation throws k3::Error
// "NAME: FIELD: PROBLEM (byte offset N)".
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gguf/file.h"

namespace k3::gguf {

struct ParsedShard {
  Shard shard;
  std::vector<std::pair<std::string, Value>> kvs;
  std::vector<TensorInfo> tensors;  // data/file_offset filled, shard index 0
};

class Parser {
 public:
  Parser(const uint8_t* data, size_t size, std::string name)
      : data_(data), size_(size), name_(std::move(name)) {}
  ParsedShard parse();

  // Appends a parsed shard's tensors to f (checking names across shards); the first shard
  // added also provides the KVs.
  static void add_shard(GgufFile& f, ParsedShard&& p);
  // Checks split.* keys and opens the remaining shards of a split set.
  static void load_split(GgufFile& f, const OpenOptions& opt, bool from_disk);

 private:
  [[noreturn]] void fail_at(uint64_t offset, const std::string& field, const std::string& what) const;
  void need(uint64_t n, const std::string& field) const;
  uint32_t u32(const std::string& field);
  uint64_t u64(const std::string& field);
  std::string str(const std::string& field, uint64_t max_len);
  Value value(ValueType t, const std::string& field, int depth);
  ValueType value_type(const std::string& field);

  const uint8_t* data_;
  size_t size_;
  std::string name_;
  uint64_t pos_ = 0;
};

}  // namespace k3::gguf
