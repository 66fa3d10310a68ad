// tools/quantize: the `k3 quantize` pipeline (see quantize.h): plan every type up front, then
// stream one tensor at a time through the GGUF writer's fill callback.
#include "tools/quantize/quantize.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>

#include "core/error.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "gguf/file.h"
#include "quant/codec.h"
#include "core/progress.h"
#include "tools/quantize/quantize_imatrix.h"

namespace k3::tools {

using quant::Type;

namespace {

bool is_float(Type t) { return t == Type::F32 || t == Type::F16 || t == Type::BF16; }

bool is_split_key(const std::string& k) {
  return k == "split.no" || k == "split.count" || k == "split.tensors.count";
}

std::vector<std::pair<std::string, gguf::Value>> output_kvs(const gguf::GgufFile& in, const Recipe& r,
                                                            const Imatrix* im, const std::string& im_path) {
  std::vector<std::pair<std::string, gguf::Value>> kvs;
  for (const auto& kv : in.kvs()) {
    if (is_split_key(kv.first)) continue;
    if (!r.copy && (kv.first == "general.quantization_version" || kv.first == "general.file_type")) continue;
    kvs.push_back(kv);
  }
  if (r.copy) return kvs;
  // llama-quantize re-sets these two, which moves them to the end, then adds the provenance.
  kvs.emplace_back("general.quantization_version", gguf::Value::u32(2));
  kvs.emplace_back("general.file_type", gguf::Value::u32(r.file_type));
  if (im) {
    kvs.emplace_back("quantize.imatrix.file", gguf::Value::string(im_path));
    if (!im->datasets.empty())
      kvs.emplace_back("quantize.imatrix.dataset", gguf::Value::string(im->datasets.front()));
    kvs.emplace_back("quantize.imatrix.entries_count",
                     gguf::Value::u32(static_cast<uint32_t>(im->entries.size())));
    kvs.emplace_back("quantize.imatrix.chunks_count", gguf::Value::u32(im->chunk_count));
  }
  return kvs;
}

}  // namespace

QuantizePlan plan_quantize(const gguf::GgufFile& in, const QuantizeOptions& opt, const Imatrix* im) {
  QuantizePlan plan;
  PlanOptions po;
  po.recipe = parse_recipe(opt.type);
  for (const std::string& r : opt.tensor_types) po.rules.push_back(parse_tensor_type_rule(r));
  po.pure = opt.pure;
  po.output_type = opt.output_tensor_type;
  po.token_embd_type = opt.token_embedding_type;
  po.avoid_unsafe_gpu = opt.avoid_unsafe_gpu;
  plan.recipe = po.recipe;

  std::vector<TensorDesc> descs;
  for (const gguf::TensorInfo& t : in.tensors()) descs.push_back({t.name, t.ne, t.type});
  TypePlanner planner(model_facts(in.kvs(), descs), po);

  for (size_t idx : processing_order(descs)) {
    const gguf::TensorInfo& t = in.tensors()[idx];
    TypeChoice c = planner.choose(descs[idx]);
    TensorPlan p;
    p.name = t.name;
    p.ne = t.ne;
    p.from = t.type;
    p.to = c.type;
    p.rule = c.rule;
    p.input_index = idx;
    p.convert = p.to != p.from;
    p.bytes_in = t.nbytes;
    if (p.convert) {
      if (!is_float(p.from) && !opt.allow_requantize)
        fail("tensor {} is already quantized ({}); converting it to {} needs --allow-requantize", t.name,
             quant::type_name(p.from), quant::type_name(p.to));
      if (!quant::can_dequantize(p.from))
        fail("tensor {}: cannot decode its type {}", t.name, quant::type_name(p.from));
      if (!quant::can_quantize(p.to))
        fail("tensor {}: quantization to {} is not supported", t.name, quant::type_name(p.to));
      if (t.dim(0) % quant::type_info(p.to).block_elems != 0)
        fail("tensor {}: rows of {} elements cannot be stored as {}", t.name, t.dim(0),
             quant::type_name(p.to));
      const ImatrixEntry* e = im ? im->find(t.name) : nullptr;
      if (e) {
        const auto want = static_cast<size_t>(t.dim(0) * t.dim(2));
        if (e->values.size() != want)
          fail("tensor {} {}: imatrix entry has {} values, expected ne[0]·ne[2] = {}", t.name,
               t.shape_string(), e->values.size(), want);
        p.imatrix = true;
      }
      if (quant::requires_imatrix(p.to) && !e) {
        if (!im)
          fail(
              "tensor {} would be quantized to {}, which needs an importance matrix: pass --imatrix FILE "
              "(llama-imatrix output)",
              t.name, quant::type_name(p.to));
        fail(
            "tensor {} would be quantized to {}, which needs an importance matrix, but {} has no entry for "
            "it",
            t.name, quant::type_name(p.to), im->path);
      }
    }
    p.bytes_out = quant::row_bytes(p.to, t.dim(0)) *
                  static_cast<uint64_t>(t.n_elements() / std::max<int64_t>(1, t.dim(0)));
    plan.bytes_in += p.bytes_in;
    plan.bytes_out += p.bytes_out;
    plan.tensors.push_back(std::move(p));
  }
  plan.kvs = output_kvs(in, plan.recipe, opt.uniform_imatrix ? nullptr : im, opt.imatrix);
  return plan;
}

Imatrix uniform_imatrix(const gguf::GgufFile& in) {
  Imatrix im;
  im.path = "(uniform)";
  for (const gguf::TensorInfo& t : in.tensors()) {
    if (t.ne.size() < 2 || t.dim(1) <= 1) continue;
    ImatrixEntry e;
    e.n_in = t.dim(0);
    e.n_mat = t.dim(2);
    e.values.assign(static_cast<size_t>(e.n_in * e.n_mat), 1.0f);
    e.counts.assign(static_cast<size_t>(e.n_mat), 1);
    im.entries.emplace(t.name, std::move(e));
  }
  return im;
}

std::unique_ptr<Imatrix> importance_for(const QuantizeOptions& opt, const gguf::GgufFile& in) {
  if (opt.uniform_imatrix && !opt.imatrix.empty())
    fail("quantize: --imatrix and --uniform-imatrix exclude each other");
  if (opt.uniform_missing && opt.imatrix.empty())
    fail("quantize: --uniform-missing completes an --imatrix FILE");
  if (opt.uniform_imatrix) return std::make_unique<Imatrix>(uniform_imatrix(in));
  if (opt.imatrix.empty()) return nullptr;
  auto im = std::make_unique<Imatrix>(load_imatrix(opt.imatrix));
  if (opt.uniform_missing)
    for (auto& [name, e] : uniform_imatrix(in).entries) im->entries.try_emplace(name, std::move(e));
  return im;
}

void convert_tensor(const gguf::TensorInfo& src, Type to, const float* imatrix, uint8_t* dst,
                    ThreadPool& pool) {
  const int64_t ne0 = src.dim(0), ne1 = src.dim(1);
  const int64_t n_slices = src.n_elements() / std::max<int64_t>(1, ne0 * ne1);
  const int64_t ne2 = src.dim(2);
  const size_t in_row = quant::row_bytes(src.type, ne0), out_row = quant::row_bytes(to, ne0);
  // Rows are independent, so any chunking gives the same bytes: at most ~64k elements per
  // chunk (small float scratch) and at least ~4 chunks per thread (balance), never across slices.
  const int64_t max_rows = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(1, ne0));
  const int64_t want_units = int64_t{4} * pool.size();
  const int64_t even_rows = (n_slices * ne1 + want_units - 1) / want_units;
  const int64_t chunk_rows = std::max<int64_t>(1, std::min({ne1, max_rows, even_rows}));
  const int64_t chunks_per_slice = (ne1 + chunk_rows - 1) / chunk_rows;
  const int64_t n_units = n_slices * chunks_per_slice;

  std::vector<std::vector<float>> scratch(static_cast<size_t>(pool.size()) + 1);
  std::mutex err_mu;
  std::exception_ptr err;
  pool.parallel_for(n_units, [&](int64_t begin, int64_t end, int thread) {
    std::vector<float>& buf = scratch[static_cast<size_t>(std::min(thread, pool.size()))];
    try {
      for (int64_t u = begin; u < end; ++u) {
        const int64_t slice = u / chunks_per_slice;
        const int64_t r0 = (u % chunks_per_slice) * chunk_rows;
        const int64_t nr = std::min(chunk_rows, ne1 - r0);
        const int64_t row = slice * ne1 + r0;  // global row index
        buf.resize(static_cast<size_t>(nr * ne0));
        for (int64_t r = 0; r < nr; ++r)
          quant::dequantize_row(src.type, src.data + static_cast<size_t>(row + r) * in_row,
                                buf.data() + r * ne0, ne0);
        const float* w = imatrix ? imatrix + (slice % std::max<int64_t>(1, ne2)) * ne0 : nullptr;
        quant::quantize_rows(to, buf.data(), dst + static_cast<size_t>(row) * out_row, nr, ne0, w);
      }
    } catch (...) {
      std::lock_guard<std::mutex> lk(err_mu);
      if (!err) err = std::current_exception();
    }
  });
  if (err) {
    try {
      std::rethrow_exception(err);
    } catch (const Error& e) { fail("tensor {}: {}", src.name, e.what()); }
  }
}

QuantizeResult quantize_model(const QuantizeOptions& opt) {
  if (opt.input.empty() || opt.output.empty()) fail("quantize: input and output paths are required");
  auto in = gguf::GgufFile::open(opt.input);
  std::unique_ptr<Imatrix> im = importance_for(opt, *in);

  QuantizeResult res;
  res.plan = plan_quantize(*in, opt, im.get());
  const QuantizePlan& plan = res.plan;
  res.threads = opt.threads > 0 ? opt.threads : ThreadPool::default_threads();
  ThreadPool pool(res.threads);

  Progress progress(plan.bytes_in, "quantize", opt.progress);
  std::vector<gguf::TensorSpec> specs;
  specs.reserve(plan.tensors.size());
  const size_t count = plan.tensors.size();
  for (size_t i = 0; i < count; ++i) {
    const TensorPlan& p = plan.tensors[i];
    gguf::TensorSpec s;
    s.name = p.name;
    s.ne = p.ne;
    s.type = p.to;
    s.fill = [&, i](uint8_t* dst, uint64_t nbytes) {
      const TensorPlan& tp = plan.tensors[i];
      const gguf::TensorInfo& t = in->tensors()[tp.input_index];
      if (!tp.convert) {
        std::memcpy(dst, t.data, nbytes);  // unchanged: byte copy (e.g. MXFP4 experts)
      } else {
        const float* w = nullptr;
        if (tp.imatrix) w = im->find(tp.name)->values.data();
        convert_tensor(t, tp.to, w, dst, pool);
      }
      progress.advance(tp.bytes_in, tp.name);
      if (opt.on_tensor) opt.on_tensor(tp.name, i, count);
    };
    specs.push_back(std::move(s));
  }
  auto t0 = std::chrono::steady_clock::now();
  gguf::WriteOptions wo;
  wo.split = opt.split;
  res.files = gguf::write_gguf(opt.output, plan.kvs, specs, wo);
  progress.finish();
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace k3::tools
