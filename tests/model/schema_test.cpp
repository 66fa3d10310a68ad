// tests/model/schema_test: the kimi-k3 schema table (model/schema.h) against real files: the
// shipped k3-tiny and the golden models. Every tensor of a file is a kind of the table, in a
// layer of that kind's part, with the table's shape; every kind the loader requires is there;
// every kimi-k3.* key is in the table with its GGUF type, the required ones present; and the
// writers' key list (hparams_kvs) of the loaded hyperparameters gives the file's own values.
#include <gtest/gtest.h>

#include <set>

#include "gguf/file.h"
#include "model/hparams.h"
#include "model/schema.h"

namespace k3::test {
namespace {

namespace schema = model::schema;
using schema::Part;
using schema::When;

std::vector<std::string> model_files() {
  std::vector<std::string> files = {std::string(K3_MODELS_DIR) + "/k3-tiny/k3-tiny-F16.gguf"};
  for (const char* g : {"tiny10-base", "tiny10-softplus", "small-k3mix", "small-mxfp4"})
    files.push_back(std::string(K3_TEST_DATA_DIR) + "/golden/" + g + ".gguf");
  return files;
}

// The layer of "blk.N.rest" and its rest, or nullopt for a file-wide name.
std::optional<std::pair<uint32_t, std::string>> split_layer(const std::string& name) {
  if (!name.starts_with("blk.")) return std::nullopt;
  const size_t dot = name.find('.', 4);
  return std::make_pair(static_cast<uint32_t>(std::stoul(name.substr(4, dot - 4))), name.substr(dot + 1));
}

bool same_shape(const gguf::TensorInfo& t, const std::vector<int64_t>& want) {
  for (size_t i = 0; i < gguf::kMaxDims; ++i)
    if (t.dim(i) != (i < want.size() ? want[i] : 1)) return false;
  return true;
}

// Whether the loader needs a kind in layer il (Optional and Ignored kinds never are).
bool required_in(const schema::TensorKind& k, const model::HParams& hp, const gguf::GgufFile& f,
                 uint32_t il) {
  if (k.part != Part::Global && !schema::in_part(k.part, hp, il)) return false;
  const bool q_lora = f.tensor(schema::tensor_name(schema::Tensor::MlaQANorm, il)) != nullptr;
  switch (k.when) {
    case When::Always: return true;
    case When::AttnRes: return hp.attn_res_block_size > 0;
    case When::QLora: return q_lora;
    case When::NoQLora: return !q_lora;
    case When::Latent: return hp.n_embd_exp_latent > 0;
    case When::Optional:
    case When::Ignored: return false;
  }
  return false;
}

class Schema : public ::testing::TestWithParam<std::string> {};

TEST_P(Schema, EveryTensorIsAKindOfTheTableWithItsShape) {
  auto f = gguf::GgufFile::open(GetParam());
  const model::HParams hp = model::load_hparams(*f);
  for (const gguf::TensorInfo& t : f->tensors()) {
    const auto layer = split_layer(t.name);
    int matches = 0;
    for (const schema::TensorKind& k : schema::tensors()) {
      if (layer) {
        if (k.part == Part::Global || k.name != layer->second || !schema::in_part(k.part, hp, layer->first))
          continue;
      } else if (k.part != Part::Global || k.name != t.name) {
        continue;
      }
      ++matches;
      EXPECT_TRUE(same_shape(t, schema::tensor_shape(k.id, hp)))
          << t.name << " has shape " << t.shape_string() << ", the table says otherwise";
    }
    EXPECT_EQ(matches, 1) << t.name << " is not exactly one kind of the table";
  }
}

TEST_P(Schema, EveryRequiredKindIsInTheFile) {
  auto f = gguf::GgufFile::open(GetParam());
  const model::HParams hp = model::load_hparams(*f);
  size_t checked = 0;
  for (const schema::TensorKind& k : schema::tensors()) {
    const uint32_t layers = k.part == Part::Global ? 1 : hp.n_layer;
    for (uint32_t il = 0; il < layers; ++il) {
      if (!required_in(k, hp, *f, il)) continue;
      EXPECT_NE(f->tensor(schema::tensor_name(k.id, il)), nullptr) << schema::tensor_name(k.id, il);
      ++checked;
    }
  }
  EXPECT_GT(checked, 10 * hp.n_layer);
  // Routed experts: the kinds an expert store pages are the MoE's required per-expert stacks.
  for (schema::Tensor t : schema::kExpertTensors) {
    EXPECT_TRUE(schema::tensor_kind(t).per_expert);
    EXPECT_EQ(schema::tensor_kind(t).part, Part::Moe);
  }
}

TEST_P(Schema, EveryKeyIsInTheTableWithItsType) {
  auto f = gguf::GgufFile::open(GetParam());
  std::set<std::string> listed;
  for (const schema::KeyInfo& k : schema::keys()) {
    listed.insert(schema::key_name(k.key));
    const gguf::Value* v = f->find(schema::key_name(k.key));
    if (k.required) { EXPECT_NE(v, nullptr) << schema::key_name(k.key) << " is required"; }
    if (!v) continue;
    switch (k.type) {
      case schema::KeyType::U32: EXPECT_EQ(v->type, gguf::ValueType::UINT32) << k.name; break;
      case schema::KeyType::F32: EXPECT_EQ(v->type, gguf::ValueType::FLOAT32) << k.name; break;
      case schema::KeyType::Bool: EXPECT_EQ(v->type, gguf::ValueType::BOOL) << k.name; break;
      case schema::KeyType::PerLayer:
        EXPECT_TRUE(v->is_array() || v->type == gguf::ValueType::UINT32) << k.name;
        break;
    }
  }
  const std::string prefix = std::string(schema::kArch) + ".";
  for (const auto& [key, value] : f->kvs())
    if (key.starts_with(prefix)) {
      EXPECT_TRUE(listed.count(key)) << key << " is not in the schema's key table";
    }
}

TEST_P(Schema, TheWrittenKeysOfTheLoadedHparamsAreTheFilesValues) {
  auto f = gguf::GgufFile::open(GetParam());
  const model::HParams hp = model::load_hparams(*f);
  for (const auto& [key, value] : schema::hparams_kvs(hp)) {
    const gguf::Value* v = f->find(key);
    if (!v) continue;  // a key the file leaves to its default
    EXPECT_EQ(value.type, v->type) << key;
    if (value.is_array()) {
      ASSERT_EQ(value.size(), v->size()) << key;
      for (size_t i = 0; i < value.size(); ++i) EXPECT_EQ(value.int_at(i), v->int_at(i)) << key;
    } else if (value.type == gguf::ValueType::FLOAT32) {
      EXPECT_EQ(value.as_float(), v->as_float()) << key;
    } else if (value.type == gguf::ValueType::BOOL) {
      EXPECT_EQ(value.as_bool(), v->as_bool()) << key;
    } else {
      EXPECT_EQ(value.as_uint(), v->as_uint()) << key;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Files, Schema, ::testing::ValuesIn(model_files()),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string n = p.param.substr(p.param.rfind('/') + 1);
                           n = n.substr(0, n.size() - 5);
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

TEST(SchemaTable, NamesAndKindsAreConsistent) {
  EXPECT_EQ(schema::key_name(schema::Key::ContextLength), "kimi-k3.context_length");
  EXPECT_EQ(schema::tensor_name(schema::Tensor::MlaKvAMqa, 3), "blk.3.attn_kv_a_mqa.weight");
  EXPECT_EQ(schema::tensor_name(schema::Tensor::TokenEmbd), "token_embd.weight");
  std::set<std::string> keys;
  for (const schema::KeyInfo& k : schema::keys())
    EXPECT_TRUE(keys.insert(std::string(k.name)).second) << k.name;
  // A name appears twice only for two layer kinds that exclude each other (attn_q, attn_output).
  for (const schema::TensorKind& a : schema::tensors())
    for (const schema::TensorKind& b : schema::tensors()) {
      if (&a == &b || a.name != b.name) continue;
      EXPECT_TRUE((a.part == Part::Kda && b.part == Part::Mla) ||
                  (a.part == Part::Mla && b.part == Part::Kda))
          << a.name;
    }
}

}  // namespace
}  // namespace k3::test
