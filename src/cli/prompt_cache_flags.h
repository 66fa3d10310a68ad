// cli/prompt_cache_flags: the prompt cache's disk tier for `k3 serve` and `k3 chat`
// (docs/serve.md, "Prompt cache on disk"): --prompt-cache-dir DIR keeps every prompt snapshot
// as a state file in DIR too, so a conversation resumes after a restart or after its RAM
// snapshot was replaced; --prompt-cache-size SIZE bounds the files (least recently used go).
// Contract: apply_prompt_cache_flags() returns an error text for a usage error, else fills
// the scheduler's options; disk_plan_row() fills the memory plan's own row for it.
#pragma once

#include <string>

namespace CLI {
class App;
}
namespace k3::server {
struct SchedulerOptions;
}
namespace k3::store {
struct EngineShape;
}

namespace k3::cli {

struct PromptCacheFlags {
  std::string dir;
  std::string size = "32G";
};

void add_prompt_cache_flags(CLI::App& app, PromptCacheFlags& f);
std::string apply_prompt_cache_flags(const PromptCacheFlags& f, server::SchedulerOptions& so);
void disk_plan_row(const server::SchedulerOptions& so, store::EngineShape& shape);

}  // namespace k3::cli
