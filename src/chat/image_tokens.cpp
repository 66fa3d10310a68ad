// chat/image_tokens: see image_tokens.h.
#include "chat/image_tokens.h"

#include "core/error.h"
#include "core/hash64.h"
#include "text/tokenizer.h"

namespace k3::chat {

int32_t image_key_token(uint64_t hash, int64_t row) {
  const uint64_t words[2] = {hash, static_cast<uint64_t>(row)};
  const uint64_t h = hash64(words, sizeof words, 0x4b33494d47ull);  // "K3IMG"
  return -1 - static_cast<int32_t>(h & 0x3fffffffu);
}

size_t append_image(std::vector<int32_t>& ids, const text::Tokenizer& tok, const ImageSlot& img) {
  const int32_t begin = tok.find("<|media_begin|>"), end = tok.find("<|media_end|>");
  if (begin < 0 || end < 0)
    fail("the model's vocabulary has no <|media_begin|>/<|media_end|> tokens: it cannot take images");
  ids.push_back(begin);
  const size_t first = ids.size();
  for (int64_t r = 0; r < img.n_tokens; ++r) ids.push_back(image_key_token(img.hash, r));
  ids.push_back(end);
  return first;
}

}  // namespace k3::chat
