// tests/image/encoders: see encoders.h. Encoder failures are bugs of the test: they abort.
#include "encoders.h"

#include <gif_lib.h>
#include <png.h>
#include <webp/encode.h>
#include <webp/mux.h>
#include <zlib.h>

#include <cstdio>
// clang-format off: jpeglib.h needs <cstdio> first
#include <jpeglib.h>
// clang-format on

#include <csetjmp>
#include <cstdlib>
#include <cstring>

namespace imgtest {

namespace {

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "test encoder failed: %s\n", what);
  std::abort();
}

void on_png_write(png_structp png, png_bytep data, size_t n) {
  auto* out = static_cast<Bytes*>(png_get_io_ptr(png));
  out->insert(out->end(), data, data + n);
}

int on_gif_write(GifFileType* gif, const GifByteType* data, int n) {
  auto* out = static_cast<Bytes*>(gif->UserData);
  out->insert(out->end(), data, data + n);
  return n;
}

ColorMapObject* gif_map(const std::vector<Rgb>& palette) {
  if (palette.empty()) return nullptr;
  int size = 2;
  while (size < static_cast<int>(palette.size())) size *= 2;
  std::vector<GifColorType> colors(size);
  for (size_t i = 0; i < palette.size(); ++i) colors[i] = {palette[i][0], palette[i][1], palette[i][2]};
  return GifMakeMapObject(size, colors.data());
}

}  // namespace

Bytes noise(uint32_t width, uint32_t height, int channels, uint32_t seed) {
  Bytes out(size_t{width} * height * channels);
  uint32_t s = seed * 2654435761u + 12345;
  for (auto& b : out) {
    s = s * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(s >> 24);
  }
  return out;
}

Bytes gradient(uint32_t width, uint32_t height, int channels) {
  Bytes out(size_t{width} * height * channels);
  for (uint32_t y = 0; y < height; ++y)
    for (uint32_t x = 0; x < width; ++x)
      for (int c = 0; c < channels; ++c) {
        const uint32_t v = c == 0   ? x * 255 / (width > 1 ? width - 1 : 1)
                           : c == 1 ? y * 255 / (height > 1 ? height - 1 : 1)
                                    : (x + y) * 255 / (width + height);
        out[(size_t{y} * width + x) * channels + c] = static_cast<uint8_t>(c == 3 ? 255 - v / 2 : v);
      }
  return out;
}

Bytes encode_png(const PngSpec& spec, std::span<const uint8_t> rows) {
  Bytes out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  if (setjmp(png_jmpbuf(png))) die("libpng");
  png_set_write_fn(png, &out, on_png_write, nullptr);
  png_set_IHDR(png, info, spec.width, spec.height, spec.bit_depth, spec.color_type,
               spec.interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  std::vector<png_color> palette;
  for (const Rgb& c : spec.palette) palette.push_back({c[0], c[1], c[2]});
  if (!palette.empty()) png_set_PLTE(png, info, palette.data(), static_cast<int>(palette.size()));
  std::vector<png_byte> alpha(spec.palette_alpha.begin(), spec.palette_alpha.end());
  if (!alpha.empty()) png_set_tRNS(png, info, alpha.data(), static_cast<int>(alpha.size()), nullptr);
  png_color_16 grey{};
  grey.gray = static_cast<png_uint_16>(spec.trns_grey);
  if (spec.trns_grey >= 0) png_set_tRNS(png, info, nullptr, 0, &grey);
  png_write_info(png, info);
  const int channels[] = {1, 0, 3, 1, 2, 0, 4};
  const size_t row = (size_t{spec.width} * channels[spec.color_type] * spec.bit_depth + 7) / 8;
  if (rows.size() != row * spec.height) die("encode_png: rows of the wrong size");
  std::vector<png_bytep> pointers(spec.height);
  for (uint32_t y = 0; y < spec.height; ++y) pointers[y] = const_cast<png_bytep>(rows.data() + y * row);
  png_write_image(png, pointers.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

Bytes png_signature() { return {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}; }

Bytes png_chunk(std::string_view type, std::span<const uint8_t> data) {
  Bytes out;
  const auto n = static_cast<uint32_t>(data.size());
  for (int i = 3; i >= 0; --i) out.push_back(static_cast<uint8_t>(n >> (8 * i)));
  out.insert(out.end(), type.begin(), type.end());
  out.insert(out.end(), data.begin(), data.end());
  const uint32_t crc = static_cast<uint32_t>(crc32(0, out.data() + 4, static_cast<uInt>(out.size() - 4)));
  for (int i = 3; i >= 0; --i) out.push_back(static_cast<uint8_t>(crc >> (8 * i)));
  return out;
}

Bytes png_ihdr(uint32_t width, uint32_t height, int bit_depth, int color_type) {
  Bytes d;
  for (uint32_t v : {width, height})
    for (int i = 3; i >= 0; --i) d.push_back(static_cast<uint8_t>(v >> (8 * i)));
  d.insert(d.end(), {static_cast<uint8_t>(bit_depth), static_cast<uint8_t>(color_type), 0, 0, 0});
  return png_chunk("IHDR", d);
}

Bytes zlib_compress(std::span<const uint8_t> data) {
  uLongf n = compressBound(static_cast<uLong>(data.size()));
  Bytes out(n);
  if (compress2(out.data(), &n, data.data(), static_cast<uLong>(data.size()), 9) != Z_OK) die("zlib");
  out.resize(n);
  return out;
}

Bytes encode_jpeg(const JpegSpec& spec, std::span<const uint8_t> pixels) {
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &buffer, &size);
  c.image_width = spec.width;
  c.image_height = spec.height;
  c.input_components = spec.components;
  c.in_color_space = spec.components == 1 ? JCS_GRAYSCALE : spec.components == 3 ? JCS_RGB : JCS_CMYK;
  jpeg_set_defaults(&c);
  if (spec.ycck) jpeg_set_colorspace(&c, JCS_YCCK);
  jpeg_set_quality(&c, spec.quality, TRUE);
  if (spec.full_chroma)
    for (int i = 0; i < c.num_components; ++i)
      c.comp_info[i].h_samp_factor = c.comp_info[i].v_samp_factor = 1;
  if (spec.progressive) jpeg_simple_progression(&c);
  std::vector<jpeg_scan_info> scans;
  if (spec.many_scans) {
    scans.push_back({1, {0}, 0, 0, 0, 1});
    scans.push_back({1, {0}, 0, 0, 1, 0});
    for (int k = 1; k < 64; ++k) scans.push_back({1, {0}, k, k, 0, 1});
    for (int k = 1; k < 64; ++k) scans.push_back({1, {0}, k, k, 1, 0});
    c.scan_info = scans.data();
    c.num_scans = static_cast<int>(scans.size());
  }
  c.arith_code = spec.arithmetic ? TRUE : FALSE;
  jpeg_start_compress(&c, TRUE);
  if (!spec.app1.empty())
    jpeg_write_marker(&c, JPEG_APP0 + 1, spec.app1.data(), static_cast<unsigned>(spec.app1.size()));
  const size_t row = size_t{spec.width} * spec.components;
  while (c.next_scanline < c.image_height) {
    JSAMPROW r = const_cast<JSAMPROW>(pixels.data() + c.next_scanline * row);
    jpeg_write_scanlines(&c, &r, 1);
  }
  jpeg_finish_compress(&c);
  Bytes out(buffer, buffer + size);
  jpeg_destroy_compress(&c);
  std::free(buffer);
  return out;
}

Bytes encode_webp(uint32_t width, uint32_t height, int channels, std::span<const uint8_t> pixels,
                  bool lossless, float quality) {
  uint8_t* data = nullptr;
  const int w = static_cast<int>(width), h = static_cast<int>(height), stride = w * channels;
  size_t n = 0;
  if (lossless)
    n = channels == 3 ? WebPEncodeLosslessRGB(pixels.data(), w, h, stride, &data)
                      : WebPEncodeLosslessRGBA(pixels.data(), w, h, stride, &data);
  else
    n = channels == 3 ? WebPEncodeRGB(pixels.data(), w, h, stride, quality, &data)
                      : WebPEncodeRGBA(pixels.data(), w, h, stride, quality, &data);
  if (n == 0) die("libwebp");
  Bytes out(data, data + n);
  WebPFree(data);
  return out;
}

Bytes encode_webp_animation(uint32_t width, uint32_t height, const std::vector<Bytes>& rgba_frames) {
  WebPAnimEncoderOptions options;
  if (!WebPAnimEncoderOptionsInit(&options)) die("libwebpmux");
  WebPAnimEncoder* enc = WebPAnimEncoderNew(static_cast<int>(width), static_cast<int>(height), &options);
  WebPConfig config;
  if (!enc || !WebPConfigInit(&config)) die("libwebpmux");
  config.lossless = 1;
  int timestamp = 0;
  for (const Bytes& frame : rgba_frames) {
    WebPPicture picture;
    WebPPictureInit(&picture);
    picture.use_argb = 1;
    picture.width = static_cast<int>(width);
    picture.height = static_cast<int>(height);
    if (!WebPPictureImportRGBA(&picture, frame.data(), static_cast<int>(width) * 4)) die("libwebp import");
    if (!WebPAnimEncoderAdd(enc, &picture, timestamp, &config)) die("WebPAnimEncoderAdd");
    WebPPictureFree(&picture);
    timestamp += 100;
  }
  WebPAnimEncoderAdd(enc, nullptr, timestamp, nullptr);
  WebPData data;
  WebPDataInit(&data);
  if (!WebPAnimEncoderAssemble(enc, &data)) die("WebPAnimEncoderAssemble");
  Bytes out(data.bytes, data.bytes + data.size);
  WebPDataClear(&data);
  WebPAnimEncoderDelete(enc);
  return out;
}

Bytes encode_gif(const GifSpec& spec) {
  Bytes out;
  int error = 0;
  GifFileType* gif = EGifOpen(&out, on_gif_write, &error);
  if (!gif) die("giflib open");
  EGifSetGifVersion(gif, true);
  ColorMapObject* global = gif_map(spec.global_palette);
  if (EGifPutScreenDesc(gif, spec.width, spec.height, 8, spec.background, global) == GIF_ERROR) die("screen");
  for (const GifFrame& f : spec.frames) {
    if (f.transparent >= 0) {
      const uint8_t gce[4] = {1, 0, 0, static_cast<uint8_t>(f.transparent)};
      if (EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, 4, gce) == GIF_ERROR) die("gce");
    }
    ColorMapObject* local = gif_map(f.local_palette);
    if (EGifPutImageDesc(gif, f.left, f.top, f.width, f.height, f.interlace, local) == GIF_ERROR)
      die("image desc");
    GifFreeMapObject(local);
    std::vector<int> order;
    static constexpr int kStart[4] = {0, 4, 2, 1}, kStep[4] = {8, 8, 4, 2};
    if (f.interlace) {
      for (int pass = 0; pass < 4; ++pass)
        for (int y = kStart[pass]; y < f.height; y += kStep[pass]) order.push_back(y);
    } else {
      for (int y = 0; y < f.height; ++y) order.push_back(y);
    }
    for (int y : order) {
      std::vector<GifPixelType> line(f.indices.begin() + y * f.width, f.indices.begin() + (y + 1) * f.width);
      if (EGifPutLine(gif, line.data(), f.width) == GIF_ERROR) die("line");
    }
  }
  GifFreeMapObject(global);
  if (EGifCloseFile(gif, &error) == GIF_ERROR) die("giflib close");
  return out;
}

uint8_t cmyk_channel(uint8_t c, uint8_t k) {
  const unsigned t = unsigned{c} * k + 128;
  return static_cast<uint8_t>((t + (t >> 8)) >> 8);
}

}  // namespace imgtest
