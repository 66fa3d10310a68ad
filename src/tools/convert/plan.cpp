// tools/convert/plan: encoding planned tensors and streaming them to a GGUF (see plan.h).
#include "tools/convert/plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <mutex>

#include "core/error.h"
#include "core/log.h"
#include "core/progress.h"
#include "core/thread_pool.h"
#include "gguf/writer.h"
#include "quant/codec.h"

namespace k3::tools {

using quant::Type;

float elem_f32(const StTensor& t, int64_t i) {
  const uint8_t* p = t.data + i * static_cast<int64_t>(st_dtype_size(t.dtype));
  uint16_t h;
  float f;
  switch (t.dtype) {
    case StDtype::F32: std::memcpy(&f, p, 4); return f;
    case StDtype::F16: std::memcpy(&h, p, 2); return quant::fp16_to_fp32(h);
    case StDtype::BF16: std::memcpy(&h, p, 2); return quant::bf16_to_fp32(h);
    default: fail("tensor '{}': dtype {} is not a float type", t.name, st_dtype_name(t.dtype));
  }
}

void read_f32(const StTensor& t, int64_t off, int64_t n, float* dst) {
  if (t.dtype == StDtype::F32) {
    std::memcpy(dst, t.data + off * 4, static_cast<size_t>(n) * 4);
    return;
  }
  for (int64_t i = 0; i < n; ++i) dst[i] = elem_f32(t, off + i);
}

bool same_encoding(StDtype s, Type t) {
  return (s == StDtype::F32 && t == Type::F32) || (s == StDtype::F16 && t == Type::F16) ||
         (s == StDtype::BF16 && t == Type::BF16);
}

uint32_t file_type_of(Type t, bool mxfp4) {
  if (mxfp4) return 38;  // LLAMA_FTYPE_MOSTLY_MXFP4_MOE
  switch (t) {
    case Type::F32: return 0;
    case Type::F16: return 1;
    case Type::Q8_0: return 7;
    default: return 32;  // BF16
  }
}

namespace {

// Encodes rows [r0, r1) of a plan into dst (which points at row r0).
void encode_rows(const Plan& p, int64_t r0, int64_t r1, uint8_t* dst, std::vector<float>& buf) {
  const size_t rb = quant::row_bytes(p.type, p.ne0);
  buf.resize(static_cast<size_t>(p.ne0));
  for (int64_t r = r0; r < r1; ++r, dst += rb) {
    if (p.row_bytes) {
      p.row_bytes(r, dst);
      continue;
    }
    p.row_f32(r, buf.data());
    switch (p.type) {
      case Type::F32: std::memcpy(dst, buf.data(), rb); break;
      case Type::F16:
        for (int64_t i = 0; i < p.ne0; ++i) {
          uint16_t h = quant::fp32_to_fp16(buf[i]);
          std::memcpy(dst + 2 * i, &h, 2);
        }
        break;
      case Type::BF16:
        for (int64_t i = 0; i < p.ne0; ++i) {
          uint16_t h = quant::fp32_to_bf16(buf[i]);
          std::memcpy(dst + 2 * i, &h, 2);
        }
        break;
      default:
        for (int64_t i = 0; i < p.ne0; ++i)
          if (!std::isfinite(buf[i]))
            fail("tensor '{}': row {} holds a NaN or Inf, which {} cannot encode", p.name, r,
                 quant::type_name(p.type));
        quant::quantize_rows(p.type, buf.data(), dst, 1, p.ne0, nullptr);
    }
  }
}

// Encodes a whole plan into dst (nbytes long), its rows spread over the pool.
void encode_plan(const Plan& p, ThreadPool& pool, uint8_t* dst, uint64_t nbytes) {
  const size_t rb = quant::row_bytes(p.type, p.ne0);
  if (rb * static_cast<uint64_t>(p.nrows) != nbytes) fail("internal: tensor '{}' size mismatch", p.name);
  std::mutex mu;
  std::exception_ptr err;
  pool.parallel_for(
      p.nrows,
      [&](int64_t r0, int64_t r1, int) {
        thread_local std::vector<float> buf;
        try {
          encode_rows(p, r0, r1, dst + rb * static_cast<size_t>(r0), buf);
        } catch (...) {
          std::lock_guard<std::mutex> lk(mu);
          if (!err) err = std::current_exception();
        }
      },
      std::max<int64_t>(1, 65536 / std::max<int64_t>(1, p.ne0)));
  if (err) std::rethrow_exception(err);
}

}  // namespace

WritePlansResult write_plans(const std::string& out_path,
                             const std::vector<std::pair<std::string, gguf::Value>>& kvs,
                             const std::vector<Plan>& plans, const WritePlansOptions& opt) {
  ThreadPool pool(opt.threads > 0 ? opt.threads : ThreadPool::default_threads());
  WritePlansResult res;
  std::vector<gguf::TensorSpec> specs;
  specs.reserve(plans.size());
  size_t idx = 0;
  for (const Plan& p : plans) {
    gguf::TensorSpec s;
    s.name = p.name;
    s.ne = p.ne;
    s.type = p.type;
    res.bytes_in += p.bytes_in;
    res.bytes_out += quant::row_bytes(p.type, p.ne0) * static_cast<uint64_t>(p.nrows);
    if (p.raw) {
      s.data = p.raw;
    } else {
      const Plan* pp = &p;
      const size_t n_total = plans.size(), my = ++idx;
      s.fill = [pp, &pool, &opt, my, n_total](uint8_t* dst, uint64_t nbytes) {
        if (opt.verbose)
          log::info("[{}/{}] {} {} {}", my, n_total, pp->name, quant::type_name(pp->type),
                    fmt::join(pp->ne, "x"));
        encode_plan(*pp, pool, dst, nbytes);
      };
    }
    specs.push_back(std::move(s));
  }
  gguf::WriteOptions wo;
  wo.split.max_bytes = opt.split_max_bytes;
  Progress progress(res.bytes_out, "convert", opt.progress && !opt.verbose);
  wo.on_written = [&progress](const gguf::TensorSpec& t, uint64_t n) { progress.advance(n, t.name); };
  res.files = gguf::write_gguf(out_path, kvs, specs, wo);
  progress.finish();
  return res;
}

}  // namespace k3::tools
