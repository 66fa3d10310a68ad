// text/tokenizer_gguf: reading the tokenizer.ggml.* metadata of a GGUF file.
// Kept apart from the tokenizer core so that code using only Tokenizer::build does not
// pull in the GGUF reader.
#include "core/error.h"
#include "gguf/file.h"
#include "text/tokenizer.h"

namespace k3::text {

VocabData Tokenizer::vocab_from_gguf(const gguf::GgufFile& f) {
  VocabData d;
  d.source = f.path();
  d.model = f.get_string("tokenizer.ggml.model", "");
  if (d.model.empty()) fail("{}: missing key tokenizer.ggml.model (the file has no vocabulary)", f.path());
  d.pre = f.get_string("tokenizer.ggml.pre", "");
  const gguf::Value& tokens = f.get("tokenizer.ggml.tokens");
  if (!tokens.is_array() || tokens.elem != gguf::ValueType::STRING)
    fail("{}: tokenizer.ggml.tokens must be an array of strings", f.path());
  d.tokens = tokens.strs;
  if (const gguf::Value* types = f.find("tokenizer.ggml.token_type")) {
    if (!types->is_array()) fail("{}: tokenizer.ggml.token_type must be an array", f.path());
    d.token_types.reserve(types->size());
    for (size_t i = 0; i < types->size(); ++i)
      d.token_types.push_back(static_cast<int32_t>(types->int_at(i)));
  }
  if (const gguf::Value* merges = f.find("tokenizer.ggml.merges")) {
    if (!merges->is_array() || merges->elem != gguf::ValueType::STRING)
      fail("{}: tokenizer.ggml.merges must be an array of strings", f.path());
    d.merges = merges->strs;
  }
  auto id = [&](const char* key) { return static_cast<TokenId>(f.get_int(key, -1)); };
  d.bos = id("tokenizer.ggml.bos_token_id");
  d.eos = id("tokenizer.ggml.eos_token_id");
  d.eot = id("tokenizer.ggml.eot_token_id");
  d.eom = id("tokenizer.ggml.eom_token_id");
  d.unk = id("tokenizer.ggml.unknown_token_id");
  d.pad = id("tokenizer.ggml.padding_token_id");
  d.sep = id("tokenizer.ggml.seperator_token_id");
  if (const gguf::Value* v = f.find("tokenizer.ggml.add_bos_token")) d.add_bos = v->as_bool();
  if (const gguf::Value* v = f.find("tokenizer.ggml.add_eos_token")) d.add_eos = v->as_bool();
  return d;
}

std::shared_ptr<const Tokenizer> Tokenizer::from_gguf(const gguf::GgufFile& f) {
  return build(vocab_from_gguf(f));
}

std::shared_ptr<const Tokenizer> Tokenizer::from_gguf_path(const std::string& path) {
  gguf::OpenOptions opt;
  opt.load_shards = false;  // the vocabulary lives in the first shard
  auto f = gguf::GgufFile::open(path, opt);
  return from_gguf(*f);
}

}  // namespace k3::text
