// cli/image_input: the images a user names on the command line (--image FILE, /image PATH),
// read and decoded within the limits of image/image.h, and the tower they go through
// (--mmproj FILE). Errors are k3::Error naming the file and what is wrong with it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "vision/preprocess.h"
#include "vision/tower.h"

namespace k3::text {
class Tokenizer;
}
namespace k3::vision {
class EmbeddingCache;
}
namespace k3::server {
struct Job;
}

namespace k3::cli {

vision::RgbImage load_image(const std::string& path);

// Opens the tower and checks that it projects into the text model's embedding width
// (text_n_embd 0: no text model to check against).
std::unique_ptr<vision::Tower> open_tower(const std::string& path, int64_t text_n_embd);

// The tower of a chat command (serve, chat, run): opened, checked against the text model's
// width and its vocabulary's media tokens (<|media_begin|>, <|media_end|>, <|media_pad|>), and
// wrapped in an embedding cache of cache_bytes run on n_threads (0: the machine default).
std::shared_ptr<vision::EmbeddingCache> open_vision(const std::string& path, int64_t text_n_embd,
                                                    const text::Tokenizer* tok, size_t cache_bytes,
                                                    int n_threads);

// The tower a chat command uses: --mmproj FILE when given; else, for the embedded model, the
// tower embedded beside it (unless --no-mmproj); else none (null).
struct VisionChoice {
  std::string mmproj;  // --mmproj
  bool none = false;   // --no-mmproj
  bool embedded_model = false;
};
std::shared_ptr<vision::EmbeddingCache> choose_vision(const VisionChoice& c, int64_t text_n_embd,
                                                      const text::Tokenizer* tok, size_t cache_bytes,
                                                      int n_threads);

// A raw completion prompt with pictures (k3 run --image): each "<__media__>" in the text (the
// marker llama.cpp's mtmd tools use) becomes the next image, laid out as chat/image_tokens.h
// says; with no marker in the text the images come first. Sets job.prompt and job.images.
// The text is tokenized with special tokens recognised, a BOS added where the vocabulary asks.
void image_prompt(server::Job& job, const text::Tokenizer& tok, vision::EmbeddingCache& vision,
                  const std::string& text, const std::vector<std::string>& paths);

}  // namespace k3::cli
