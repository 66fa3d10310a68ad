// cli/open_model: how every command that runs the model opens it and sizes its engine.
// Contract: open_model() loads the file at `path`, or the embedded k3-tiny when `path` is empty
// (cli/embedded_model.h), and checks what the command needs of it: a vocabulary (Required),
// and for chat the K3 chat template and markers (Chat: an unsupported template is an error,
// a K3 variant a warning). Without a vocabulary the tokenizer is null (Optional only).
// Errors are k3::Error naming the model as shown and the command.
// EngineFlags are the engine's shape and placement flags (-t, -c, --cache-type and the memory
// flags of cli/memory_flags.h), added to a command by add_engine_flags(); apply() checks them
// (an error text for a usage error) and fills the scheduler's options and the memory options.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "cli/memory_flags.h"
#include "server/scheduler.h"
#include "model/sequence_state.h"
#include "store/memory_options.h"

namespace CLI {
class App;
}
namespace k3::model {
class Model;
}
namespace k3::text {
class Tokenizer;
}

namespace k3::cli {

enum class VocabNeed { Optional, Required, Chat };

struct OpenedModel {
  std::shared_ptr<model::Model> model;
  std::shared_ptr<const text::Tokenizer> tok;  // null: the model has no vocabulary
  std::string name;                            // as the banner shows it
  bool embedded = false;
};

OpenedModel open_model(const std::string& path, VocabNeed need, std::string_view command);

struct EngineFlags {
  int32_t threads = 0;
  int64_t n_ctx = 4096;
  model::CacheType cache_type = model::CacheType::F32;
  MemoryFlags memory;
};

// The MLA cache precision flag, f32 or f16, under `names` ("--cache-type", or eval-logits' and
// perplexity's "--kv-type"): the one place its spelling is parsed.
void add_cache_type_flag(CLI::App& app, model::CacheType& out, const std::string& names,
                         const std::string& help);

// ctx_help: what -c counts for this command (its default is the flags' n_ctx).
void add_engine_flags(CLI::App& app, EngineFlags& f, const std::string& ctx_help);
std::string apply(const EngineFlags& f, server::SchedulerOptions& sched, store::MemoryOptions& mem);

}  // namespace k3::cli
