// image/codecs: the four decoders behind image::decode (internal to src/image/).
// Contract: decode_<format>(bytes, limits) is called with bytes that sniff() gave that format
// and that are within limits.max_bytes. Each reads the image's size from its header, passes it
// to check_size before allocating any pixel memory, and returns a width x height RGB image or
// throws k3::Error ("image: <FORMAT> ..."). No decoder prints anything.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "image/image.h"

namespace k3::image::detail {

// Refuses a zero, over-long or over-large size, naming the format: "image: PNG is 100000x1, over
// the 16384-pixel side limit".
void check_size(std::string_view format, uint64_t width, uint64_t height, const Limits& limits);
// A zero-filled image of that size (check_size first).
Rgb8Image blank_image(uint32_t width, uint32_t height);

Rgb8Image decode_png(std::span<const uint8_t> bytes, const Limits& limits);
Rgb8Image decode_jpeg(std::span<const uint8_t> bytes, const Limits& limits);
Rgb8Image decode_webp(std::span<const uint8_t> bytes, const Limits& limits);
Rgb8Image decode_gif(std::span<const uint8_t> bytes, const Limits& limits);

}  // namespace k3::image::detail
