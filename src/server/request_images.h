// server/request_images: the images of a chat request, in the order the chat template renders
// their parts (messages in order, parts in order): each `image_url` (or `image`) part's data URL
// decoded within the server's image limits and embedded by the vision tower (through the
// server's embedding cache, so a conversation that resends a picture runs the tower once).
// Contract: returns nothing for a request without image parts. Every client mistake is an
// ApiError 400 naming the part (messages[i].content[j]): images sent to a server without a
// tower (--mmproj), a remote http(s) URL (only data: URLs are accepted), a bad data URL, bytes
// that do not decode as PNG, JPEG, WebP or GIF, or an image over the limits, and more images
// than RequestLimits::max_images.
#pragma once

#include <memory>
#include <vector>

#include "chat/image_tokens.h"
#include "text/json_py.h"
#include "vision/encode.h"

namespace k3::text {
class Tokenizer;
}

namespace k3::server {

struct Job;
struct RequestLimits;

struct RequestImages {
  std::vector<chat::ImageSlot> slots;  // per image: tokens and content hash
  std::vector<std::shared_ptr<const vision::ImageEmbedding>> rows;
};

RequestImages collect_images(const text::Json& req, const RequestLimits& lim);

// Whether any message of the request has an image part.
bool has_image_parts(const text::Json& req);

// The images' rows into job.images at the positions the prompt gave them (image_at).
void attach_images(Job& job, const std::vector<size_t>& image_at, const RequestImages& images,
                   const text::Tokenizer& tok);

}  // namespace k3::server
