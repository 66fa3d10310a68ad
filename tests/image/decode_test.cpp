// image/decode: every format and sample layout round-trips through the libraries' own encoders
// to the RGB the contract promises: exact for the lossless formats, within a few levels for
// JPEG and lossy WebP; alpha dropped, 16-bit to the high byte, palettes and grey expanded,
// interlaced and progressive files whole, CMYK converted, animations' first frames, EXIF
// orientation not applied.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "encoders.h"
#include "helpers.h"
#include "image/image.h"

namespace img = k3::image;
using namespace imgtest;

namespace {

img::Rgb8Image decode(const Bytes& b, const img::Limits& limits = {}) { return img::decode(b, limits); }

// PNG rows of `channels` 8-bit samples from pixels (no packing needed at depth 8).
Bytes with_depth16(const Bytes& hi, const Bytes& lo) {
  Bytes out;
  for (size_t i = 0; i < hi.size(); ++i) out.insert(out.end(), {hi[i], lo[i]});
  return out;
}

// Packs samples of `depth` bits (1, 2 or 4), rows padded to a byte.
Bytes pack(const Bytes& samples, uint32_t width, uint32_t height, int depth) {
  const size_t row = (size_t{width} * depth + 7) / 8;
  Bytes out(row * height);
  for (uint32_t y = 0; y < height; ++y)
    for (uint32_t x = 0; x < width; ++x) {
      const size_t bit = size_t{x} * depth;
      out[y * row + bit / 8] |= static_cast<uint8_t>(samples[size_t{y} * width + x] << (8 - depth - bit % 8));
    }
  return out;
}

Bytes exif_orientation(uint8_t orientation) {
  // "Exif\0\0", a big-endian TIFF header, one IFD entry: tag 0x0112 (Orientation), SHORT, 1.
  return {'E',  'x',  'i', 'f', 0, 0, 'M', 'M', 0, 42,          0, 0, 0, 8, 0, 1,
          0x01, 0x12, 0,   3,   0, 0, 0,   1,   0, orientation, 0, 0, 0, 0, 0, 0};
}

}  // namespace

TEST(ImageSniff, MagicBytesOnly) {
  EXPECT_EQ(img::sniff(png_signature()), img::Format::png);
  EXPECT_EQ(img::sniff(Bytes{0xff, 0xd8, 0xff, 0xe0}), img::Format::jpeg);
  EXPECT_EQ(img::sniff(Bytes{'G', 'I', 'F', '8', '9', 'a'}), img::Format::gif);
  EXPECT_EQ(img::sniff(Bytes{'G', 'I', 'F', '8', '7', 'a'}), img::Format::gif);
  EXPECT_EQ(img::sniff(Bytes{'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'E', 'B', 'P'}), img::Format::webp);
  EXPECT_EQ(img::sniff(Bytes{'R', 'I', 'F', 'F', 0, 0, 0, 0, 'W', 'A', 'V', 'E'}), img::Format::unknown);
  EXPECT_EQ(img::sniff(Bytes{0xff, 0xd8}), img::Format::unknown);
  EXPECT_EQ(img::sniff(Bytes{}), img::Format::unknown);
  EXPECT_EQ(img::format_name(img::Format::webp), "WebP");
  EXPECT_EQ(img::format_name(img::Format::unknown), "unknown");
}

TEST(ImagePng, RgbRoundTripsExactly) {
  const Bytes px = noise(37, 23, 3, 1);
  const auto im = decode(encode_png({.width = 37, .height = 23}, px));
  EXPECT_EQ(im.width, 37u);
  EXPECT_EQ(im.height, 23u);
  EXPECT_EQ(im.rgb, px);
}

TEST(ImagePng, OneByOne) {
  const Bytes px = {10, 20, 30};
  EXPECT_EQ(decode(encode_png({.width = 1, .height = 1}, px)).rgb, px);
}

TEST(ImagePng, AlphaIsDroppedNotComposited) {
  Bytes px = noise(16, 9, 4, 2);
  for (size_t i = 3; i < px.size(); i += 16) px[i] = 0;  // some fully transparent pixels
  const auto im = decode(encode_png({.width = 16, .height = 9, .color_type = 6}, px));
  EXPECT_EQ(im.rgb, drop_alpha(px));
}

TEST(ImagePng, GreyAndGreyAlphaAreReplicated) {
  const Bytes grey = noise(13, 7, 1, 3);
  EXPECT_EQ(decode(encode_png({.width = 13, .height = 7, .color_type = 0}, grey)).rgb, grey_to_rgb(grey));
  const Bytes ga = noise(13, 7, 2, 4);
  Bytes g;
  for (size_t i = 0; i < ga.size(); i += 2) g.push_back(ga[i]);
  EXPECT_EQ(decode(encode_png({.width = 13, .height = 7, .color_type = 4}, ga)).rgb, grey_to_rgb(g));
}

TEST(ImagePng, LowBitGreyIsScaledToFullRange) {
  for (int depth : {1, 2, 4}) {
    const int top = (1 << depth) - 1;
    Bytes samples = noise(11, 5, 1, depth);
    for (auto& s : samples) s = static_cast<uint8_t>(s % (top + 1));
    Bytes want;
    for (uint8_t s : samples) want.push_back(static_cast<uint8_t>(s * 255 / top));
    const auto im = decode(encode_png({.width = 11, .height = 5, .color_type = 0, .bit_depth = depth},
                                      pack(samples, 11, 5, depth)));
    EXPECT_EQ(im.rgb, grey_to_rgb(want)) << "depth " << depth;
  }
}

TEST(ImagePng, SixteenBitKeepsTheHighByte) {
  const Bytes hi = noise(9, 4, 3, 5), lo = noise(9, 4, 3, 6);
  EXPECT_EQ(decode(encode_png({.width = 9, .height = 4, .bit_depth = 16}, with_depth16(hi, lo))).rgb, hi);
  const Bytes ghi = noise(9, 4, 1, 7), glo = noise(9, 4, 1, 8);
  const auto im =
      decode(encode_png({.width = 9, .height = 4, .color_type = 0, .bit_depth = 16}, with_depth16(ghi, glo)));
  EXPECT_EQ(im.rgb, grey_to_rgb(ghi));
  // 16-bit RGBA: alpha dropped too
  const Bytes ahi = noise(5, 3, 4, 9), alo = noise(5, 3, 4, 10);
  EXPECT_EQ(
      decode(encode_png({.width = 5, .height = 3, .color_type = 6, .bit_depth = 16}, with_depth16(ahi, alo)))
          .rgb,
      drop_alpha(ahi));
}

TEST(ImagePng, PaletteWithAndWithoutTransparency) {
  std::vector<Rgb> palette;
  for (int i = 0; i < 16; ++i) palette.push_back({uint8_t(i * 16), uint8_t(255 - i * 7), uint8_t(i * i)});
  Bytes idx = noise(19, 6, 1, 11);
  for (auto& i : idx) i %= 16;
  Bytes want;
  for (uint8_t i : idx) want.insert(want.end(), palette[i].begin(), palette[i].end());
  for (int depth : {4, 8}) {
    PngSpec spec{.width = 19, .height = 6, .color_type = 3, .bit_depth = depth, .palette = palette};
    const Bytes rows = depth == 8 ? idx : pack(idx, 19, 6, 4);
    EXPECT_EQ(decode(encode_png(spec, rows)).rgb, want) << "depth " << depth;
    spec.palette_alpha = {0, 128, 255, 7};  // tRNS: dropped with the alpha
    EXPECT_EQ(decode(encode_png(spec, rows)).rgb, want) << "depth " << depth << " with tRNS";
  }
}

TEST(ImagePng, GreyTransparencyKeyIsIgnored) {
  const Bytes grey = noise(8, 8, 1, 12);
  const auto im = decode(encode_png({.width = 8, .height = 8, .color_type = 0, .trns_grey = grey[0]}, grey));
  EXPECT_EQ(im.rgb, grey_to_rgb(grey));
}

TEST(ImagePng, InterlacedDecodesWhole) {
  // every size where some of Adam7's seven passes are empty, and larger ones
  for (uint32_t w : {1u, 2u, 3u, 4u, 5u, 8u, 9u, 33u})
    for (uint32_t h : {1u, 2u, 3u, 4u, 5u, 8u, 9u, 17u}) {
      const Bytes px = noise(w, h, 3, w * 100 + h);
      EXPECT_EQ(decode(encode_png({.width = w, .height = h, .interlace = true}, px)).rgb, px)
          << w << "x" << h;
    }
  std::vector<Rgb> palette = {{0, 0, 0}, {255, 0, 0}, {0, 255, 0}, {0, 0, 255}};
  Bytes idx = noise(21, 11, 1, 14);
  for (auto& i : idx) i %= 4;
  Bytes want;
  for (uint8_t i : idx) want.insert(want.end(), palette[i].begin(), palette[i].end());
  const PngSpec spec{
      .width = 21, .height = 11, .color_type = 3, .bit_depth = 2, .interlace = true, .palette = palette};
  EXPECT_EQ(decode(encode_png(spec, pack(idx, 21, 11, 2))).rgb, want);
}

TEST(ImageJpeg, RgbWithinAFewLevels) {
  const Bytes px = gradient(64, 48, 3);
  const auto im = decode(encode_jpeg({.width = 64, .height = 48, .quality = 100}, px));
  ASSERT_EQ(im.width, 64u);
  ASSERT_EQ(im.height, 48u);
  const Diff d = diff(im.rgb, px);
  EXPECT_LE(d.max, 4);
  EXPECT_LT(d.mean, 1.0);
  // 4:2:0 at quality 90: still close on a smooth image
  const Diff d420 =
      diff(decode(encode_jpeg({.width = 64, .height = 48, .quality = 90, .full_chroma = false}, px)).rgb, px);
  EXPECT_LE(d420.max, 16);
  EXPECT_LT(d420.mean, 2.0);
}

TEST(ImageJpeg, OddSizeAndOnePixel) {
  const Bytes px = gradient(17, 5, 3);
  const auto im = decode(encode_jpeg({.width = 17, .height = 5, .quality = 100}, px));
  EXPECT_EQ(im.rgb.size(), px.size());
  const Bytes one = {200, 100, 50};
  EXPECT_LE(diff(decode(encode_jpeg({.width = 1, .height = 1, .quality = 100}, one)).rgb, one).max, 3);
}

TEST(ImageJpeg, GreyIsReplicated) {
  const Bytes grey = gradient(40, 30, 1);
  const auto im = decode(encode_jpeg({.width = 40, .height = 30, .components = 1, .quality = 100}, grey));
  EXPECT_LE(diff(im.rgb, grey_to_rgb(grey)).max, 2);
  for (size_t i = 0; i < im.rgb.size(); i += 3) {
    ASSERT_EQ(im.rgb[i], im.rgb[i + 1]);
    ASSERT_EQ(im.rgb[i], im.rgb[i + 2]);
  }
}

TEST(ImageJpeg, ProgressiveAndArithmeticEqualBaseline) {
  // The same quantized coefficients, coded differently: the same pixels, byte for byte.
  const Bytes px = gradient(50, 30, 3);
  const JpegSpec base{.width = 50, .height = 30, .quality = 85, .full_chroma = false};
  const auto want = decode(encode_jpeg(base, px)).rgb;
  JpegSpec progressive = base;
  progressive.progressive = true;
  EXPECT_EQ(decode(encode_jpeg(progressive, px)).rgb, want);
  JpegSpec arithmetic = base;
  arithmetic.arithmetic = true;
  EXPECT_EQ(decode(encode_jpeg(arithmetic, px)).rgb, want);
}

TEST(ImageJpeg, LargeProgressiveFitsTheWorkingMemoryCap) {
  // A progressive file holds every coefficient until the last scan: 8 bytes a pixel for CMYK at
  // full resolution, the most the decoder's cap on libjpeg's working memory allows for.
  const uint32_t w = 1200, h = 900;
  const Bytes cmyk = gradient(w, h, 4);
  const auto im = decode(
      encode_jpeg({.width = w, .height = h, .components = 4, .quality = 90, .progressive = true}, cmyk));
  EXPECT_EQ(im.width, w);
  EXPECT_EQ(im.height, h);
  const Bytes rgb = gradient(w, h, 3);
  EXPECT_EQ(decode(encode_jpeg({.width = w, .height = h, .quality = 90, .progressive = true}, rgb)).height,
            h);
}

TEST(ImageJpeg, CmykAndYcckAreConvertedAsAdobeWritesThem) {
  const Bytes cmyk = gradient(32, 16, 4);
  Bytes want;
  for (size_t i = 0; i < cmyk.size(); i += 4)
    for (int c = 0; c < 3; ++c) want.push_back(cmyk_channel(cmyk[i + c], cmyk[i + 3]));
  for (bool ycck : {false, true}) {
    const auto im =
        decode(encode_jpeg({.width = 32, .height = 16, .components = 4, .ycck = ycck, .quality = 100}, cmyk));
    const Diff d = diff(im.rgb, want);
    EXPECT_LE(d.max, 4) << (ycck ? "YCCK" : "CMYK");
    EXPECT_LT(d.mean, 1.0) << (ycck ? "YCCK" : "CMYK");
  }
}

TEST(ImageJpeg, ExifOrientationIsNotApplied) {
  const Bytes px = gradient(40, 20, 3);
  const JpegSpec plain{.width = 40, .height = 20, .quality = 90};
  JpegSpec rotated = plain;
  rotated.app1 = exif_orientation(6);  // "rotate 90° clockwise to display"
  const auto a = decode(encode_jpeg(plain, px)), b = decode(encode_jpeg(rotated, px));
  EXPECT_EQ(b.width, 40u);
  EXPECT_EQ(b.height, 20u);
  EXPECT_EQ(a.rgb, b.rgb);
}

TEST(ImageWebp, LosslessExactWithAndWithoutAlpha) {
  const Bytes px = noise(29, 13, 3, 20);
  EXPECT_EQ(decode(encode_webp(29, 13, 3, px, true)).rgb, px);
  Bytes rgba = noise(29, 13, 4, 21);
  for (size_t i = 3; i < rgba.size(); i += 4) rgba[i] |= 1;  // no fully transparent pixel: RGB kept exactly
  const auto im = decode(encode_webp(29, 13, 4, rgba, true));
  EXPECT_EQ(im.rgb, drop_alpha(rgba));
}

TEST(ImageWebp, LossyWithinAFewLevels) {
  const Bytes px = gradient(64, 40, 3);
  const auto im = decode(encode_webp(64, 40, 3, px, false, 95));
  EXPECT_EQ(im.width, 64u);
  EXPECT_LT(diff(im.rgb, px).mean, 3.0);
  const Bytes rgba = gradient(64, 40, 4);
  const auto ia = decode(encode_webp(64, 40, 4, rgba, false, 95));
  EXPECT_LT(diff(ia.rgb, drop_alpha(rgba)).mean, 3.0);
}

TEST(ImageWebp, AnimationGivesItsFirstFrame) {
  Bytes f1 = noise(24, 18, 4, 22), f2 = noise(24, 18, 4, 23);
  for (size_t i = 3; i < f1.size(); i += 4) f1[i] = f2[i] = 255;
  const Bytes anim = encode_webp_animation(24, 18, {f1, f2});
  const auto im = decode(anim);
  EXPECT_EQ(im.width, 24u);
  EXPECT_EQ(im.rgb, drop_alpha(f1));
}

TEST(ImageGif, PaletteTransparencyAndInterlace) {
  const std::vector<Rgb> palette = {{1, 2, 3}, {250, 0, 0}, {0, 250, 0}, {0, 0, 250}};
  Bytes idx = noise(23, 19, 1, 24);
  for (auto& i : idx) i %= 4;
  for (bool interlace : {false, true}) {
    for (int transparent : {-1, 2}) {
      const GifSpec spec{.width = 23,
                         .height = 19,
                         .global_palette = palette,
                         .frames = {{.width = 23,
                                     .height = 19,
                                     .indices = idx,
                                     .transparent = transparent,
                                     .interlace = interlace}}};
      Bytes want;
      for (uint8_t i : idx) {
        const Rgb c = int{i} == transparent ? Rgb{0, 0, 0} : palette[i];  // transparent: black, as stb_image
        want.insert(want.end(), c.begin(), c.end());
      }
      const auto im = decode(encode_gif(spec));
      EXPECT_EQ(im.width, 23u);
      EXPECT_EQ(im.rgb, want) << "interlace " << interlace << " transparent " << transparent;
    }
  }
}

TEST(ImageGif, FrameSmallerThanScreenAndLocalPalette) {
  const std::vector<Rgb> global = {{9, 9, 9}, {200, 100, 50}}, local = {{10, 20, 30}, {40, 50, 60}};
  for (int background : {0, 1}) {
    const GifSpec spec{.width = 6,
                       .height = 5,
                       .global_palette = global,
                       .background = background,
                       .frames = {{.left = 2,
                                   .top = 1,
                                   .width = 3,
                                   .height = 2,
                                   .indices = {0, 1, 0, 1, 0, 1},
                                   .local_palette = local}}};
    const auto im = decode(encode_gif(spec));
    ASSERT_EQ(im.rgb.size(), 6u * 5 * 3);
    // outside the frame: the background colour when its index is above 0 (red and blue swapped,
    // as stb_image paints it), else black
    const Rgb outside = background ? Rgb{global[1][2], global[1][1], global[1][0]} : Rgb{0, 0, 0};
    EXPECT_EQ(Rgb({im.rgb[0], im.rgb[1], im.rgb[2]}), outside);
    const size_t at = (1 * 6 + 2) * 3;  // (2,1): the frame's first pixel, local colour 0
    EXPECT_EQ(Rgb({im.rgb[at], im.rgb[at + 1], im.rgb[at + 2]}), local[0]);
    EXPECT_EQ(Rgb({im.rgb[at + 3], im.rgb[at + 4], im.rgb[at + 5]}), local[1]);
  }
}

TEST(ImageGif, AnimationGivesItsFirstFrame) {
  const std::vector<Rgb> palette = {{0, 0, 0}, {255, 255, 255}};
  const GifSpec spec{
      .width = 2,
      .height = 1,
      .global_palette = palette,
      .frames = {{.width = 2, .height = 1, .indices = {1, 0}}, {.width = 2, .height = 1, .indices = {0, 1}}}};
  EXPECT_EQ(decode(encode_gif(spec)).rgb, (Bytes{255, 255, 255, 0, 0, 0}));
}

TEST(ImageHash, SamePixelsSameHash) {
  const Bytes px = noise(20, 10, 3, 30);
  const auto a = decode(encode_png({.width = 20, .height = 10}, px));
  const auto b = decode(encode_webp(20, 10, 3, px, true));
  EXPECT_EQ(img::content_hash(a), img::content_hash(b));
  auto c = a;
  c.rgb[17] ^= 1;
  EXPECT_NE(img::content_hash(a), img::content_hash(c));
  auto d = a;  // the same bytes as 10x20: another image
  std::swap(d.width, d.height);
  EXPECT_NE(img::content_hash(a), img::content_hash(d));
  EXPECT_EQ(img::content_hash(a), img::content_hash(decode(encode_png({.width = 20, .height = 10}, px))));
}

struct ImageFileTest : testing::Test {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("k3-image-test-" + std::to_string(::getpid()));
  void SetUp() override { std::filesystem::create_directories(dir); }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::string write(const std::string& name, const Bytes& b) {
    const std::string path = (dir / name).string();
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    return path;
  }
};

TEST_F(ImageFileTest, DecodesByContentNotExtension) {
  const Bytes px = noise(7, 3, 3, 31);
  const auto im = img::decode_file(write("really-a-png.jpg", encode_png({.width = 7, .height = 3}, px)));
  EXPECT_EQ(im.rgb, px);
}

TEST_F(ImageFileTest, SizeCapBeforeReadingAndPathInErrors) {
  const Bytes png = encode_png({.width = 64, .height = 64}, noise(64, 64, 3, 32));
  const std::string path = write("big.png", png);
  try {
    img::decode_file(path, {.max_bytes = 1000});
    FAIL() << "no error";
  } catch (const k3::Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("limit"), std::string::npos) << e.what();
  }
  const std::string bad = write("bad.png", Bytes(png.begin(), png.begin() + 100));
  try {
    img::decode_file(bad);
    FAIL() << "no error";
  } catch (const k3::Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(bad + ": image: PNG", 0), 0u) << e.what();
  }
  try {
    img::decode_file((dir / "missing.png").string());
    FAIL() << "no error";
  } catch (const k3::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos) << e.what();
  }
}
