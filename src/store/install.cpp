// store/install: plan, build and install the streaming store (see install.h).
#include "store/install.h"

#include <fmt/format.h>

#include <cstdio>
#include <algorithm>
#include <filesystem>
#include <thread>

#include "core/error.h"
#include "gguf/file.h"

#include "model/hparams.h"
#include "model/expert_source.h"
#include "model/gpu_placement.h"
#include "model/model.h"
#include "store/decode_copy.h"
#include "store/memory_limit.h"
#include "store/resident_trunk.h"

namespace k3::store {

std::unique_ptr<ExpertStore> build_store(const model::Model& m, const MemoryOptions& opt,
                                         const EngineShape& shape, bool quiet) {
  if (!opt.streaming) return nullptr;
  const model::HParams& hp = m.hparams();
  if (!hp.has_moe()) return nullptr;
  for (const gguf::Shard& sh : m.gguf().shards())
    if (sh.path.starts_with("/proc/") || !std::filesystem::is_regular_file(sh.path))
      fail(
          "--ram-budget streams experts from the model file; this model is not a plain file ({}): "
          "give one with -m, or use --mmap",
          sh.path);
  if (opt.ram_budget != kUnlimited) {
    std::string where;
    const uint64_t limit = process_memory_limit(&where);
    if (limit && opt.ram_budget > limit)
      fail(
          "--ram-budget {} is more than this process may use ({} {}): give at most that, less what "
          "else runs beside k3",
          format_size(opt.ram_budget), where, format_size(limit));
  }
  const MemoryPlan plan = plan_memory(m, opt.ram_budget, shape);
  std::unique_ptr<ExpertStore> s = make_expert_store(m, plan, opt);
  if (!quiet) {
    fmt::print(stderr, "{}", plan_table(plan));
    if (s->populate_seconds() > 0)
      fmt::print(stderr, "  expert cache backed with memory in {:.2f} s\n", s->populate_seconds());
    fmt::print(stderr, "  reads: {}{}, {} in flight; eviction {}; next-layer prediction {}; trunk {}\n",
               s->backend(), s->direct_io() ? " + O_DIRECT" : " (buffered: O_DIRECT refused)", opt.io_depth,
               eviction_name(opt.eviction), opt.predict ? "on" : "off",
               s->trunk_locked() ? "locked" : "not locked (no mlock permission)");
    std::fflush(stderr);
  }
  return s;
}

void prepare_trunk(model::Model& m, const MemoryOptions& opt, bool quiet) {
  if (!opt.trunk_hugepages || !m.moved_trunk().empty()) return;
  const ResidentTrunk r = make_resident_trunk(m, opt.trunk_hugepages_min, opt.streaming, !quiet);
  if (quiet || r.small) return;
  if (r.skipped.empty())
    fmt::print(stderr,
               "trunk: {} copied into huge pages in {:.2f} s ({} backed by 2 MiB pages{}; --no-hugepages to "
               "keep the mapping)\n",
               format_size(r.bytes), r.seconds, format_size(r.huge_bytes),
               r.dropped_page_cache ? ", the file's copy dropped from the page cache" : "");
  else fmt::print(stderr, "trunk: left in the file mapping: {}\n", r.skipped);
  std::fflush(stderr);
}

std::unique_ptr<model::ExpertSource> prepare_decode_copy(const model::Model& m,
                                                         std::unique_ptr<model::ExpertSource> mapped,
                                                         const MemoryOptions& opt, bool quiet) {
  if (!opt.decode_copy || opt.streaming) return mapped;
  const uint64_t avail = memory_available();
  const unsigned cores = std::thread::hardware_concurrency();
  DecodeCopy r =
      make_decode_copy(m, std::move(mapped), avail / 2, static_cast<int>(std::clamp(cores, 1u, 16u)), !quiet);
  // Small copies, like small trunks, go unmentioned: a few MiB cost nothing worth a line.
  if (quiet || r.inapplicable || (r.skipped.empty() && r.bytes < opt.trunk_hugepages_min))
    return std::move(r.source);
  if (r.skipped.empty())
    fmt::print(stderr,
               "experts: {} of {} rewritten into the decode layout in {:.2f} s ({} in memory; --no-repack "
               "to read the file's layout)\n",
               format_size(r.file_bytes), r.types, r.seconds, format_size(r.bytes));
  else fmt::print(stderr, "experts: decode in the file's layout: {}\n", r.skipped);
  std::fflush(stderr);
  return std::move(r.source);
}

// -ngl: the placed layers go to the GPU first, so that the huge-page copy, the store's locked trunk
// and the memory plan leave them out. Streamed experts stay on the CPU (the store reads them into
// RAM slots), and experts bound for the GPU get no decode copy (it would only cost RAM).
// The load lines go to stderr (model::place_on_gpu logs them).
void place_layers_on_gpu(model::Model& m, MemoryOptions& opt) {
  if (!opt.gpu.any() || m.gpu()) return;
  model::GpuPlacement g = opt.gpu;
  if (opt.streaming) g.cpu_moe = true;
  if (!g.cpu_moe) opt.decode_copy = false;
  model::place_on_gpu(m, g);
}

ExpertStore* install_store(model::Model& m, const MemoryOptions& options, const EngineShape& shape,
                           bool quiet, const SourceWrapper& wrap) {
  MemoryOptions opt = options;
  place_layers_on_gpu(m, opt);
  prepare_trunk(m, opt, quiet);
  std::unique_ptr<ExpertStore> s = build_store(m, opt, shape, quiet);
  ExpertStore* raw = s.get();
  std::unique_ptr<model::ExpertSource> src = std::move(s);
  if (!src && (wrap || (m.hparams().has_moe() && opt.decode_copy)))
    src = prepare_decode_copy(m, model::make_mapped_expert_source(m.gguf(), m.hparams()), opt, quiet);
  if (wrap) src = wrap(std::move(src));
  if (src) m.set_expert_source(std::move(src));
  return raw;
}

ExpertStore* find_store(const model::Model& m) {
  const model::HParams& hp = m.hparams();
  if (!hp.has_moe()) return nullptr;
  return dynamic_cast<ExpertStore*>(&m.experts());
}

std::string describe(const ExpertStore* s) {
  if (!s) return "mmap";
  return fmt::format("stream ({}{}, {}, {} slots)", s->backend(), s->direct_io() ? ", O_DIRECT" : "",
                     eviction_name(s->eviction()), s->plan().slots);
}

std::string summary_line(const StoreStats& s, double tokens, double seconds) {
  return fmt::format(
      "expert store: read {:.1f} MiB ({:.2f} MiB/token) at {:.2f} GB/s while busy | hit rate {:.1f}% | "
      "prefetched {:.1f}% | prediction recall {:.1f}% precision {:.1f}% | I/O wait {:.1f}% of {:.2f} s",
      s.bytes_read / 1048576.0, tokens > 0 ? s.bytes_read / 1048576.0 / tokens : 0.0, s.busy_bw() / 1e9,
      100 * s.hit_rate(), s.needed ? 100.0 * s.prefetched / s.needed : 0.0, 100 * s.prediction_recall(),
      100 * s.prediction_precision(), seconds > 0 ? 100 * s.io_wait_s / seconds : 0.0, seconds);
}

}  // namespace k3::store
