// bench_kernels: weight-streaming speed of the matmul kernels per weight type.
// Decode (n_tok = 1) on a matrix far bigger than the caches, reported in GB/s of weights
// against the machine's read bandwidth (measured here with a streaming read, plain and
// prefetched); prefill (n_tok = 64) reported in GFLOP/s. --chain ROWSxCOLS instead runs decode
// over many matrices of one shape in turn (a model's pattern: what each dispatch costs);
// --decode-layout makes the chains read the decode layout where a type has one (IQ1_M; GB/s
// then of the file's bytes and of the layout's own); --small-pages keeps the buffer in 4 KiB
// pages (default: 2 MiB pages, as the engine's trunk).
// Not a test: numbers depend on the machine.
// Usage: bench_kernels [--threads N] [--mb MiB] [--types Q8_0,IQ1_M,...] [--chain RxC [--decode-layout]]
//                      [--small-pages]
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "kernels/decode_layout.h"
#include "kernels/matmul.h"
#include "kernels/stream_read.h"
#include "kernels/vec_dot.h"
#include "quant/codec.h"
#include "quant/types.h"

namespace {

using Clock = std::chrono::steady_clock;
using k3::quant::Type;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Process CPU seconds: on a shared machine, CPU time / threads approximates the wall time
// the run would take with the cores to itself (workers spin only briefly, so it counts little).
double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

uint64_t g_state = 0x9E3779B97F4A7C15ull;
uint64_t next_u64() {
  g_state ^= g_state << 13;
  g_state ^= g_state >> 7;
  g_state ^= g_state << 17;
  return g_state;
}

// Random payload with moderate, finite scales in every block (see tests/kernels/random_weights.h).
void fill_weights(Type t, uint8_t* p, size_t bytes, int64_t cols) {
  const auto& info = k3::quant::type_info(t);
  if (!info.quantized) {
    const int64_t n = static_cast<int64_t>(bytes / info.block_bytes);
    for (int64_t i = 0; i < n; ++i) {
      const float v = static_cast<float>(static_cast<int64_t>(next_u64() % 2001) - 1000) * 1e-3f;
      if (t == Type::F32) std::memcpy(p + 4 * i, &v, 4);
      else {
        const uint16_t h = t == Type::F16 ? k3::quant::fp32_to_fp16(v) : k3::quant::fp32_to_bf16(v);
        std::memcpy(p + 2 * i, &h, 2);
      }
    }
    return;
  }
  for (size_t i = 0; i + 8 <= bytes; i += 8) {
    const uint64_t r = next_u64();
    std::memcpy(p + i, &r, 8);
  }
  (void)cols;
  const uint16_t h = k3::quant::fp32_to_fp16(0.01f);
  for (size_t off = 0; off + info.block_bytes <= bytes; off += info.block_bytes) {
    uint8_t* b = p + off;
    switch (t) {
      case Type::MXFP4: b[0] = 124; break;
      case Type::Q2_K:
        std::memcpy(b + 80, &h, 2);
        std::memcpy(b + 82, &h, 2);
        break;
      case Type::Q3_K: std::memcpy(b + 108, &h, 2); break;
      case Type::Q4_K:
      case Type::Q5_K:
        std::memcpy(b, &h, 2);
        std::memcpy(b + 2, &h, 2);
        break;
      case Type::Q6_K: std::memcpy(b + 208, &h, 2); break;
      case Type::IQ1_M:
        for (int k = 0; k < 4; ++k) {
          uint16_t sc;
          std::memcpy(&sc, b + 48 + 2 * k, 2);
          sc = static_cast<uint16_t>((sc & 0x0FFF) | (((h >> (4 * k)) & 0xF) << 12));
          std::memcpy(b + 48 + 2 * k, &sc, 2);
        }
        break;
      default: std::memcpy(b, &h, 2); break;
    }
  }
}

// Streaming read bandwidth with n threads (kernels/stream_read.h), the best of plain and
// prefetching passes (as tools/bench/membw: the roofline is the best a reader can get).
double read_bandwidth(k3::ThreadPool& pool, const uint8_t* buf, size_t bytes, double& best_cpu) {
  double best = 0;
  best_cpu = 0;
  for (int rep = 0; rep < 6; ++rep) {
    const bool prefetch = rep % 2 == 1;
    std::vector<double> sink(64, 0.0);
    const auto t0 = Clock::now();
    const double c0 = cpu_seconds();
    pool.parallel_for(static_cast<int64_t>(bytes / 4096), [&](int64_t b0, int64_t b1, int th) {
      sink[static_cast<size_t>(th) * 8] = static_cast<double>(
          k3::kernels::stream_read_sum(buf + b0 * 4096, (b1 - b0) * 4096, prefetch ? 4096 : 0));
    });
    best = std::max(best, static_cast<double>(bytes) / seconds_since(t0) / 1e9);
    best_cpu = std::max(best_cpu, static_cast<double>(bytes) * pool.size() / (cpu_seconds() - c0) / 1e9);
    if (sink[0] == 1.2345) std::puts("");
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = k3::ThreadPool::default_threads();
  size_t mb = 256;
  long chain_rows = 0, chain_cols = 0;  // --chain: decode over a run of matrices of this shape
  bool small_pages = false;
  bool decode_layout = false;  // --decode-layout: chains read the types' decode layout where they have one
  std::vector<Type> types = {Type::F32,    Type::F16,   Type::BF16, Type::Q8_0, Type::MXFP4,
                             Type::Q2_K,   Type::Q3_K,  Type::Q4_K, Type::Q6_K, Type::IQ2_XXS,
                             Type::IQ2_XS, Type::IQ1_S, Type::IQ1_M};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--mb" && i + 1 < argc) mb = static_cast<size_t>(std::atoll(argv[++i]));
    else if (a == "--small-pages") small_pages = true;
    else if (a == "--decode-layout") decode_layout = true;
    else if (a == "--chain" && i + 1 < argc) {
      if (std::sscanf(argv[++i], "%ldx%ld", &chain_rows, &chain_cols) != 2 || chain_rows <= 0 ||
          chain_cols <= 0) {
        std::fprintf(stderr, "--chain wants ROWSxCOLS, e.g. 2048x2048\n");
        return 2;
      }
    } else if (a == "--types" && i + 1 < argc) {
      types.clear();
      std::string list = argv[++i];
      size_t pos = 0;
      while (pos <= list.size()) {
        const size_t e = std::min(list.find(',', pos), list.size());
        if (auto t = k3::quant::type_from_name(list.substr(pos, e - pos))) types.push_back(*t);
        pos = e + 1;
      }
    } else {
      std::fprintf(
          stderr,
          "usage: %s [--threads N] [--mb MiB] [--types T1,T2,...] [--chain ROWSxCOLS [--decode-layout]] "
          "[--small-pages]\n",
          argv[0]);
      return 2;
    }
  }
  k3::ThreadPool pool(threads);
  const size_t bytes = mb << 20;
  // Weights in 2 MiB pages, as the engine holds its trunk (store/resident_trunk.h), unless
  // --small-pages asks for the 4 KiB pages of a plain file mapping.
  uint8_t* buf =
      static_cast<uint8_t*>(std::aligned_alloc(2 << 20, (bytes + (2 << 20) - 1) & ~size_t((2 << 20) - 1)));
  if (!small_pages) madvise(buf, bytes, MADV_HUGEPAGE);
  std::memset(buf, 1, bytes);
  double bw_cpu = 0;
  const double bw = read_bandwidth(pool, buf, bytes, bw_cpu);
  std::printf("threads %d, read bandwidth %.2f GB/s wall, %.2f GB/s cpu-time based (%zu MiB buffer)\n",
              threads, bw, bw_cpu, mb);
  std::printf("decode: GB/s of weights, n_tok=1 (wall, and cpu-time based); prefill: GFLOP/s, n_tok=64\n");
  std::printf("%-8s %8s %8s %8s %8s %8s %8s\n", "type", "dec-wall", "%bw", "dec-cpu", "%bw-cpu", "pf-wall",
              "pf-cpu");

  if (chain_rows > 0) {
    // The decode pattern of a model: many matrices of one shape, one product each, one after
    // another; shows what each dispatch costs beyond streaming its bytes.
    std::printf("chain of %ldx%ld products, n_tok=1: GB/s of weights (wall)\n", chain_rows, chain_cols);
    for (Type t : types) {
      const size_t rb = k3::quant::row_bytes(t, chain_cols);
      const size_t mat = rb * static_cast<size_t>(chain_rows);
      const int64_t n_mat = static_cast<int64_t>(bytes / mat);
      if (n_mat < 1) continue;
      fill_weights(t, buf, static_cast<size_t>(n_mat) * mat, chain_cols);
      // The decode layout (kernels/decode_layout.h), as the engine's mapped expert store makes it.
      size_t drb = decode_layout ? k3::kernels::decode_row_bytes(t, chain_cols) : 0;
      const k3::kernels::DotKernel* dk = k3::kernels::dot_kernel(t);
      if (drb > 0 && !(dk && dk->dot_rows_decode)) {
        std::printf("%-8s (no decode-layout kernel on this CPU: the engine reads the file's rows)\n",
                    k3::quant::type_name(t));
        drb = 0;
      }
      const size_t dmat = drb * static_cast<size_t>(chain_rows);
      uint8_t* dbuf = nullptr;
      if (drb > 0) {
        const size_t dbytes = (static_cast<size_t>(n_mat) * dmat + (2 << 20) - 1) & ~size_t((2 << 20) - 1);
        dbuf = static_cast<uint8_t*>(std::aligned_alloc(2 << 20, dbytes));
        if (!small_pages) madvise(dbuf, dbytes, MADV_HUGEPAGE);
        const int64_t per_block = static_cast<int64_t>(k3::quant::type_info(t).block_bytes);
        k3::kernels::repack_for_decode(t, buf, dbuf,
                                       static_cast<int64_t>(static_cast<size_t>(n_mat) * mat) / per_block);
      }
      std::vector<float> x(static_cast<size_t>(chain_cols)), y(static_cast<size_t>(chain_rows));
      for (float& v : x) v = static_cast<float>(static_cast<int>(next_u64() % 2001) - 1000) * 1e-3f;
      double best = 1e30;
      for (int rep = 0; rep < 4; ++rep) {
        const auto t0 = Clock::now();
        for (int64_t m = 0; m < n_mat; ++m) {
          k3::kernels::WeightView w{t, buf + static_cast<size_t>(m) * mat, chain_cols, chain_rows, rb};
          if (dbuf) {
            w.decode = dbuf + static_cast<size_t>(m) * dmat;
            w.decode_stride = drb;
          }
          k3::kernels::matmul(w, x.data(), 1, y.data(), &pool);
        }
        best = std::min(best, seconds_since(t0));
      }
      const double gbs = static_cast<double>(n_mat) * static_cast<double>(mat) / best / 1e9;
      std::printf("%-8s %8.2f GB/s %5.0f%% of bw, %.1f us per product (%ld products of %.2f MB)\n",
                  k3::quant::type_name(t), gbs, 100.0 * gbs / bw, best / static_cast<double>(n_mat) * 1e6,
                  static_cast<long>(n_mat), static_cast<double>(mat) / 1e6);
      if (dbuf) {
        std::printf("         decode layout: %.2f GB/s of its own bytes (%.2f MB per product)\n",
                    static_cast<double>(n_mat) * static_cast<double>(dmat) / best / 1e9,
                    static_cast<double>(dmat) / 1e6);
        std::free(dbuf);
      }
    }
    std::free(buf);
    return 0;
  }
  const int64_t cols = 7168;
  for (Type t : types) {
    const size_t rb = k3::quant::row_bytes(t, cols);
    const int64_t rows = static_cast<int64_t>(bytes / rb);
    fill_weights(t, buf, static_cast<size_t>(rows) * rb, cols);
    k3::kernels::WeightView w{t, buf, cols, rows, rb};
    std::vector<float> x(static_cast<size_t>(cols) * 64), y(static_cast<size_t>(rows) * 64);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = static_cast<float>(static_cast<int>(next_u64() % 2001) - 1000) * 1e-3f;
    double best = 1e30, best_cpu = 1e30;
    for (int rep = 0; rep < 4; ++rep) {
      const auto t0 = Clock::now();
      const double c0 = cpu_seconds();
      k3::kernels::matmul(w, x.data(), 1, y.data(), &pool);
      best = std::min(best, seconds_since(t0));
      best_cpu = std::min(best_cpu, (cpu_seconds() - c0) / threads);
    }
    const double gbs = static_cast<double>(rows) * static_cast<double>(rb) / best / 1e9;
    const double gbs_cpu = static_cast<double>(rows) * static_cast<double>(rb) / best_cpu / 1e9;
    // prefill: 64 tokens on a slice of about 8 MiB of weights
    const int64_t prow =
        std::max<int64_t>(64, std::min<int64_t>(rows, static_cast<int64_t>((8u << 20) / rb)));
    k3::kernels::WeightView wp{t, buf, cols, prow, rb};
    double pbest = 1e30, pbest_cpu = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      const auto t0 = Clock::now();
      const double c0 = cpu_seconds();
      k3::kernels::matmul(wp, x.data(), 64, y.data(), &pool);
      pbest = std::min(pbest, seconds_since(t0));
      pbest_cpu = std::min(pbest_cpu, (cpu_seconds() - c0) / threads);
    }
    const double flop = 2.0 * static_cast<double>(prow) * cols * 64;
    std::printf("%-8s %8.2f %7.0f%% %8.2f %7.0f%% %8.1f %8.1f\n", k3::quant::type_name(t), gbs,
                100.0 * gbs / bw, gbs_cpu, 100.0 * gbs_cpu / bw_cpu, flop / pbest / 1e9,
                flop / pbest_cpu / 1e9);
    std::fflush(stdout);
  }
  std::free(buf);
  return 0;
}
