// tests/image/encoders: images written by the libraries' own encoders (libpng, libjpeg-turbo,
// libwebp and libwebpmux, giflib) for the decoder's tests and the fuzzer's seeds, plus the
// pieces to build hostile PNGs by hand (chunks with their CRCs).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace imgtest {

using Bytes = std::vector<uint8_t>;
using Rgb = std::array<uint8_t, 3>;

// Pixels: noise (for lossless formats) and smooth gradients (for lossy ones), `channels` bytes
// a pixel, the same for the same arguments.
Bytes noise(uint32_t width, uint32_t height, int channels, uint32_t seed);
Bytes gradient(uint32_t width, uint32_t height, int channels);

// PNG. `rows` are in PNG's own layout: width * channels * bit_depth / 8 bytes a row (rounded
// up), 16-bit samples big-endian, palette indices packed at depths below 8.
struct PngSpec {
  uint32_t width = 1, height = 1;
  int color_type = 2;  // PNG_COLOR_TYPE_*: 0 grey, 2 RGB, 3 palette, 4 grey+alpha, 6 RGBA
  int bit_depth = 8;
  bool interlace = false;
  std::vector<Rgb> palette{};
  std::vector<uint8_t> palette_alpha{};  // tRNS for a palette
  int trns_grey = -1;                    // tRNS for grey: the transparent level
};
Bytes encode_png(const PngSpec& spec, std::span<const uint8_t> rows);
Bytes png_chunk(std::string_view type, std::span<const uint8_t> data);
Bytes png_signature();
Bytes png_ihdr(uint32_t width, uint32_t height, int bit_depth, int color_type);
Bytes zlib_compress(std::span<const uint8_t> data);

// JPEG: components 1 (grey), 3 (RGB in, YCbCr in the file) or 4 (CMYK in, CMYK or YCCK in the
// file, with the Adobe marker).
struct JpegSpec {
  uint32_t width = 1, height = 1;
  int components = 3;
  bool ycck = false;
  int quality = 95;
  bool progressive = false;
  bool full_chroma = true;  // 4:4:4; else libjpeg's default 4:2:0
  bool arithmetic = false;
  int many_scans = 0;  // grey only: a progressive script of single-coefficient scans (2 + 2*63)
  Bytes app1{};        // an APP1 payload (EXIF), written after the header
};
Bytes encode_jpeg(const JpegSpec& spec, std::span<const uint8_t> pixels);

// WebP: `pixels` RGB (3 channels) or RGBA (4).
Bytes encode_webp(uint32_t width, uint32_t height, int channels, std::span<const uint8_t> pixels,
                  bool lossless, float quality = 90);
// An animation of RGBA frames, each width x height, lossless.
Bytes encode_webp_animation(uint32_t width, uint32_t height, const std::vector<Bytes>& rgba_frames);

// GIF.
struct GifFrame {
  int left = 0, top = 0, width = 1, height = 1;
  std::vector<uint8_t> indices{};  // width * height, row-major
  std::vector<Rgb> local_palette{};
  int transparent = -1;
  bool interlace = false;
};
struct GifSpec {
  int width = 1, height = 1;
  std::vector<Rgb> global_palette{};
  int background = 0;
  std::vector<GifFrame> frames{};
};
Bytes encode_gif(const GifSpec& spec);

// The colour a CMYK JPEG sample pair decodes to: Adobe's inverted CMYK, c * k / 255 rounded.
uint8_t cmyk_channel(uint8_t c, uint8_t k);

}  // namespace imgtest
