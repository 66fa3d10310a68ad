// cli/open_model: see open_model.h.
#include "cli/open_model.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "chat/vocab_roles.h"
#include "cli/embedded_model.h"
#include "core/error.h"
#include "core/log.h"
#include "gguf/file.h"
#include "model/model.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace k3::cli {

namespace {

bool has_vocab(const gguf::GgufFile& f) {
  return f.find("tokenizer.ggml.tokens") != nullptr && f.get_string("tokenizer.ggml.model", "") != "no_vocab";
}

void check_chat(const OpenedModel& m) {
  std::optional<std::string> tpl;
  if (const gguf::Value* v = m.model->gguf().find("tokenizer.chat_template")) tpl = v->as_string();
  text::TemplateCheck tc = text::check_chat_template(tpl);
  if (tc.kind == text::TemplateKind::Unsupported) fail("{}", tc.message);
  if (tc.kind == text::TemplateKind::K3Variant) log::warn("{}", tc.message);
  else if (tc.kind != text::TemplateKind::K3Exact) log::info("{}", tc.message);
  chat::VocabRoles::of(*m.tok).require_chat();
}

}  // namespace

OpenedModel open_model(const std::string& path, VocabNeed need, std::string_view command) {
  OpenedModel m;
  m.embedded = path.empty();
  m.model = m.embedded ? load_embedded_model() : model::Model::load(path);
  m.name = m.embedded ? std::string("(embedded ") + kEmbeddedModelName + ")" : path;
  if (has_vocab(m.model->gguf())) m.tok = text::Tokenizer::from_gguf(m.model->gguf());
  else if (need != VocabNeed::Optional) fail("{} has no vocabulary: k3 {} needs one", m.name, command);
  if (need == VocabNeed::Chat) check_chat(m);
  return m;
}

void add_cache_type_flag(CLI::App& app, model::CacheType& out, const std::string& names,
                         const std::string& help) {
  app.add_option_function<std::string>(
         names,
         [&out](const std::string& v) { out = v == "f16" ? model::CacheType::F16 : model::CacheType::F32; },
         help)
      ->check(CLI::IsMember({"f32", "f16"}));
}

void add_engine_flags(CLI::App& app, EngineFlags& f, const std::string& ctx_help) {
  app.add_option("-t,--threads", f.threads, "threads (default: the machine's default)");
  app.add_option("-c,--ctx-size,--ctx", f.n_ctx,
                 fmt::format("{} (default {}; 0: the model's)", ctx_help, f.n_ctx));
  add_cache_type_flag(app, f.cache_type, "--cache-type", "MLA cache precision: f32 or f16 (default f32)");
  add_memory_flags(app, f.memory);
}

std::string apply(const EngineFlags& f, server::SchedulerOptions& sched, store::MemoryOptions& mem) {
  if (f.threads < 0) return "--threads must be >= 0";
  if (f.n_ctx < 0) return "--ctx-size must be >= 0";
  sched.n_threads = f.threads;
  sched.n_ctx = f.n_ctx;
  sched.cache_type = f.cache_type;
  return to_memory_options(f.memory, mem);
}

}  // namespace k3::cli
