// cli/prompt_cache_flags: see prompt_cache_flags.h.
#include "cli/prompt_cache_flags.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "core/error.h"
#include "server/scheduler.h"
#include "store/memory_options.h"
#include "store/memory_plan.h"

namespace k3::cli {

void add_prompt_cache_flags(CLI::App& app, PromptCacheFlags& f) {
  app.add_option("--prompt-cache-dir", f.dir,
                 "also keep prompt-cache snapshots as files in DIR (created 0700, one k3 process per DIR): "
                 "a conversation resumes from disk after a restart instead of a new prefill (default: off)");
  app.add_option("--prompt-cache-size", f.size,
                 "most bytes the --prompt-cache-dir files may hold, e.g. 64G; least recently used go first "
                 "(default 32G; 0: no limit)");
}

std::string apply_prompt_cache_flags(const PromptCacheFlags& f, server::SchedulerOptions& so) {
  if (f.dir.empty()) return {};
  if (!so.prompt_cache) return "--prompt-cache-dir needs the prompt cache (drop --no-prompt-cache)";
  try {
    so.disk_bytes = f.size == "0" ? 0 : store::parse_size(f.size, "--prompt-cache-size");
  } catch (const Error& e) { return e.what(); }
  so.disk_dir = f.dir;
  return {};
}

void disk_plan_row(const server::SchedulerOptions& so, store::EngineShape& shape) {
  if (so.disk_dir.empty()) return;
  shape.disk_bytes = so.disk_bytes;
  shape.disk_note =
      fmt::format("{} (disk, not RAM; a restore holds one more state in RAM while it is read)", so.disk_dir);
}

}  // namespace k3::cli
