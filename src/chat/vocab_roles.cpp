// chat/vocab_roles: see vocab_roles.h.
#include "chat/vocab_roles.h"

#include <utility>

#include "core/error.h"

namespace k3::chat {

VocabRoles VocabRoles::of(const text::Tokenizer& tok) {
  VocabRoles r;
  auto control = [&](const char* name) {
    int32_t id = tok.find(name);
    return id >= 0 && tok.is_control(id) ? id : -1;
  };
  r.open = control("<|open|>");
  r.close = control("<|close|>");
  r.sep = control("<|sep|>");
  r.end_of_msg = tok.find("<|end_of_msg|>");
  r.eos = tok.eos();
  return r;
}

VocabRoles VocabRoles::without_vocab(int32_t eos) {
  VocabRoles r;
  r.eos = eos;
  return r;
}

void VocabRoles::require_chat() const {
  for (auto [id, name] :
       {std::pair{open, "<|open|>"}, std::pair{close, "<|close|>"}, std::pair{sep, "<|sep|>"}})
    if (id < 0) fail("the model's vocabulary has no control token {}: it cannot serve K3 chat", name);
}

text::TokenKind VocabRoles::kind(const text::Tokenizer* tok, int32_t id) const {
  using K = text::TokenKind;
  if (!tok) return id == eos ? K::Eog : K::Text;
  if (id < 0) return K::OtherControl;  // never a marker: -1 stands for a missing one
  if (id == open) return K::Open;
  if (id == close) return K::Close;
  if (id == sep) return K::Sep;
  if (id == end_of_msg || tok->is_eog(id)) return K::Eog;
  if (tok->is_control(id)) return K::OtherControl;
  return K::Text;
}

int32_t VocabRoles::end_token(const text::Tokenizer* tok) const {
  if (!tok) return eos;
  if (end_of_msg >= 0) return end_of_msg;
  if (!tok->eog_ids().empty()) return tok->eog_ids().front();
  return tok->eos();
}

std::vector<int32_t> tokenize_segments(const text::Tokenizer& tok,
                                       const std::vector<text::ChatSegment>& segs) {
  std::vector<int32_t> ids;
  for (const text::ChatSegment& s : segs) {
    if (s.special) {
      int32_t id = tok.find(s.text);
      if (id < 0) fail("the model's vocabulary has no token {}", s.text);
      ids.push_back(id);
    } else {
      tok.encode_ordinary(s.text, ids);
    }
  }
  return ids;
}

}  // namespace k3::chat
