// image/decode: format sniffing, the limits and the dispatch to the four decoders; see image.h.
#include <cstring>

#include "core/error.h"
#include "core/hash64.h"
#include "core/read_file.h"
#include "image/codecs.h"
#include "image/image.h"

namespace k3::image {

namespace {

constexpr std::string_view kSupported = "supported: PNG, JPEG, WebP, GIF";

bool has_prefix(std::span<const uint8_t> b, size_t at, std::string_view magic) {
  return b.size() >= at + magic.size() && std::memcmp(b.data() + at, magic.data(), magic.size()) == 0;
}

// What a file the decoder does not take looks like, to say so ("" when nothing is recognised).
std::string_view unsupported_kind(std::span<const uint8_t> b) {
  using namespace std::string_view_literals;
  if (has_prefix(b, 4, "ftyp")) {
    if (has_prefix(b, 8, "avif") || has_prefix(b, 8, "avis")) return "AVIF";
    for (auto brand : {"heic"sv, "heix"sv, "hevc"sv, "heim"sv, "heis"sv, "mif1"sv, "msf1"sv})
      if (has_prefix(b, 8, brand)) return "HEIF/HEIC";
    return "an ISO media file (MP4, MOV, HEIF)";
  }
  if (has_prefix(b, 0, "BM")) return "BMP";
  if (has_prefix(b, 0, "II*\0"sv) || has_prefix(b, 0, "MM\0*"sv)) return "TIFF";
  if (has_prefix(b, 0, "\xff\x0a"sv) || has_prefix(b, 0, "\0\0\0\x0cJXL "sv)) return "JPEG XL";
  if (has_prefix(b, 0, "8BPS")) return "PSD";
  if (has_prefix(b, 0, "%PDF")) return "PDF";
  if (has_prefix(b, 0, "qoif")) return "QOI";
  if (has_prefix(b, 0, "\0\0\1\0"sv)) return "ICO";
  if (has_prefix(b, 0, "RIFF") && b.size() >= 12) return "a RIFF file that is not WebP";
  size_t i = 0;
  while (i < b.size() && i < 64 && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n')) ++i;
  if (i < b.size() && b[i] == '<') return "SVG, XML or HTML text";
  return "";
}

[[noreturn]] void fail_unknown(std::span<const uint8_t> b) {
  const std::string_view kind = unsupported_kind(b);
  if (!kind.empty())
    fail("image: {} is not supported ({}; the format is judged by the bytes, not a name or media type)", kind,
         kSupported);
  std::string head;
  for (size_t i = 0; i < b.size() && i < 8; ++i) head += fmt::format("{}{:02x}", i ? " " : "", b[i]);
  fail("image: unknown format (first bytes {}{}); {}", head, b.size() > 8 ? " ..." : "", kSupported);
}

}  // namespace

Format sniff(std::span<const uint8_t> b) {
  using namespace std::string_view_literals;
  if (has_prefix(b, 0, "\x89PNG\r\n\x1a\n"sv)) return Format::png;
  if (has_prefix(b, 0, "\xff\xd8\xff"sv)) return Format::jpeg;
  if (has_prefix(b, 0, "GIF87a") || has_prefix(b, 0, "GIF89a")) return Format::gif;
  if (has_prefix(b, 0, "RIFF") && has_prefix(b, 8, "WEBP")) return Format::webp;
  return Format::unknown;
}

std::string_view format_name(Format format) {
  switch (format) {
    case Format::png: return "PNG";
    case Format::jpeg: return "JPEG";
    case Format::webp: return "WebP";
    case Format::gif: return "GIF";
    case Format::unknown: break;
  }
  return "unknown";
}

Rgb8Image decode(std::span<const uint8_t> bytes, const Limits& limits) {
  if (bytes.empty()) fail("image: empty input (0 bytes)");
  if (bytes.size() > limits.max_bytes)
    fail("image: {} bytes, over the {}-byte limit", bytes.size(), limits.max_bytes);
  switch (sniff(bytes)) {
    case Format::png: return detail::decode_png(bytes, limits);
    case Format::jpeg: return detail::decode_jpeg(bytes, limits);
    case Format::webp: return detail::decode_webp(bytes, limits);
    case Format::gif: return detail::decode_gif(bytes, limits);
    case Format::unknown: break;
  }
  fail_unknown(bytes);
}

Rgb8Image decode_file(const std::string& path, const Limits& limits) {
  const std::string bytes = read_file(path, limits.max_bytes);
  try {
    return decode({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, limits);
  } catch (const Error& e) { fail("{}: {}", path, e.what()); }
}

uint64_t content_hash(const Rgb8Image& image) {
  uint8_t size[8];
  for (int i = 0; i < 4; ++i) {  // little-endian, so the hash is the same on every machine
    size[i] = static_cast<uint8_t>(image.width >> (8 * i));
    size[4 + i] = static_cast<uint8_t>(image.height >> (8 * i));
  }
  Hash64Stream h;
  h.add(size, sizeof size);
  h.add(image.rgb.data(), image.rgb.size());
  return h.value();
}

namespace detail {

void check_size(std::string_view format, uint64_t width, uint64_t height, const Limits& limits) {
  if (width == 0 || height == 0) fail("image: {} is {}x{}: no pixels", format, width, height);
  if (width > limits.max_side || height > limits.max_side)
    fail("image: {} is {}x{}, over the {}-pixel side limit", format, width, height, limits.max_side);
  if (width * height > limits.max_pixels)
    fail("image: {} is {}x{} ({} pixels), over the {}-pixel limit", format, width, height, width * height,
         limits.max_pixels);
}

Rgb8Image blank_image(uint32_t width, uint32_t height) {
  Rgb8Image image;
  image.width = width;
  image.height = height;
  image.rgb.resize(static_cast<size_t>(width) * height * 3);
  return image;
}

}  // namespace detail

}  // namespace k3::image
