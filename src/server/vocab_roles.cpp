// server/vocab_roles: see vocab_roles.h.
#include "server/vocab_roles.h"

#include "core/error.h"

namespace k3::server {

VocabRoles VocabRoles::of(const text::Tokenizer& tok) {
  VocabRoles r;
  auto need = [&](const char* name) {
    int32_t id = tok.find(name);
    if (id < 0 || !tok.is_control(id))
      fail("the model's vocabulary has no control token {}: it cannot serve K3 chat", name);
    return id;
  };
  r.open = need("<|open|>");
  r.close = need("<|close|>");
  r.sep = need("<|sep|>");
  r.end_of_msg = tok.find("<|end_of_msg|>");
  return r;
}

text::TokenKind VocabRoles::kind(const text::Tokenizer& tok, int32_t id) const {
  using K = text::TokenKind;
  if (id == open) return K::Open;
  if (id == close) return K::Close;
  if (id == sep) return K::Sep;
  if (id == end_of_msg || tok.is_eog(id)) return K::Eog;
  if (tok.is_control(id)) return K::OtherControl;
  return K::Text;
}

int32_t VocabRoles::end_token(const text::Tokenizer& tok) const {
  if (end_of_msg >= 0) return end_of_msg;
  if (!tok.eog_ids().empty()) return tok.eog_ids().front();
  return tok.eos();
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

}  // namespace k3::server
