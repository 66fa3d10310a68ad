// image/decode on hostile input: truncated files of every format at many cut points, corrupt
// checksums and entropy data, sizes over the limits (refused from the header, before any pixel
// memory), decompression bombs, unknown and unsupported formats, broken GIF frames, and random
// damage. Each must end in a k3::Error naming the fault (or in correct pixels), never a crash.
#include <chrono>

#include "alloc_probe.h"
#include "encoders.h"
#include "helpers.h"
#include "image/image.h"

namespace img = k3::image;
using namespace imgtest;

namespace {

bool contains(const std::string& s, std::string_view part) { return s.find(part) != std::string::npos; }

#define EXPECT_ERROR_HAS(bytes_, limits_, part_)                 \
  do {                                                           \
    const std::string e_ = decode_error(bytes_, limits_);        \
    EXPECT_TRUE(contains(e_, part_)) << "error: '" << e_ << "'"; \
  } while (0)

Bytes cut(const Bytes& b, size_t n) { return Bytes(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n)); }

// Cut points over the whole file: every byte of the first 64, then about 60 more.
std::vector<size_t> cut_points(size_t size) {
  std::vector<size_t> out;
  for (size_t n = 1; n < size && n < 64; ++n) out.push_back(n);
  for (size_t n = 64; n < size; n += std::max<size_t>(1, size / 60)) out.push_back(n);
  if (size > 1) out.push_back(size - 1);
  return out;
}

Bytes sample_png() { return encode_png({.width = 40, .height = 30}, noise(40, 30, 3, 1)); }
Bytes sample_jpeg() { return encode_jpeg({.width = 48, .height = 32, .quality = 90}, gradient(48, 32, 3)); }
Bytes sample_webp(bool lossless) {
  return encode_webp(40, 30, 3, lossless ? noise(40, 30, 3, 2) : gradient(40, 30, 3), lossless);
}
Bytes sample_gif() {
  Bytes idx = noise(30, 20, 1, 3);
  for (auto& i : idx) i %= 4;
  return encode_gif({.width = 30,
                     .height = 20,
                     .global_palette = {{0, 0, 0}, {1, 1, 1}, {2, 2, 2}, {3, 3, 3}},
                     .frames = {{.width = 30, .height = 20, .indices = idx}}});
}

// A PNG by hand: signature, IHDR, one IDAT holding `raw` compressed, IEND.
Bytes handmade_png(uint32_t width, uint32_t height, int depth, int type, const Bytes& raw) {
  Bytes out = png_signature();
  for (const Bytes& chunk :
       {png_ihdr(width, height, depth, type), png_chunk("IDAT", zlib_compress(raw)), png_chunk("IEND", {})})
    out.insert(out.end(), chunk.begin(), chunk.end());
  return out;
}

// Offset of JPEG marker `m` (0xFF m), or 0.
size_t jpeg_marker(const Bytes& b, uint8_t m) {
  for (size_t i = 2; i + 1 < b.size(); ++i)
    if (b[i] == 0xff && b[i + 1] == m) return i;
  return 0;
}

}  // namespace

TEST(ImageHostile, EmptyAndOverSize) {
  EXPECT_ERROR_HAS(Bytes{}, img::Limits{}, "image: empty input");
  const Bytes png = sample_png();
  EXPECT_ERROR_HAS(png, img::Limits{.max_bytes = 100}, "over the 100-byte limit");
}

TEST(ImageHostile, UnknownAndUnsupportedFormats) {
  EXPECT_ERROR_HAS(noise(100, 1, 1, 9), img::Limits{}, "unknown format (first bytes");
  EXPECT_ERROR_HAS(noise(100, 1, 1, 9), img::Limits{}, "supported: PNG, JPEG, WebP, GIF");
  const std::string svg = "<?xml version=\"1.0\"?><svg xmlns=\"http://www.w3.org/2000/svg\"/>";
  EXPECT_ERROR_HAS(Bytes(svg.begin(), svg.end()), img::Limits{}, "SVG, XML or HTML text is not supported");
  EXPECT_ERROR_HAS((Bytes{'B', 'M', 0x3a, 0, 0, 0, 0, 0}), img::Limits{}, "BMP is not supported");
  EXPECT_ERROR_HAS((Bytes{0, 0, 0, 0x1c, 'f', 't', 'y', 'p', 'a', 'v', 'i', 'f'}), img::Limits{},
                   "AVIF is not supported");
  EXPECT_ERROR_HAS((Bytes{0, 0, 0, 0x18, 'f', 't', 'y', 'p', 'h', 'e', 'i', 'c'}), img::Limits{},
                   "HEIF/HEIC");
  EXPECT_ERROR_HAS((Bytes{'I', 'I', '*', 0, 8, 0, 0, 0}), img::Limits{}, "TIFF is not supported");
  EXPECT_ERROR_HAS((Bytes{'R', 'I', 'F', 'F', 4, 0, 0, 0, 'W', 'A', 'V', 'E'}), img::Limits{},
                   "RIFF file that is not WebP");
  EXPECT_ERROR_HAS((Bytes{0x89, 'P', 'N'}), img::Limits{}, "unknown format");  // a cut signature
}

TEST(ImageHostile, TruncatedAtEveryCutPoint) {
  struct Case {
    const char* name;
    Bytes bytes;
    const char* error;
  };
  const Case cases[] = {{"PNG", sample_png(), "image: PNG truncated or corrupt"},
                        {"JPEG", sample_jpeg(), "image: JPEG truncated or corrupt"},
                        {"WebP lossy", sample_webp(false), "image: WebP truncated or corrupt"},
                        {"WebP lossless", sample_webp(true), "image: WebP truncated or corrupt"},
                        {"GIF", sample_gif(), "image: GIF truncated or corrupt"}};
  for (const Case& c : cases) {
    ASSERT_EQ(decode_error(c.bytes), "") << c.name;
    const size_t magic = c.name[0] == 'W' ? 12 : c.name[0] == 'P' ? 8 : c.name[0] == 'G' ? 6 : 3;
    for (size_t n : cut_points(c.bytes.size())) {
      const std::string e = decode_error(cut(c.bytes, n));
      // Below the magic bytes a file is not recognised at all; a GIF cut after its last pixel
      // (only the trailer lost) is whole.
      if (n < magic) {
        EXPECT_TRUE(contains(e, "unknown format")) << c.name << " cut at " << n << ": " << e;
      } else if (!(c.name[0] == 'G' && n == c.bytes.size() - 1 && e.empty())) {
        EXPECT_TRUE(contains(e, c.error) || contains(e, "image: " + std::string(c.name).substr(0, 4)))
            << c.name << " cut at " << n << " of " << c.bytes.size() << ": '" << e << "'";
      }
    }
  }
}

TEST(ImageHostile, PngCorruptCrcAndData) {
  Bytes png = sample_png();
  // IHDR's CRC
  Bytes bad = png;
  bad[29] ^= 0xff;
  EXPECT_ERROR_HAS(bad, img::Limits{}, "image: PNG truncated or corrupt: IHDR chunk at offset 8: CRC error");
  // the IDAT's last CRC byte (just before IEND's 12 bytes), and a byte of its data
  bad = png;
  bad[bad.size() - 13] ^= 0x01;
  EXPECT_ERROR_HAS(bad, img::Limits{}, "IDAT chunk at offset 33: CRC error");
  bad = png;
  bad[60] ^= 0x01;
  EXPECT_ERROR_HAS(bad, img::Limits{}, "IDAT chunk at offset 33: CRC error");
  // an ancillary chunk's CRC is not checked (it is skipped unread, as libpng would drop it)
  Bytes text = png;
  Bytes chunk = png_chunk("tEXt", Bytes{'a', 0, 'b'});
  chunk.back() ^= 1;
  text.insert(text.begin() + 33, chunk.begin(), chunk.end());
  EXPECT_EQ(decode_error(text), "");
  // IEND missing, or a chunk running past the end
  bad = cut(png, png.size() - 12);
  EXPECT_ERROR_HAS(bad, img::Limits{}, "before IEND");
  bad = cut(png, png.size() - 14);
  EXPECT_ERROR_HAS(bad, img::Limits{}, "runs past the end");
  // a byte of the deflate stream (the chunk's CRC fixed up, so zlib must see it)
  const Bytes raw(30 * (1 + 40 * 3), 7);
  Bytes z = zlib_compress(raw);
  z[z.size() / 2] ^= 0x55;
  Bytes hand = png_signature();
  for (const Bytes& chunk : {png_ihdr(40, 30, 8, 2), png_chunk("IDAT", z), png_chunk("IEND", {})})
    hand.insert(hand.end(), chunk.begin(), chunk.end());
  EXPECT_ERROR_HAS(hand, img::Limits{}, "image: PNG truncated or corrupt");
  // sound chunks around a deflate stream that holds 10 of 30 rows, or is cut in half
  const Bytes rows10(10 * (1 + 40 * 3), 0);  // libpng itself says nothing here
  EXPECT_ERROR_HAS(handmade_png(40, 30, 8, 2, rows10), img::Limits{},
                   "image: PNG truncated or corrupt: the image data ends early (at row 9 of pass 0)");
  Bytes rows30 = noise(30 * 121, 1, 1, 5);
  for (size_t y = 0; y < 30; ++y) rows30[y * 121] = 0;  // filter type 0 on every row
  Bytes half = zlib_compress(rows30);
  half.resize(half.size() / 2);
  Bytes cut_stream = png_signature();
  for (const Bytes& chunk : {png_ihdr(40, 30, 8, 2), png_chunk("IDAT", half), png_chunk("IEND", {})})
    cut_stream.insert(cut_stream.end(), chunk.begin(), chunk.end());
  EXPECT_ERROR_HAS(cut_stream, img::Limits{}, "image: PNG truncated or corrupt: Not enough compressed data");
  // no IHDR first
  Bytes no_ihdr = png_signature();
  const Bytes iend = png_chunk("IEND", {});
  no_ihdr.insert(no_ihdr.end(), iend.begin(), iend.end());
  no_ihdr.resize(40, 0);
  EXPECT_ERROR_HAS(no_ihdr, img::Limits{}, "no IHDR chunk");
}

TEST(ImageHostile, SizesOverTheLimitsAreRefusedFromTheHeader) {
  // A PNG declaring 100000x100000 (30 GB of RGB): refused from its header, before anything as
  // large as a row of pixels is allocated.
  const Bytes huge = handmade_png(100000, 100000, 8, 2, Bytes(1000, 0));
  reset_largest_allocation();
  EXPECT_ERROR_HAS(huge, img::Limits{}, "image: PNG is 100000x100000, over the 16384-pixel side limit");
  EXPECT_LT(largest_allocation(), 100000u);
  const Bytes wide = handmade_png(16385, 1, 8, 0, Bytes(16386, 0));
  EXPECT_ERROR_HAS(wide, img::Limits{}, "PNG is 16385x1, over the 16384-pixel side limit");
  // at the side limit exactly: fine; one more: refused; pixel count separately
  const img::Limits small{.max_side = 64, .max_pixels = 64 * 32};
  EXPECT_EQ(decode_error(encode_png({.width = 64, .height = 32}, noise(64, 32, 3, 4)), small), "");
  EXPECT_ERROR_HAS(encode_png({.width = 65, .height = 2}, noise(65, 2, 3, 4)), small,
                   "PNG is 65x2, over the 64-pixel side limit");
  EXPECT_ERROR_HAS(encode_png({.width = 64, .height = 33}, noise(64, 33, 3, 4)), small,
                   "PNG is 64x33 (2112 pixels), over the 2048-pixel limit");
  EXPECT_ERROR_HAS(encode_jpeg({.width = 65, .height = 8}, gradient(65, 8, 3)), small,
                   "JPEG is 65x8, over the 64-pixel side limit");
  EXPECT_ERROR_HAS(encode_webp(65, 8, 3, gradient(65, 8, 3), true), small,
                   "WebP is 65x8, over the 64-pixel side limit");
  EXPECT_ERROR_HAS(encode_gif({.width = 65,
                               .height = 1,
                               .global_palette = {{0, 0, 0}, {1, 1, 1}},
                               .frames = {{.width = 1, .height = 1, .indices = {1}}}}),
                   small, "GIF is 65x1, over the 64-pixel side limit");
  // a JPEG whose SOF says 60000x60000
  Bytes jpeg = sample_jpeg();
  const size_t sof = jpeg_marker(jpeg, 0xc0);
  ASSERT_GT(sof, 0u);
  jpeg[sof + 5] = jpeg[sof + 7] = 0xea, jpeg[sof + 6] = jpeg[sof + 8] = 0x60;
  reset_largest_allocation();
  EXPECT_ERROR_HAS(jpeg, img::Limits{}, "image: JPEG is 60000x60000, over the 16384-pixel side limit");
  EXPECT_LT(largest_allocation(), 100000u);
}

TEST(ImageHostile, ZeroSizes) {
  EXPECT_ERROR_HAS(handmade_png(0, 5, 8, 2, Bytes(5, 0)), img::Limits{}, "PNG is 0x5: no pixels");
  Bytes gif = sample_gif();
  gif[6] = gif[7] = 0;  // screen width 0
  EXPECT_ERROR_HAS(gif, img::Limits{}, "GIF is 0x20: no pixels");
}

TEST(ImageHostile, DecompressionBombs) {
  // A tiny PNG declaring 7000x7000 (147 MB of RGB): more image data than its bytes can hold.
  const Bytes tiny = handmade_png(7000, 7000, 8, 2, Bytes(100, 0));
  reset_largest_allocation();
  EXPECT_ERROR_HAS(tiny, img::Limits{}, "decompression bomb");
  EXPECT_LT(largest_allocation(), 100000u);
  // A zlib bomb within the size: 4000x4000 grey from 16 MB of zeros in ~16 KB. Legal, so it
  // decodes, and the memory it takes is the image's own (checked above against the limits).
  const Bytes zeros(size_t{4000} * 4001, 0);
  const Bytes bomb = handmade_png(4000, 4000, 8, 0, zeros);
  EXPECT_LT(bomb.size(), 20000u);
  const auto im = img::decode(bomb);
  EXPECT_EQ(im.width, 4000u);
  EXPECT_EQ(im.rgb.size(), size_t{4000} * 4000 * 3);
  // ... and refused when the limits say so, before inflating anything
  reset_largest_allocation();
  EXPECT_ERROR_HAS(bomb, img::Limits{.max_pixels = 1'000'000}, "over the 1000000-pixel limit");
  EXPECT_LT(largest_allocation(), 100000u);
  // More compressed data than the image needs (100x100 followed by 100 MB of zeros): the extra
  // is never inflated (libpng's png_read_end would spend a third of a second on it).
  const Bytes extra = handmade_png(100, 100, 8, 0, Bytes(100'000'000, 0));
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(img::decode(extra).width, 100u);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.15);
}

TEST(ImageHostile, JpegCorruptEntropyData) {
  Bytes jpeg = sample_jpeg();
  const size_t sos = jpeg_marker(jpeg, 0xda);
  ASSERT_GT(sos, 0u);
  // All-ones bits (0xFF 0x00 is a stuffed 0xFF), codes no Huffman table has: libjpeg-turbo's
  // fast path decodes them as zeros without a warning, so this may decode; it must not crash.
  for (size_t i = sos + 14; i + 1 < jpeg.size() - 20; i += 2) jpeg[i] = 0xff, jpeg[i + 1] = 0x00;
  const std::string ones = decode_error(jpeg);
  EXPECT_TRUE(ones.empty() || contains(ones, "image: JPEG truncated or corrupt")) << ones;
  // a marker in the middle of the scan: the data segment ends early
  for (uint8_t m : {0xd9, 0xd3, 0xc4}) {
    Bytes marker = sample_jpeg();
    const size_t mid = (sos + 14 + marker.size()) / 2;
    marker[mid] = 0xff, marker[mid + 1] = m;
    EXPECT_ERROR_HAS(marker, img::Limits{},
                     "image: JPEG truncated or corrupt: Corrupt JPEG data: premature end of data segment");
  }
  // SOI then EOI: no image at all
  EXPECT_ERROR_HAS((Bytes{0xff, 0xd8, 0xff, 0xd9}), img::Limits{}, "image: JPEG truncated or corrupt");
}

TEST(ImageHostile, JpegWithTooManyScans) {
  const Bytes grey = gradient(16, 16, 1);
  const Bytes many =
      encode_jpeg({.width = 16, .height = 16, .components = 1, .quality = 90, .many_scans = 1}, grey);
  EXPECT_ERROR_HAS(many, img::Limits{},
                   "image: JPEG has more than 100 scans (ordinary encoders write about 10)");
}

TEST(ImageHostile, GifBrokenFrames) {
  const std::vector<Rgb> palette = {{0, 0, 0}, {255, 255, 255}};
  // the first frame's descriptor says 10 wide on a 4-wide screen
  Bytes gif =
      encode_gif({.width = 4,
                  .height = 4,
                  .global_palette = palette,
                  .frames = {{.left = 1, .top = 1, .width = 2, .height = 2, .indices = {0, 1, 1, 0}}}});
  size_t desc = 13 + 6;  // header + screen descriptor + a 2-colour table
  ASSERT_EQ(gif[desc], 0x2c);
  gif[desc + 5] = 10;
  EXPECT_ERROR_HAS(gif, img::Limits{}, "image: GIF's first frame (10x2 at 1,1) lies outside its 4x4 screen");
  // no colour table anywhere
  Bytes none = encode_gif({.width = 2,
                           .height = 1,
                           .global_palette = palette,
                           .frames = {{.width = 2, .height = 1, .indices = {0, 1}}}});
  none[10] &= 0x7f;                                  // "no global colour table"
  none.erase(none.begin() + 13, none.begin() + 19);  // and its entries
  EXPECT_ERROR_HAS(none, img::Limits{}, "image: GIF has no colour table");
  // a header and nothing else
  Bytes bare = encode_gif({.width = 2, .height = 2, .global_palette = palette});
  EXPECT_ERROR_HAS(bare, img::Limits{}, "image: GIF has no image");
}

TEST(ImageHostile, RandomDamageNeverCrashes) {
  // Every format, 300 damaged copies each (bytes flipped, runs zeroed, cuts): a decode either
  // succeeds with consistent sizes or throws k3::Error.
  const Bytes samples[] = {
      sample_png(),
      sample_jpeg(),
      sample_webp(false),
      sample_webp(true),
      sample_gif(),
      encode_jpeg({.width = 24, .height = 24, .quality = 80, .progressive = true}, gradient(24, 24, 3))};
  uint32_t s = 12345;
  auto next = [&s] { return s = s * 1664525u + 1013904223u; };
  int decoded = 0, refused = 0;
  for (const Bytes& sample : samples)
    for (int round = 0; round < 300; ++round) {
      Bytes b = sample;
      const int edits = 1 + next() % 4;
      for (int k = 0; k < edits; ++k) {
        const size_t at = 12 + next() % (b.size() - 12);  // keep the magic bytes
        switch (next() % 3) {
          case 0: b[at] ^= static_cast<uint8_t>(1 + next() % 255); break;
          case 1: std::fill(b.begin() + at, b.begin() + std::min(b.size(), at + 1 + next() % 16), 0); break;
          default: b.resize(std::max<size_t>(13, at)); break;
        }
      }
      try {
        const auto im = img::decode(b, {.max_side = 4096, .max_pixels = 4'000'000});
        ASSERT_EQ(im.rgb.size(), size_t{im.width} * im.height * 3);
        ++decoded;
      } catch (const k3::Error& e) {
        ASSERT_EQ(std::string(e.what()).rfind("image: ", 0), 0u) << e.what();
        ++refused;
      }
    }
  EXPECT_GT(refused, 100);
  EXPECT_GT(decoded, 10);  // lossy data survives some damage: that is not an error
}
