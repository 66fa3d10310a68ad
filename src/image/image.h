// image/image: still images in (PNG, JPEG, WebP, GIF), out as 8-bit RGB for the vision tower.
// Contract: decode(bytes, limits) picks the format by the file's first bytes (never by a name,
// an extension or a declared media type) and returns width x height pixels, row-major, three
// bytes (R, G, B) each. Alpha is dropped (the colour channels as stored, not composited),
// 16-bit samples keep their high byte, palettes and grey are expanded, interlaced and
// progressive files decode whole, CMYK/YCCK JPEGs are converted as Adobe writes them (inverted),
// animations (GIF, WebP) give their first frame, and EXIF orientation is not applied: the
// pixels of llama.cpp's mtmd loader (stb_image asked for 3 channels), docs/vision.md.
// Every failure is a k3::Error whose message starts "image: " and names the format and what is
// wrong: too many bytes, a side or pixel count over `limits` (checked from the header before
// any pixel memory is allocated), truncation or corruption with the library's own message, an
// unknown format with the supported ones listed. The decoders' own warnings are never printed.
// Thread-safe: calls share no state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace k3::image {

// What a decode accepts (docs/vision.md, "Images in: formats and limits", says why these).
struct Limits {
  size_t max_bytes = size_t{20} << 20;  // the encoded file: OpenAI's per-image limit
  uint32_t max_side = 16384;            // width and height each
  uint64_t max_pixels = 50'000'000;     // width x height: 150 MB of RGB at most
};

struct Rgb8Image {
  uint32_t width = 0, height = 0;
  std::vector<uint8_t> rgb;  // row-major, 3 bytes per pixel: width * height * 3 bytes
};

enum class Format { unknown, png, jpeg, webp, gif };

// The format the bytes start like (magic numbers only; nothing is validated).
Format sniff(std::span<const uint8_t> bytes);
// "PNG", "JPEG", "WebP", "GIF" or "unknown".
std::string_view format_name(Format format);

Rgb8Image decode(std::span<const uint8_t> bytes, const Limits& limits = {});
// Reads `path` (refused from its size, before reading, when over limits.max_bytes) and decodes
// it; errors are led by the path ("photo.png: image: PNG truncated or corrupt: ...").
Rgb8Image decode_file(const std::string& path, const Limits& limits = {});

// A 64-bit hash of the decoded image (width, height and every pixel; core/hash64.h), the same
// on every run and machine: two files that decode to the same pixels share it, so the prompt
// cache can key an image's embedding by what the tower sees rather than by its encoding.
uint64_t content_hash(const Rgb8Image& image);

}  // namespace k3::image
