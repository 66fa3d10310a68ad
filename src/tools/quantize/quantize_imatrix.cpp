// tools/quantize_imatrix: GGUF and legacy importance-matrix readers (see quantize_imatrix.h).
#include "tools/quantize/quantize_imatrix.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>

#include "core/atomic_file.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "gguf/file.h"

namespace k3::tools {

namespace {

constexpr const char* kSum = ".in_sum2";
constexpr const char* kCount = ".counts";

const float* f32_data(const gguf::TensorInfo& t, const std::string& path) {
  if (t.type != quant::Type::F32)
    fail("{}: imatrix tensor {} has type {}, expected F32", path, t.name, quant::type_name(t.type));
  return reinterpret_cast<const float*>(t.data);
}

Imatrix load_gguf(const std::string& path) {
  auto f = gguf::GgufFile::open(path);
  Imatrix im;
  im.path = path;
  if (f->get_string("general.type", "") != "imatrix")
    fail("{}: not an imatrix file (general.type is '{}', expected 'imatrix')", path,
         f->get_string("general.type", ""));
  const gguf::Value* ds = f->find("imatrix.datasets");
  const gguf::Value* cc = f->find("imatrix.chunk_count");
  const gguf::Value* cs = f->find("imatrix.chunk_size");
  if (!ds || !cc || !cs)
    fail("{}: imatrix file lacks {}", path,
         !ds   ? "imatrix.datasets"
         : !cc ? "imatrix.chunk_count"
               : "imatrix.chunk_size");
  if (!ds->is_array() || ds->elem != gguf::ValueType::STRING)
    fail("{}: imatrix.datasets must be an array of strings", path);
  im.datasets = ds->strs;
  im.chunk_count = static_cast<uint32_t>(cc->as_uint());
  im.chunk_size = static_cast<uint32_t>(cs->as_uint());

  for (const gguf::TensorInfo& t : f->tensors()) {
    if (t.name.ends_with(kCount)) continue;
    if (!t.name.ends_with(kSum))
      fail("{}: unexpected tensor {} (imatrix tensors end in {} or {})", path, t.name, kSum, kCount);
    std::string name = t.name.substr(0, t.name.size() - std::strlen(kSum));
    const gguf::TensorInfo* c = f->tensor(name + kCount);
    if (!c) fail("{}: imatrix entry {} has {} but no {}", path, name, kSum, kCount);
    const int64_t n_in = t.dim(0), n_mat = t.dim(1);
    if (t.dim(2) != 1 || t.dim(3) != 1 || n_in <= 0)
      fail("{}: imatrix tensor {} has shape {}, expected [n_in, n_mat]", path, t.name, t.shape_string());
    if (c->n_elements() != n_mat)
      fail("{}: imatrix tensor {} has {} counts for {} matrices", path, c->name, c->n_elements(), n_mat);
    const float* sums = f32_data(t, path);
    const float* counts = f32_data(*c, path);
    ImatrixEntry e;
    e.n_in = n_in;
    e.n_mat = n_mat;
    e.values.resize(static_cast<size_t>(n_in * n_mat));
    for (int64_t m = 0; m < n_mat; ++m) {
      const float cf = counts[m];
      if (!std::isfinite(cf) || cf < 0)
        fail("{}: imatrix entry {} has an invalid count {} for matrix {}", path, name, cf, m);
      const int64_t count = std::llround(cf);
      e.counts.push_back(count);
      for (int64_t i = 0; i < n_in; ++i) {
        float& v = e.values[static_cast<size_t>(m * n_in + i)];
        // A never-routed expert has no information: uniform importance. (Divide by the
        // stored float, as llama-quantize does, not by the rounded count.)
        v = cf > 0.0f ? sums[m * n_in + i] / cf : 1.0f;
        if (!std::isfinite(v)) fail("{}: imatrix entry {} holds a non-finite value", path, name);
      }
    }
    im.entries.emplace(std::move(name), std::move(e));
  }
  if (im.entries.empty()) fail("{}: imatrix file has no entries", path);
  return im;
}

class Reader {
 public:
  Reader(const MappedFile& m) : m_(m) {}
  int32_t i32(const char* what) {
    int32_t v;
    bytes(&v, 4, what);
    return v;
  }
  void bytes(void* dst, size_t n, const char* what) {
    if (n > m_.size() - pos_)
      fail("{}: truncated legacy imatrix at byte {} (reading {})", m_.path(), pos_, what);
    std::memcpy(dst, m_.data() + pos_, n);
    pos_ += n;
  }
  bool at_end() const { return pos_ == m_.size(); }
  size_t pos() const { return pos_; }

 private:
  const MappedFile& m_;
  size_t pos_ = 0;
};

Imatrix load_legacy(const std::string& path, const MappedFile& m) {
  Imatrix im;
  im.path = path;
  im.legacy = true;
  Reader r(m);
  const int32_t n = r.i32("entry count");
  if (n < 1) fail("{}: legacy imatrix has {} entries (not an imatrix file?)", path, n);
  for (int32_t k = 0; k < n; ++k) {
    const int32_t len = r.i32("name length");
    if (len < 1 || len > 4096) fail("{}: legacy imatrix entry {} has a name length of {}", path, k, len);
    std::string name(static_cast<size_t>(len), '\0');
    r.bytes(name.data(), name.size(), "entry name");
    const int32_t ncall = r.i32("ncall");
    const int32_t nval = r.i32("nval");
    if (nval < 1) fail("{}: legacy imatrix entry {} has {} values", path, name, nval);
    ImatrixEntry e;
    e.values.resize(static_cast<size_t>(nval));
    r.bytes(e.values.data(), e.values.size() * 4, "entry values");
    if (ncall > 0)
      for (float& v : e.values) v /= static_cast<float>(ncall);
    e.n_in = nval;
    e.counts.push_back(ncall);
    im.entries[name] = std::move(e);
  }
  if (!r.at_end()) {
    im.chunk_count = static_cast<uint32_t>(r.i32("last chunk"));
    if (!r.at_end()) {
      const int32_t len = r.i32("dataset name length");
      if (len < 0 || static_cast<size_t>(len) > m.size()) fail("{}: bad dataset name length {}", path, len);
      std::string ds(static_cast<size_t>(len), '\0');
      r.bytes(ds.data(), ds.size(), "dataset name");
      im.datasets.push_back(ds);
    }
  }
  return im;
}

}  // namespace

const ImatrixEntry* Imatrix::find(const std::string& tensor_name) const {
  auto it = entries.find(tensor_name);
  return it == entries.end() ? nullptr : &it->second;
}

Imatrix load_imatrix(const std::string& path) {
  auto m = std::make_unique<MappedFile>(path);
  if (m->size() >= 4 && std::memcmp(m->data(), "GGUF", 4) == 0) {
    m.reset();
    return load_gguf(path);
  }
  return load_legacy(path, *m);
}

void write_legacy_imatrix(const std::string& path, const Imatrix& im) {
  constexpr int32_t kNcall = 4;  // a power of two: values·4/4 round-trips exactly
  AtomicFile out(path);
  auto i32 = [&](int32_t v) { out.write(&v, 4); };
  i32(static_cast<int32_t>(im.entries.size()));
  for (const auto& [name, e] : im.entries) {
    i32(static_cast<int32_t>(name.size()));
    out.write(name.data(), name.size());
    i32(kNcall);
    i32(static_cast<int32_t>(e.values.size()));
    for (float v : e.values) {
      float s = v * kNcall;
      out.write(&s, 4);
    }
  }
  i32(static_cast<int32_t>(im.chunk_count));
  std::string ds = im.datasets.empty() ? std::string() : im.datasets.front();
  i32(static_cast<int32_t>(ds.size()));
  out.write(ds.data(), ds.size());
  out.commit();
}

}  // namespace k3::tools
