// gguf/parser: bounds-checked parsing of one GGUF image (see parser.h). Every read goes through
// need(), which compares against the bytes left, so a hostile file can only ever produce an
// error message, never an out-of-bounds read or an allocation larger than the file implies.
#include "gguf/parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

#include "core/error.h"
#include "gguf/layout.h"

namespace k3::gguf {

namespace {

// ggml's caps; they also bound how much memory a small hostile file can make us allocate.
constexpr uint64_t kMaxStringBytes = uint64_t{1} << 30;
constexpr uint64_t kMaxArrayCount = uint64_t{1} << 30;
constexpr uint64_t kMaxCount = uint64_t{1} << 30;  // tensors, KVs
constexpr int kMaxArrayDepth = 8;
// Smallest possible records, used to reject impossible counts before looping over them.
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;      // key length, 1-byte key, type, u8 value
constexpr uint64_t kMinTensorBytes = 8 + 4 + 4 + 8;  // name len, n_dims, type, offset

// Names come from the file: escape control bytes and cut long ones so messages stay one line.
std::string printable(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == 96) return out + "...";
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f || c == '\\') out += fmt::format("\\x{:02x}", c);
    else out += static_cast<char>(c);
  }
  return out;
}
std::string kv_field(size_t i, const std::string& key) {
  return fmt::format("kv[{}] '{}'", i, printable(key));
}
std::string tensor_field(size_t i, const std::string& name) {
  return fmt::format("tensor[{}] '{}'", i, printable(name));
}

}  // namespace

void Parser::fail_at(uint64_t offset, const std::string& field, const std::string& what) const {
  fail("{}: {}: {} (byte offset {})", name_, field, what, offset);
}

void Parser::need(uint64_t n, const std::string& field) const {
  uint64_t left = size_ - pos_;
  if (n > left)
    fail_at(pos_, field,
            fmt::format("truncated file: needs {} bytes, only {} left (file size {})", n, left, size_));
}

uint32_t Parser::u32(const std::string& field) {
  need(4, field);
  uint32_t v;
  std::memcpy(&v, data_ + pos_, 4);
  pos_ += 4;
  return v;
}

uint64_t Parser::u64(const std::string& field) {
  need(8, field);
  uint64_t v;
  std::memcpy(&v, data_ + pos_, 8);
  pos_ += 8;
  return v;
}

std::string Parser::str(const std::string& field, uint64_t max_len) {
  uint64_t at = pos_;
  uint64_t n = u64(field + " length");
  if (n > max_len) fail_at(at, field, fmt::format("string length {} exceeds the limit of {}", n, max_len));
  if (n > size_ - pos_)
    fail_at(at, field,
            fmt::format("string length {} runs past the end of the file ({} bytes left)", n, size_ - pos_));
  std::string s(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(n));
  pos_ += n;
  return s;
}

ValueType Parser::value_type(const std::string& field) {
  uint64_t at = pos_;
  uint32_t t = u32(field);
  if (t > static_cast<uint32_t>(ValueType::FLOAT64))
    fail_at(at, field, fmt::format("unknown value type id {}", t));
  return static_cast<ValueType>(t);
}

Value Parser::value(ValueType t, const std::string& field, int depth) {
  Value v;
  v.type = t;
  if (t == ValueType::STRING) {
    v.str = str(field, kMaxStringBytes);
    return v;
  }
  if (t != ValueType::ARRAY) {
    size_t sz = value_type_size(t);
    need(sz, field);
    std::memcpy(&v.bits, data_ + pos_, sz);  // little-endian host: zero-extended low bytes
    pos_ += sz;
    return v;
  }
  if (depth >= kMaxArrayDepth)
    fail_at(pos_, field, fmt::format("arrays nested deeper than {} levels", kMaxArrayDepth));
  v.elem = value_type(field + " element type");
  uint64_t count_at = pos_;
  uint64_t n = u64(field + " array count");
  if (n > kMaxArrayCount)
    fail_at(count_at, field, fmt::format("array count {} exceeds the limit of {}", n, kMaxArrayCount));
  // Minimum bytes per element: scalars their size, strings their 8-byte length, arrays
  // their 12-byte type+count header.
  uint64_t min_elem = v.elem == ValueType::STRING  ? 8
                      : v.elem == ValueType::ARRAY ? 12
                                                   : value_type_size(v.elem);
  uint64_t left = size_ - pos_;
  if (n > left / min_elem)
    fail_at(count_at, field,
            fmt::format("array count {} of {} needs at least {} bytes, only {} left", n,
                        value_type_name(v.elem), n * min_elem, left));
  if (v.elem == ValueType::STRING) {
    v.strs.reserve(static_cast<size_t>(n));
    for (uint64_t i = 0; i < n; ++i) v.strs.push_back(str(fmt::format("{}[{}]", field, i), kMaxStringBytes));
  } else if (v.elem == ValueType::ARRAY) {
    v.nested.reserve(static_cast<size_t>(n));
    for (uint64_t i = 0; i < n; ++i)
      v.nested.push_back(value(ValueType::ARRAY, fmt::format("{}[{}]", field, i), depth + 1));
  } else {
    uint64_t bytes = n * min_elem;
    v.raw.assign(data_ + pos_, data_ + pos_ + bytes);
    pos_ += bytes;
  }
  return v;
}

ParsedShard Parser::parse() {
  ParsedShard out;
  out.shard.path = name_;
  out.shard.file_size = size_;

  need(4, "magic");
  if (std::memcmp(data_, "GGUF", 4) != 0)
    fail_at(0, "magic",
            fmt::format("not a GGUF file (starts with {:02x} {:02x} {:02x} {:02x})", data_[0], data_[1],
                        data_[2], data_[3]));
  pos_ = 4;
  uint32_t version = u32("version");
  if (version != 2 && version != 3) {
    if ((version & 0xFFFF) == 0 && (version == 0x02000000u || version == 0x03000000u))
      fail_at(4, "version", "big-endian GGUF files are not supported");
    if (version == 1) fail_at(4, "version", "GGUF version 1 is obsolete and not supported");
    fail_at(4, "version", fmt::format("unsupported GGUF version {} (2 and 3 are supported)", version));
  }
  out.shard.version = version;

  uint64_t n_tensors = u64("tensor count");
  uint64_t n_kv = u64("kv count");
  if (n_tensors > kMaxCount || n_tensors > (size_ - pos_) / kMinTensorBytes)
    fail_at(8, "tensor count",
            fmt::format("tensor count {} is impossible for a file of {} bytes", n_tensors, size_));
  if (n_kv > kMaxCount || n_kv > (size_ - pos_) / kMinKvBytes)
    fail_at(16, "kv count", fmt::format("kv count {} is impossible for a file of {} bytes", n_kv, size_));

  // KVs.
  std::set<std::string, std::less<>> keys;
  out.kvs.reserve(static_cast<size_t>(n_kv));
  uint64_t alignment = kDefaultAlignment;
  for (uint64_t i = 0; i < n_kv; ++i) {
    uint64_t at = pos_;
    std::string key = str(fmt::format("kv[{}] key", i), kMaxStringBytes);
    if (key.empty()) fail_at(at, fmt::format("kv[{}] key", i), "empty key");
    std::string field = kv_field(i, key);
    if (!keys.insert(key).second) fail_at(at, field, "duplicate key");
    ValueType t = value_type(field + " type");
    uint64_t value_at = pos_;
    Value v = value(t, field, 0);
    if (key == "general.alignment") {
      if (t != ValueType::UINT32)
        fail_at(value_at, field, fmt::format("must be UINT32, got {}", value_type_name(t)));
      if (!valid_alignment(v.bits))
        fail_at(value_at, field, fmt::format("alignment {} is not a non-zero power of two", v.bits));
      alignment = v.bits;
    }
    out.kvs.emplace_back(std::move(key), std::move(v));
  }
  out.shard.alignment = alignment;

  // Tensor infos.
  std::set<std::string, std::less<>> names;
  out.tensors.reserve(static_cast<size_t>(n_tensors));
  std::vector<uint64_t> info_at(static_cast<size_t>(n_tensors));
  for (uint64_t i = 0; i < n_tensors; ++i) {
    uint64_t at = pos_;
    info_at[i] = at;
    TensorInfo ti;
    ti.name = str(fmt::format("tensor[{}] name", i), kMaxStringBytes);
    std::string field = tensor_field(i, ti.name);
    if (ti.name.size() > kMaxNameBytes)
      fail_at(at, field, fmt::format("name is {} bytes long (at most {})", ti.name.size(), kMaxNameBytes));
    if (!names.insert(ti.name).second) fail_at(at, field, "duplicate tensor name");
    uint64_t dims_at = pos_;
    uint32_t n_dims = u32(field + " n_dims");
    if (n_dims > kMaxDims) fail_at(dims_at, field, fmt::format("n_dims = {} (at most {})", n_dims, kMaxDims));
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t ne_at = pos_;
      uint64_t e = u64(fmt::format("{} ne[{}]", field, d));
      if (e > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        fail_at(ne_at, field, fmt::format("negative extent ne[{}] = {}", d, static_cast<int64_t>(e)));
      ti.ne.push_back(static_cast<int64_t>(e));
    }
    uint64_t type_at = pos_;
    uint32_t type_id = u32(field + " type");
    std::string why = tensor_nbytes(type_id, ti.ne, &ti.nbytes);
    if (!why.empty()) fail_at(type_at, field, fmt::format("{} (shape {})", why, ti.shape_string()));
    ti.type = static_cast<quant::Type>(type_id);
    ti.offset = u64(field + " offset");
    out.tensors.push_back(std::move(ti));
  }

  // Data section.
  uint64_t data_start = 0;
  if (!align_up(pos_, alignment, &data_start)) fail_at(pos_, "data section", "start overflows");
  if (n_tensors > 0 && data_start > size_)
    fail_at(pos_, "data section",
            fmt::format("starts at byte {} but the file has only {} bytes (truncated)", data_start, size_));
  out.shard.data_offset = std::min<uint64_t>(data_start, size_);
  out.shard.n_tensors = static_cast<uint32_t>(n_tensors);

  uint64_t data_size = size_ - out.shard.data_offset;
  for (size_t i = 0; i < out.tensors.size(); ++i) {
    TensorInfo& ti = out.tensors[i];
    std::string field = tensor_field(i, ti.name) + " offset";
    uint64_t off_at = info_at[i];  // the record start: the offset is its last field
    if (ti.offset % alignment != 0)
      fail_at(off_at, field,
              fmt::format("offset {} is not a multiple of the alignment {}", ti.offset, alignment));
    if (ti.offset > data_size || ti.nbytes > data_size - ti.offset)
      fail_at(off_at, field,
              fmt::format("data [{}, +{}) lies beyond the end of the file (data section has {} bytes; "
                          "file truncated?)",
                          ti.offset, ti.nbytes, data_size));
    ti.file_offset = out.shard.data_offset + ti.offset;
    ti.data = data_ + ti.file_offset;
  }
  // Overlap: sort by offset and compare neighbours (empty tensors overlap nothing).
  std::vector<size_t> order(out.tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return out.tensors[a].offset < out.tensors[b].offset; });
  const TensorInfo* prev = nullptr;
  size_t prev_i = 0;
  for (size_t k : order) {
    const TensorInfo& t = out.tensors[k];
    if (t.nbytes == 0) continue;
    if (prev && prev->offset + prev->nbytes > t.offset)
      fail_at(info_at[k], tensor_field(k, t.name) + " offset",
              fmt::format("data [{}, +{}) overlaps tensor[{}] '{}' [{}, +{})", t.offset, t.nbytes, prev_i,
                          prev->name, prev->offset, prev->nbytes));
    prev = &t;
    prev_i = k;
  }
  return out;
}

}  // namespace k3::gguf
