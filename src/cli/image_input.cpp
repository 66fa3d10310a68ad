#include "cli/image_input.h"

#include "core/error.h"
#include "chat/image_tokens.h"
#include "cli/embedded_model.h"
#include "image/image.h"
#include "server/job.h"
#include "server/request_images.h"
#include "text/tokenizer.h"
#include "vision/embedding_cache.h"

namespace k3::cli {

vision::RgbImage load_image(const std::string& path) {
  image::Rgb8Image img = image::decode_file(path);
  vision::RgbImage out;
  out.width = img.width;
  out.height = img.height;
  out.rgb = std::move(img.rgb);
  return out;
}

std::unique_ptr<vision::Tower> open_tower(const std::string& path, int64_t text_n_embd) {
  auto t = vision::Tower::open(path);
  if (text_n_embd > 0 && t->hp().proj_dim != text_n_embd)
    fail(
        "{}: the tower projects to {} features but the text model's embedding is {} wide (an mmproj of "
        "another model?)",
        path, t->hp().proj_dim, text_n_embd);
  return t;
}

namespace {

std::shared_ptr<vision::EmbeddingCache> wrap(std::shared_ptr<const vision::Tower> tower,
                                             const std::string& name, int64_t text_n_embd,
                                             const text::Tokenizer* tok, size_t cache_bytes, int n_threads) {
  if (text_n_embd > 0 && tower->hp().proj_dim != text_n_embd)
    fail(
        "{}: the tower projects to {} features but the text model's embedding is {} wide (an mmproj of "
        "another model?)",
        name, tower->hp().proj_dim, text_n_embd);
  if (!tok) fail("{}: images need a model with a vocabulary (its media tokens)", name);
  for (const char* t : {"<|media_begin|>", "<|media_end|>", "<|media_pad|>"})
    if (tok->find(t) < 0) fail("the model's vocabulary has no {} token: it cannot read images ({})", t, name);
  return std::make_shared<vision::EmbeddingCache>(std::move(tower), cache_bytes, n_threads);
}

}  // namespace

std::shared_ptr<vision::EmbeddingCache> open_vision(const std::string& path, int64_t text_n_embd,
                                                    const text::Tokenizer* tok, size_t cache_bytes,
                                                    int n_threads) {
  return wrap(vision::Tower::open(path), path, text_n_embd, tok, cache_bytes, n_threads);
}

std::shared_ptr<vision::EmbeddingCache> choose_vision(const VisionChoice& c, int64_t text_n_embd,
                                                      const text::Tokenizer* tok, size_t cache_bytes,
                                                      int n_threads) {
  if (!c.mmproj.empty()) {
    if (c.none) fail("--mmproj and --no-mmproj contradict each other");
    return open_vision(c.mmproj, text_n_embd, tok, cache_bytes, n_threads);
  }
  if (c.none || !c.embedded_model || !has_embedded_tower()) return nullptr;
  return wrap(load_embedded_tower(), "the embedded vision tower", text_n_embd, tok, cache_bytes, n_threads);
}

void image_prompt(server::Job& job, const text::Tokenizer& tok, vision::EmbeddingCache& vision,
                  const std::string& text, const std::vector<std::string>& paths) {
  constexpr std::string_view kMarker = "<__media__>";
  std::vector<std::string> pieces;
  size_t from = 0;
  for (size_t at; (at = text.find(kMarker, from)) != std::string::npos; from = at + kMarker.size())
    pieces.push_back(text.substr(from, at - from));
  pieces.push_back(text.substr(from));
  if (pieces.size() == 1) pieces.insert(pieces.begin(), paths.size(), "");  // no marker: images first
  if (pieces.size() != paths.size() + 1)
    fail("the prompt has {} {} markers and {} --image files were given", pieces.size() - 1, kMarker,
         paths.size());
  server::RequestImages images;
  for (const std::string& p : paths) {
    const image::Rgb8Image img = image::decode_file(p);
    auto e = vision.embed({img.width, img.height, img.rgb.data()}, image::content_hash(img));
    images.slots.push_back({e->n_tokens, image::content_hash(img)});
    images.rows.push_back(std::move(e));
  }
  std::vector<size_t> at;
  job.prompt = tok.encode(pieces[0], /*parse_special=*/true, /*add_special=*/true);
  for (size_t i = 0; i < paths.size(); ++i) {
    at.push_back(chat::append_image(job.prompt, tok, images.slots[i]));
    std::vector<int32_t> ids = tok.encode(pieces[i + 1], /*parse_special=*/true, /*add_special=*/false);
    job.prompt.insert(job.prompt.end(), ids.begin(), ids.end());
  }
  server::attach_images(job, at, images, tok);
}

}  // namespace k3::cli
