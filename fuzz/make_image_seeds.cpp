// fuzz/make_image_seeds: writes the small image files that tests/data/image/ holds, fuzz_image's
// seeds and tests/image/fixtures_test.cpp's cases, with the libraries' own encoders
// (tests/image/encoders.h). A name says what a decode must do: "ok-WxH-..." decode to W x H,
// "bad-..." end in a k3::Error; a ".url" file is a data: URL to parse first.
//   make_image_seeds DIR
#include <cstdio>
#include <string>

#include "../tests/image/encoders.h"
#include "image/data_url.h"

using namespace imgtest;

namespace {

std::string g_dir;

void put(const std::string& name, const Bytes& b) {
  const std::string path = g_dir + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(b.data(), 1, b.size(), f) != b.size() || std::fclose(f) != 0) {
    std::fprintf(stderr, "make_image_seeds: cannot write %s\n", path.c_str());
    std::exit(1);
  }
  std::printf("%6zu %s\n", b.size(), name.c_str());
}

Bytes text(const std::string& s) { return Bytes(s.begin(), s.end()); }

Bytes handmade_png(uint32_t width, uint32_t height, int type, const Bytes& raw) {
  Bytes out = png_signature();
  for (const Bytes& chunk :
       {png_ihdr(width, height, 8, type), png_chunk("IDAT", zlib_compress(raw)), png_chunk("IEND", {})})
    out.insert(out.end(), chunk.begin(), chunk.end());
  return out;
}

void pngs() {
  put("ok-8x6-png-rgb.png", encode_png({.width = 8, .height = 6}, noise(8, 6, 3, 1)));
  put("ok-8x6-png-rgba.png", encode_png({.width = 8, .height = 6, .color_type = 6}, noise(8, 6, 4, 2)));
  put("ok-16x4-png-grey-1bit.png",
      encode_png({.width = 16, .height = 4, .color_type = 0, .bit_depth = 1}, noise(2, 4, 1, 3)));
  put("ok-8x6-png-grey-alpha.png", encode_png({.width = 8, .height = 6, .color_type = 4}, noise(8, 6, 2, 4)));
  Bytes idx = noise(4, 6, 1, 5);  // 8 wide at 4 bits: 4 bytes a row
  put("ok-8x6-png-palette-4bit-trns.png", encode_png({.width = 8,
                                                      .height = 6,
                                                      .color_type = 3,
                                                      .bit_depth = 4,
                                                      .palette = {{0, 0, 0},
                                                                  {255, 0, 0},
                                                                  {0, 255, 0},
                                                                  {0, 0, 255},
                                                                  {9, 9, 9},
                                                                  {200, 100, 50},
                                                                  {1, 2, 3},
                                                                  {4, 5, 6},
                                                                  {7, 8, 9},
                                                                  {10, 11, 12},
                                                                  {13, 14, 15},
                                                                  {16, 17, 18},
                                                                  {19, 20, 21},
                                                                  {22, 23, 24},
                                                                  {25, 26, 27},
                                                                  {28, 29, 30}},
                                                      .palette_alpha = {0, 128}},
                                                     idx));
  put("ok-9x7-png-rgb16-interlaced.png",
      encode_png({.width = 9, .height = 7, .bit_depth = 16, .interlace = true}, noise(9, 7, 6, 6)));
  put("bad-png-100000x100000.png", handmade_png(100000, 100000, 2, Bytes(64, 0)));
  put("bad-png-bomb-7000x7000.png", handmade_png(7000, 7000, 2, Bytes(64, 0)));
  Bytes cut = encode_png({.width = 8, .height = 6}, noise(8, 6, 3, 1));
  cut.resize(cut.size() - 20);
  put("bad-png-truncated.png", cut);
}

void jpegs() {
  put("ok-16x16-jpeg-420.jpg",
      encode_jpeg({.width = 16, .height = 16, .quality = 80, .full_chroma = false}, gradient(16, 16, 3)));
  put("ok-8x8-jpeg-grey.jpg",
      encode_jpeg({.width = 8, .height = 8, .components = 1, .quality = 80}, gradient(8, 8, 1)));
  put("ok-16x16-jpeg-progressive.jpg",
      encode_jpeg({.width = 16, .height = 16, .quality = 80, .progressive = true, .full_chroma = false},
                  gradient(16, 16, 3)));
  put("ok-16x8-jpeg-arithmetic.jpg",
      encode_jpeg({.width = 16, .height = 8, .quality = 80, .arithmetic = true}, gradient(16, 8, 3)));
  put("ok-8x8-jpeg-cmyk.jpg",
      encode_jpeg({.width = 8, .height = 8, .components = 4, .quality = 80}, gradient(8, 8, 4)));
  put("ok-8x8-jpeg-ycck.jpg",
      encode_jpeg({.width = 8, .height = 8, .components = 4, .ycck = true, .quality = 80},
                  gradient(8, 8, 4)));
  const Bytes exif = {'E',  'x',  'i', 'f', 0, 0, 'M', 'M', 0, 42, 0, 0, 0, 8, 0, 1,
                      0x01, 0x12, 0,   3,   0, 0, 0,   1,   0, 6,  0, 0, 0, 0, 0, 0};
  put("ok-16x8-jpeg-exif-orientation-6.jpg",
      encode_jpeg({.width = 16, .height = 8, .quality = 80, .app1 = exif}, gradient(16, 8, 3)));
  // a JPEG under a PNG name: decoded by its bytes
  put("ok-16x8-jpeg-named-png.png",
      encode_jpeg({.width = 16, .height = 8, .quality = 80}, gradient(16, 8, 3)));
  put("bad-jpeg-130-scans.jpg",
      encode_jpeg({.width = 8, .height = 8, .components = 1, .quality = 80, .many_scans = 1},
                  gradient(8, 8, 1)));
  Bytes cut = encode_jpeg({.width = 16, .height = 16, .quality = 80}, gradient(16, 16, 3));
  cut.resize(cut.size() - 40);
  put("bad-jpeg-truncated.jpg", cut);
}

void webps() {
  put("ok-16x8-webp-lossy.webp", encode_webp(16, 8, 3, gradient(16, 8, 3), false, 80));
  put("ok-16x8-webp-lossy-alpha.webp", encode_webp(16, 8, 4, gradient(16, 8, 4), false, 80));
  put("ok-8x6-webp-lossless.webp", encode_webp(8, 6, 3, noise(8, 6, 3, 7), true));
  put("ok-8x6-webp-lossless-alpha.webp", encode_webp(8, 6, 4, noise(8, 6, 4, 8), true));
  Bytes f1 = noise(6, 4, 4, 9), f2 = noise(6, 4, 4, 10);
  for (size_t i = 3; i < f1.size(); i += 4) f1[i] = f2[i] = 255;
  put("ok-6x4-webp-animated.webp", encode_webp_animation(6, 4, {f1, f2}));
  Bytes cut = encode_webp(16, 8, 3, gradient(16, 8, 3), false, 80);
  cut.resize(cut.size() - 10);
  put("bad-webp-truncated.webp", cut);
}

void gifs() {
  const std::vector<Rgb> palette = {{0, 0, 0}, {255, 0, 0}, {0, 255, 0}, {0, 0, 255}};
  Bytes idx = noise(8, 6, 1, 11);
  for (auto& i : idx) i %= 4;
  put("ok-8x6-gif.gif", encode_gif({.width = 8,
                                    .height = 6,
                                    .global_palette = palette,
                                    .frames = {{.width = 8, .height = 6, .indices = idx}}}));
  put("ok-8x6-gif-interlaced-transparent.gif",
      encode_gif(
          {.width = 8,
           .height = 6,
           .global_palette = palette,
           .frames = {{.width = 8, .height = 6, .indices = idx, .transparent = 1, .interlace = true}}}));
  put("ok-6x5-gif-small-frame-background.gif",
      encode_gif({.width = 6,
                  .height = 5,
                  .global_palette = palette,
                  .background = 2,
                  .frames = {{.left = 2,
                              .top = 1,
                              .width = 3,
                              .height = 2,
                              .indices = {0, 1, 0, 1, 0, 1},
                              .local_palette = {{10, 20, 30}, {40, 50, 60}}}}}));
  put("ok-2x1-gif-animated.gif", encode_gif({.width = 2,
                                             .height = 1,
                                             .global_palette = palette,
                                             .frames = {{.width = 2, .height = 1, .indices = {1, 0}},
                                                        {.width = 2, .height = 1, .indices = {0, 1}}}}));
  Bytes outside =
      encode_gif({.width = 4,
                  .height = 4,
                  .global_palette = palette,
                  .frames = {{.left = 1, .top = 1, .width = 2, .height = 2, .indices = {0, 1, 1, 0}}}});
  outside[13 + 12 + 5] = 10;  // header, screen, 4-colour table; the descriptor's width
  put("bad-gif-frame-outside-screen.gif", outside);
}

void urls() {
  const Bytes png = encode_png({.width = 4, .height = 2}, noise(4, 2, 3, 12));
  put("ok-4x2-png.url", text("data:image/png;base64," + k3::image::encode_base64(png)));
  const Bytes jpeg = encode_jpeg({.width = 8, .height = 8, .quality = 80}, gradient(8, 8, 3));
  put("ok-8x8-jpeg-labelled-png.url", text("data:image/png;base64," + k3::image::encode_base64(jpeg)));
  put("bad-http.url", text("https://example.com/cat.png"));
  put("bad-base64.url", text("data:image/png;base64,iVBORw0KGgo*AAAA"));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_image_seeds DIR\n");
    return 2;
  }
  g_dir = argv[1];
  pngs();
  jpegs();
  webps();
  gifs();
  urls();
  return 0;
}
