// chat/image_tokens: how an image occupies a prompt (docs/vision.md, "The prompt"): the control
// token <|media_begin|>, one position per image token, then <|media_end|> (the layout of the
// reference's mtmd for kimik3). The image's positions hold *key tokens*: negative ids made from
// the image's content hash and the row index. A prompt cache that compares token lists then
// compares images by what the tower sees, so a conversation with an image reuses its prefix and
// two different images never match; the scheduler feeds each such position the image's row in
// place of a token (server/job.h: Job::images).
// Contract: image_key_token(h, r) < 0 for every h and r, and a pure function of them;
// append_image appends the layout to ids (throws k3::Error when the vocabulary lacks the
// media tokens) and returns the index of the image's first row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace k3::text {
class Tokenizer;
}

namespace k3::chat {

struct ImageSlot {
  int64_t n_tokens = 0;  // rows the tower gives this image
  uint64_t hash = 0;     // content hash of the decoded pixels (image::content_hash)
};

int32_t image_key_token(uint64_t hash, int64_t row);

size_t append_image(std::vector<int32_t>& ids, const text::Tokenizer& tok, const ImageSlot& img);

}  // namespace k3::chat
