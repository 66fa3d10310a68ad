// server/request_images: see request_images.h.
#include "server/request_images.h"

#include <fmt/format.h>

#include <semaphore>

#include "core/error.h"
#include "image/data_url.h"
#include "image/image.h"
#include "server/api_error.h"
#include "server/job.h"
#include "text/tokenizer.h"
#include "server/request_parse.h"
#include "vision/embedding_cache.h"

namespace k3::server {

namespace {

using text::Json;

bool is_image_part(const Json& part) {
  if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) return false;
  const std::string& t = part["type"].get_ref<const std::string&>();
  return t == "image_url" || t == "image";
}

// The URL of an image part: image_url as {"url": …} or a string; for type "image" also "image".
const Json& part_url(const Json& part) {
  static const Json kNull;
  for (const char* key : {"image_url", "image"}) {
    if (!part.contains(key)) continue;
    const Json& v = part[key];
    if (v.is_object() && v.contains("url")) return v["url"];
    return v;
  }
  return kNull;
}

// Concurrent image decodes in this process.
std::counting_semaphore<64> g_decodes(2);
struct DecodeTurn {
  DecodeTurn() { g_decodes.acquire(); }
  ~DecodeTurn() { g_decodes.release(); }
  DecodeTurn(const DecodeTurn&) = delete;
  DecodeTurn& operator=(const DecodeTurn&) = delete;
};

[[noreturn]] void bad(const std::string& at, const std::string& msg) {
  throw ApiError(400, "invalid_request_error", msg, at);
}

}  // namespace

bool has_image_parts(const Json& req) {
  if (!req.contains("messages") || !req["messages"].is_array()) return false;
  for (const Json& m : req["messages"]) {
    if (!m.is_object() || !m.contains("content") || !m["content"].is_array()) continue;
    for (const Json& part : m["content"])
      if (is_image_part(part)) return true;
  }
  return false;
}

RequestImages collect_images(const Json& req, const RequestLimits& lim) {
  RequestImages out;
  if (!has_image_parts(req)) return out;
  const Json& msgs = req["messages"];
  for (size_t i = 0; i < msgs.size(); ++i) {
    const Json& m = msgs[i];
    if (!m.is_object() || !m.contains("content") || !m["content"].is_array()) continue;
    const Json& parts = m["content"];
    for (size_t j = 0; j < parts.size(); ++j) {
      if (!is_image_part(parts[j])) continue;
      const std::string at = fmt::format("messages[{}].content[{}]", i, j);
      if (!lim.vision)
        bad(at,
            fmt::format("{}: this model does not see images: start k3 serve with --mmproj FILE (its vision "
                        "tower) to send them",
                        at));
      if (out.slots.size() >= lim.max_images)
        bad(at, fmt::format("{}: at most {} images per request", at, lim.max_images));
      const Json& url = part_url(parts[j]);
      if (!url.is_string()) bad(at, fmt::format("{}: image_url.url must be a string (a data: URL)", at));
      try {
        const std::string& u = url.get_ref<const std::string&>();
        // A decode may hold up to the limits' worth of pixels (~0.5 GiB for a 50-Mpixel
        // animated WebP) before it refuses: a few at a time, whatever the number of clients.
        DecodeTurn turn;
        const image::Rgb8Image img =
            lim.allow_file_urls && u.starts_with("file://")
                ? image::decode_file(u.substr(7), lim.image_limits)
                : image::decode(image::parse_data_url(u, lim.image_limits.max_bytes).bytes, lim.image_limits);
        const uint64_t hash = image::content_hash(img);
        const vision::RgbView view{img.width, img.height, img.rgb.data()};
        auto e = lim.vision->embed(view, hash);
        out.slots.push_back({e->n_tokens, hash});
        out.rows.push_back(std::move(e));
      } catch (const k3::Error& e) { bad(at, fmt::format("{}: {}", at, e.what())); }
    }
  }
  return out;
}

void attach_images(Job& job, const std::vector<size_t>& image_at, const RequestImages& images,
                   const text::Tokenizer& tok) {
  const int32_t pad = tok.find("<|media_pad|>");
  for (size_t i = 0; i < images.rows.size() && i < image_at.size(); ++i) {
    const auto& e = images.rows[i];
    job.images.push_back({image_at[i], e->n_tokens, pad < 0 ? 0 : pad,
                          std::shared_ptr<const std::vector<float>>(e, &e->data)});
  }
}

}  // namespace k3::server
