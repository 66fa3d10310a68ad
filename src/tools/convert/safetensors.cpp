// tools/safetensors: header parsing and validation (see safetensors.h). Layout: u64 LE header
// length N, N bytes of JSON, then the data section that every data_offsets pair is relative to.
#include "tools/convert/safetensors.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/mapped_file.h"

namespace k3::tools {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct DtypeRow {
  StDtype t;
  const char* name;
  size_t size;
};
constexpr DtypeRow kDtypes[] = {
    {StDtype::F64, "F64", 8},   {StDtype::F32, "F32", 4},         {StDtype::F16, "F16", 2},
    {StDtype::BF16, "BF16", 2}, {StDtype::I64, "I64", 8},         {StDtype::I32, "I32", 4},
    {StDtype::I16, "I16", 2},   {StDtype::I8, "I8", 1},           {StDtype::U64, "U64", 8},
    {StDtype::U32, "U32", 4},   {StDtype::U16, "U16", 2},         {StDtype::U8, "U8", 1},
    {StDtype::BOOL, "BOOL", 1}, {StDtype::F8_E4M3, "F8_E4M3", 1}, {StDtype::F8_E5M2, "F8_E5M2", 1},
};

// A header larger than this is not a checkpoint header but a corrupt length field.
constexpr uint64_t kMaxHeader = uint64_t(1) << 30;

}  // namespace

const char* st_dtype_name(StDtype t) { return kDtypes[static_cast<int>(t)].name; }
size_t st_dtype_size(StDtype t) { return kDtypes[static_cast<int>(t)].size; }

int64_t StTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string StTensor::shape_string() const { return fmt::format("[{}]", fmt::join(shape, ", ")); }

std::vector<StTensor> parse_safetensors(const uint8_t* data, size_t size, const std::string& name) {
  if (size < 8)
    fail("{}: not a safetensors file ({} bytes, shorter than the 8-byte header length)", name, size);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | data[i];
  if (n > kMaxHeader || n > size - 8)
    fail("{}: header length {} exceeds the file ({} bytes): truncated or not a safetensors file", name, n,
         size);
  json hdr;
  try {
    hdr = json::parse(data + 8, data + 8 + n);
  } catch (const json::exception& e) { fail("{}: the JSON header does not parse: {}", name, e.what()); }
  if (!hdr.is_object()) fail("{}: the JSON header is not an object", name);
  const uint64_t data_size = size - 8 - n;
  const uint8_t* base = data + 8 + n;
  std::vector<StTensor> out;
  for (auto it = hdr.begin(); it != hdr.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const std::string& tn = it.key();
    const json& e = it.value();
    if (!e.is_object() || !e.contains("dtype") || !e.contains("shape") || !e.contains("data_offsets"))
      fail("{}: tensor '{}': header entry needs dtype, shape and data_offsets", name, tn);
    StTensor t;
    t.name = tn;
    t.file = name;
    if (!e["dtype"].is_string()) fail("{}: tensor '{}': dtype is not a string", name, tn);
    const std::string dt = e["dtype"].get<std::string>();
    auto row =
        std::find_if(std::begin(kDtypes), std::end(kDtypes), [&](const DtypeRow& r) { return dt == r.name; });
    if (row == std::end(kDtypes)) fail("{}: tensor '{}': unknown dtype '{}'", name, tn, dt);
    t.dtype = row->t;
    if (!e["shape"].is_array()) fail("{}: tensor '{}': shape is not an array", name, tn);
    unsigned __int128 numel = 1;
    for (const json& d : e["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0)
        fail("{}: tensor '{}': bad shape entry {}", name, tn, d.dump());
      t.shape.push_back(d.get<int64_t>());
      numel *= static_cast<uint64_t>(t.shape.back());
      if (numel > (uint64_t(1) << 62))
        fail("{}: tensor '{}': shape {} is too large", name, tn, e["shape"].dump());
    }
    const json& off = e["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      fail("{}: tensor '{}': data_offsets must be two non-negative integers", name, tn);
    uint64_t b = off[0].get<uint64_t>(), en = off[1].get<uint64_t>();
    if (b > en || en > data_size)
      fail("{}: tensor '{}': data_offsets [{}, {}] out of range (data section is {} bytes; file truncated?)",
           name, tn, b, en, data_size);
    // In 128 bits: numel may be up to 2^62 and 8-byte elements would wrap a 64-bit product
    // (shape [2^61] F64 "needed" 0 bytes and was accepted over an empty span).
    const unsigned __int128 need = numel * row->size;
    if (need != en - b)
      fail("{}: tensor '{}': {} {} needs {} bytes but data_offsets span {}", name, tn, dt, t.shape_string(),
           static_cast<double>(need), en - b);
    const uint64_t want = en - b;
    t.data = base + b;
    t.nbytes = want;
    out.push_back(std::move(t));
  }
  return out;
}

SafetensorsSet::~SafetensorsSet() = default;

void SafetensorsSet::add_file(const std::string& path) {
  auto m = std::make_unique<MappedFile>(path);
  std::vector<StTensor> ts = parse_safetensors(m->data(), m->size(), path);
  for (StTensor& t : ts) {
    auto [it, fresh] = tensors_.emplace(t.name, t);
    if (!fresh) fail("tensor '{}' appears in both {} and {}", t.name, it->second.file, path);
  }
  files_.push_back(path);
  maps_.push_back(std::move(m));
}

std::unique_ptr<SafetensorsSet> SafetensorsSet::open(const std::string& path) {
  std::unique_ptr<SafetensorsSet> s(new SafetensorsSet());
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    s->add_file(path);
    return s;
  }
  const fs::path dir(path);
  const fs::path index = dir / "model.safetensors.index.json";
  if (fs::exists(index, ec)) {
    json j;
    try {
      std::ifstream in(index);
      j = json::parse(in);
    } catch (const json::exception& e) { fail("{}: does not parse: {}", index.string(), e.what()); }
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      fail("{}: no weight_map object", index.string());
    std::vector<std::string> order;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it.value().is_string()) fail("{}: weight_map['{}'] is not a file name", index.string(), it.key());
      const std::string f = it.value().get<std::string>();
      if (f.find('/') != std::string::npos || f == "..")
        fail("{}: weight_map['{}'] names '{}', which is outside the checkpoint directory", index.string(),
             it.key(), f);
      if (std::find(order.begin(), order.end(), f) == order.end()) order.push_back(f);
    }
    std::sort(order.begin(), order.end());
    for (const std::string& f : order) {
      if (!fs::exists(dir / f, ec)) fail("{}: lists '{}', which does not exist", index.string(), f);
      s->add_file((dir / f).string());
    }
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      const StTensor* t = s->find(it.key());
      const std::string want = (dir / it.value().get<std::string>()).string();
      if (!t) fail("{}: tensor '{}' is not in {}", index.string(), it.key(), want);
      if (t->file != want)
        fail("{}: tensor '{}' is in {}, not in {}", index.string(), it.key(), t->file, want);
    }
    return s;
  }
  if (fs::exists(dir / "model.safetensors", ec)) {
    s->add_file((dir / "model.safetensors").string());
    return s;
  }
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".safetensors") files.push_back(e.path().string());
  if (files.empty()) fail("{}: no safetensors files (model.safetensors.index.json or *.safetensors)", path);
  std::sort(files.begin(), files.end());
  for (const std::string& f : files) s->add_file(f);
  return s;
}

const StTensor* SafetensorsSet::find(std::string_view name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const StTensor& SafetensorsSet::get(std::string_view name) const {
  const StTensor* t = find(name);
  if (!t) fail("missing tensor '{}' in the checkpoint", name);
  return *t;
}

uint64_t SafetensorsSet::total_bytes() const {
  uint64_t n = 0;
  for (const auto& [k, t] : tensors_) n += t.nbytes;
  return n;
}

}  // namespace k3::tools
