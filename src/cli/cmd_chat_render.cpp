// cli/cmd_chat_render: `k3 chat-render [-m MODEL] INPUT.json [flags]` — prints the exact prompt
// a conversation renders to with Kimi-K3's XTML template (text/chat_template.h), byte for byte,
// with no trailing newline; or, with --segments, the marker/text segments the engine tokenizes.
// A model is optional: it is only read to check that its tokenizer.chat_template is K3's.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include "cli/commands.h"
#include "cli/parse_args.h"
#include "core/error.h"
#include "core/log.h"
#include "core/read_file.h"
#include "gguf/file.h"
#include "text/chat_template.h"

namespace k3::cli {

namespace {

std::string read_input(const std::string& path) {
  if (path == "-") {
    return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  return read_file(path);
}

void check_model_template(const std::string& model_path) {
  gguf::OpenOptions opt;
  opt.load_shards = false;  // metadata lives in the first shard
  auto file = gguf::GgufFile::open(model_path, opt);
  const gguf::Value* v = file->find("tokenizer.chat_template");
  std::optional<std::string_view> tpl;
  if (v) {
    if (v->type != gguf::ValueType::STRING) fail("{}: tokenizer.chat_template is not a string", model_path);
    tpl = v->as_string();
  }
  text::TemplateCheck c = text::check_chat_template(tpl);
  switch (c.kind) {
    case text::TemplateKind::K3Exact: log::debug("{}: {}", model_path, c.message); break;
    case text::TemplateKind::Missing: log::info("{}: {}", model_path, c.message); break;
    case text::TemplateKind::K3Variant: log::warn("{}: {}", model_path, c.message); break;
    case text::TemplateKind::Unsupported: fail("{}: {}", model_path, c.message);
  }
}

}  // namespace

int cmd_chat_render(int argc, char** argv) {
  CLI::App app{"Print the exact prompt a conversation renders to with Kimi-K3's chat template.",
               "k3 chat-render"};
  std::string model, input, tools_path, effort, tool_choice;
  bool no_think = false, no_gen = false, jinja = false, segments = false;
  app.add_option("-m,--model", model, "GGUF model whose tokenizer.chat_template is checked (optional)");
  app.add_option("input", input,
                 "messages JSON: an array of messages, or a request object "
                 "{\"messages\":..., \"tools\":..., ...}; - for stdin")
      ->required();
  app.add_option("--tools", tools_path, "OpenAI tools array JSON (overrides the request's tools)");
  app.add_flag("--no-think", no_think, "thinking off: no think blocks, prompt opens the response channel");
  app.add_option("--reasoning-effort", effort,
                 "none|minimal|low|medium|high|xhigh|max (mapped to the template's low/high/max)");
  app.add_option("--tool-choice", tool_choice, "auto|required|none");
  app.add_flag("--no-generation-prompt", no_gen, "do not append the assistant opener");
  app.add_flag("--jinja", jinja, "render exactly as the Jinja template does (no engine-mode departures)");
  app.add_flag("--segments", segments, "print the segments as JSON lines instead of the prompt");
  if (auto rc = parse_args(app, argc, argv)) return *rc;

  if (!model.empty()) check_model_template(model);

  text::Json doc = text::parse_json_exact(read_input(input), input);
  text::ChatTemplateInput in;
  if (doc.is_array()) {
    in.messages = doc;
    in.vars["add_generation_prompt"] = true;
  } else if (doc.is_object()) {
    in = text::chat_input_from_request(doc, true);
  } else {
    fail("{}: expected an array of messages or a request object", input);
  }
  if (!tools_path.empty()) {
    text::Json t = text::parse_json_exact(read_input(tools_path), tools_path);
    if (t.is_object() && t.contains("tools")) t = t["tools"];
    if (!t.is_array()) fail("{}: expected an array of tools", tools_path);
    in.tools = t;
  }
  if (!effort.empty()) {
    text::ThinkingSetting s = text::map_reasoning_effort(effort);
    in.vars["thinking"] = s.thinking;
    if (s.thinking) in.vars["thinking_effort"] = s.effort;
  }
  if (no_think) in.vars["thinking"] = false;
  if (!tool_choice.empty()) {
    if (tool_choice != "auto" && tool_choice != "required" && tool_choice != "none")
      fail("--tool-choice: '{}' is not one of auto, required, none", tool_choice);
    if (tool_choice == "auto") in.vars.erase("tool_choice");
    else in.vars["tool_choice"] = tool_choice;
  }
  if (no_gen) in.vars["add_generation_prompt"] = false;

  auto segs = text::render_chat_segments(in, jinja ? text::TemplateMode::Jinja : text::TemplateMode::Engine);
  std::string out;
  if (segments) {
    for (const auto& s : segs)
      out += text::py_dumps(text::Json{{"special", s.special}, {"text", s.text}}) + "\n";
  } else {
    out = text::join_segments(segs);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  return 0;
}

}  // namespace k3::cli
