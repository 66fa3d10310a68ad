// tools/hf_tokenizer: tiktoken.model + tokenizer_config.json → tokenizer.* keys (see
// hf_tokenizer.h).
#include "tools/convert/hf_tokenizer.h"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/log.h"
#include "core/read_file.h"
#include "tools/convert/hf_k3_template.h"
#include "tools/convert/tiktoken.h"

namespace k3::tools {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr uint32_t kReservedSpecials = 256;  // Kimi's num_reserved_special_tokens

// "bos_token": "[BOS]" or {"content": "[BOS]", ...}.
std::optional<std::string> token_content(const json& cfg, const char* key) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  fail("tokenizer_config.json: '{}' is neither a string nor an object with 'content'", key);
}

}  // namespace

HfTokenizerResult hf_tokenizer_kvs(const HfTokenizerInput& in) {
  const fs::path dir(in.dir);
  const fs::path tk = dir / "tiktoken.model";
  std::error_code ec;
  if (!fs::exists(tk, ec))
    fail("{}: no tiktoken.model (the Kimi-K3 tokenizer); a tokenizer.json vocabulary is not supported",
         in.dir);
  std::vector<std::string> ranks = read_tiktoken(tk.string());
  const uint32_t n_base = static_cast<uint32_t>(ranks.size());
  const uint32_t n_vocab = in.vocab_size ? in.vocab_size : n_base + kReservedSpecials;

  json tcfg = json::object();
  const fs::path tcp = dir / "tokenizer_config.json";
  if (fs::exists(tcp, ec)) {
    try {
      tcfg = json::parse(read_file(tcp.string()));
    } catch (const json::exception& e) { fail("{}: does not parse: {}", tcp.string(), e.what()); }
    if (!tcfg.is_object()) fail("{}: not a JSON object", tcp.string());
  } else {
    log::warn("{}: no tokenizer_config.json; special tokens get reserved names", in.dir);
  }

  std::map<uint32_t, std::string> specials;
  if (auto it = tcfg.find("added_tokens_decoder"); it != tcfg.end()) {
    if (!it->is_object()) fail("{}: added_tokens_decoder is not an object", tcp.string());
    for (auto e = it->begin(); e != it->end(); ++e) {
      char* end = nullptr;
      unsigned long id = std::strtoul(e.key().c_str(), &end, 10);
      if (e.key().empty() || *end || id >= (1u << 24))
        fail("{}: added_tokens_decoder key '{}' is not a token id", tcp.string(), e.key());
      if (!e.value().is_object() || !e.value().contains("content") || !e.value()["content"].is_string())
        fail("{}: added_tokens_decoder['{}'] has no string 'content'", tcp.string(), e.key());
      specials[static_cast<uint32_t>(id)] = e.value()["content"].get<std::string>();
    }
  }
  for (uint32_t id = n_base; id < std::min(n_vocab, n_base + kReservedSpecials); ++id)
    if (!specials.count(id)) specials[id] = fmt::format("<|reserved_token_{}|>", id);

  GgufBpeVocab v = gguf_bpe_vocab(ranks, specials, n_vocab);
  std::map<std::string, uint32_t> by_name;
  for (const auto& [id, name] : specials) by_name.emplace(name, id);
  auto id_of = [&](const std::optional<std::string>& content,
                   const char* fallback) -> std::optional<uint32_t> {
    if (content) {
      auto it = by_name.find(*content);
      if (it == by_name.end())
        fail("{}: special token '{}' is not in added_tokens_decoder", tcp.string(), *content);
      return it->second;
    }
    auto it = by_name.find(fallback);
    return it == by_name.end() ? std::nullopt : std::optional<uint32_t>(it->second);
  };

  using gguf::Value;
  HfTokenizerResult r;
  auto& kv = r.kvs;
  kv.emplace_back("tokenizer.ggml.model", Value::string("gpt2"));
  kv.emplace_back("tokenizer.ggml.pre", Value::string("kimi-k2"));
  r.n_tokens = static_cast<uint32_t>(v.tokens.size());
  r.n_merges = static_cast<uint32_t>(v.merges.size());
  kv.emplace_back("tokenizer.ggml.tokens", Value::array_string(std::move(v.tokens)));
  kv.emplace_back("tokenizer.ggml.token_type", Value::array_i32(v.types));
  if (!v.merges.empty()) kv.emplace_back("tokenizer.ggml.merges", Value::array_string(std::move(v.merges)));

  std::optional<uint32_t> bos = id_of(token_content(tcfg, "bos_token"), "[BOS]");
  std::optional<uint32_t> eos = id_of(token_content(tcfg, "eos_token"), "[EOS]");
  // K3 restores the config's eos (<|end_of_msg|>, the end of a turn) over the tokenizer's.
  if (in.config_eos) {
    if (*in.config_eos < 0 || *in.config_eos >= n_vocab)
      fail("config.json: eos_token_id {} is outside the vocabulary (0..{})", *in.config_eos, n_vocab - 1);
    eos = static_cast<uint32_t>(*in.config_eos);
  }
  std::optional<uint32_t> eot = id_of(std::nullopt, "[EOT]");
  std::optional<uint32_t> pad = id_of(token_content(tcfg, "pad_token"), "[PAD]");
  std::optional<uint32_t> unk = id_of(token_content(tcfg, "unk_token"), "[UNK]");
  if (bos) kv.emplace_back("tokenizer.ggml.bos_token_id", Value::u32(*bos));
  if (eos) kv.emplace_back("tokenizer.ggml.eos_token_id", Value::u32(*eos));
  if (eot) kv.emplace_back("tokenizer.ggml.eot_token_id", Value::u32(*eot));
  if (pad) kv.emplace_back("tokenizer.ggml.padding_token_id", Value::u32(*pad));
  if (unk) kv.emplace_back("tokenizer.ggml.unknown_token_id", Value::u32(*unk));
  auto flag = [&](const char* key) {
    auto it = tcfg.find(key);
    if (it == tcfg.end() || it->is_null()) return false;
    if (!it->is_boolean()) fail("{}: '{}' must be true or false", tcp.string(), key);
    return it->get<bool>();
  };
  kv.emplace_back("tokenizer.ggml.add_bos_token", Value::boolean(flag("add_bos_token")));
  kv.emplace_back("tokenizer.ggml.add_eos_token", Value::boolean(flag("add_eos_token")));

  std::string tmpl;
  if (!in.chat_template_file.empty()) {
    tmpl = read_file(in.chat_template_file);
  } else if (auto it = tcfg.find("chat_template"); it != tcfg.end() && !it->is_null()) {
    if (it->is_string()) {
      tmpl = it->get<std::string>();
    } else if (it->is_array()) {
      for (const json& t : *it)
        if (t.is_object() && t.value("name", "") == "default" && t.contains("template") &&
            t["template"].is_string())
          tmpl = t["template"].get<std::string>();
      if (tmpl.empty()) fail("{}: chat_template list has no 'default' entry", tcp.string());
    } else {
      fail("{}: chat_template is neither a string nor a list", tcp.string());
    }
  } else if (fs::exists(dir / "chat_template.jinja", ec)) {
    tmpl = read_file((dir / "chat_template.jinja").string());
  }
  if (tmpl.empty()) {
    // K3 checkpoints ship without one; K3's own template makes the GGUF usable as is by
    // llama.cpp-style tools that render chats from tokenizer.chat_template.
    tmpl = std::string(kimi_k3_chat_template());
    r.builtin_template = true;
    log::info(
        "{}: no chat template (tokenizer_config.json chat_template, chat_template.jinja or --chat-template); "
        "embedding Kimi-K3.jinja (sha256 4578103b...e87806b3)",
        in.dir);
  }
  kv.emplace_back("tokenizer.chat_template", Value::string(std::move(tmpl)));
  r.has_template = true;
  return r;
}

}  // namespace k3::tools
