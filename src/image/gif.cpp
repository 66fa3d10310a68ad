// image/gif: the first frame of a GIF through giflib's record-level reader (not DGifSlurp,
// which would decode every frame of an animation). giflib reports errors by return codes.
// The frame is drawn as stb_image draws a first frame: on a black canvas of the screen's
// size, the pixels outside the frame in the background colour when the background index is
// above 0 and the global colour table has it (with red and blue swapped, as stb_image paints
// it), the frame's transparent pixels (and indices past its colour table) left black.
#include <gif_lib.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "image/codecs.h"

namespace k3::image::detail {

namespace {

struct GifReader {
  const uint8_t* data;
  size_t size;
  size_t pos;
};

int on_read(GifFileType* gif, GifByteType* out, int n) {
  auto* r = static_cast<GifReader*>(gif->UserData);
  const size_t k = std::min(static_cast<size_t>(n < 0 ? 0 : n), r->size - r->pos);
  std::memcpy(out, r->data + r->pos, k);
  r->pos += k;
  return static_cast<int>(k);
}

struct GifHandle {
  GifFileType* gif = nullptr;
  ~GifHandle() {
    int error = 0;
    if (gif) DGifCloseFile(gif, &error);
  }
};

[[noreturn]] void fail_gif(int code) {
  const char* text = GifErrorString(code);
  fail("image: GIF truncated or corrupt: {}", text ? text : "unknown error");
}

// Skips the extensions before the first image; returns the transparent index its graphic
// control extension names, or -1.
int read_to_first_image(GifFileType* gif) {
  int transparent = -1;
  for (;;) {
    GifRecordType type = UNDEFINED_RECORD_TYPE;
    if (DGifGetRecordType(gif, &type) == GIF_ERROR) fail_gif(gif->Error);
    if (type == IMAGE_DESC_RECORD_TYPE) return transparent;
    if (type == TERMINATE_RECORD_TYPE) fail("image: GIF has no image");
    if (type != EXTENSION_RECORD_TYPE) fail("image: GIF truncated or corrupt: unknown record type");
    int code = 0;
    GifByteType* ext = nullptr;
    if (DGifGetExtension(gif, &code, &ext) == GIF_ERROR) fail_gif(gif->Error);
    if (code == GRAPHICS_EXT_FUNC_CODE && ext && ext[0] >= 4) transparent = (ext[1] & 1) ? ext[4] : -1;
    while (ext)
      if (DGifGetExtensionNext(gif, &ext) == GIF_ERROR) fail_gif(gif->Error);
  }
}

// The screen outside the first frame: the background colour as stb_image paints it, which is
// with red and blue swapped (it copies its palette entry, stored B, G, R, unconverted). Rare (a
// first frame smaller than the screen, a background index above 0) and kept so that an image
// gives the tower the pixels llama.cpp gives it.
void fill_background(Rgb8Image* image, const ColorMapObject* global, int bg, const GifImageDesc& frame) {
  if (bg <= 0 || !global || bg >= global->ColorCount) return;
  const GifColorType c = global->Colors[bg];
  const auto left = static_cast<uint32_t>(frame.Left), top = static_cast<uint32_t>(frame.Top);
  const auto right = left + static_cast<uint32_t>(frame.Width),
             bottom = top + static_cast<uint32_t>(frame.Height);
  for (uint32_t y = 0; y < image->height; ++y)
    for (uint32_t x = 0; x < image->width; ++x) {
      if (x >= left && x < right && y >= top && y < bottom) continue;
      uint8_t* p = &image->rgb[(size_t{y} * image->width + x) * 3];
      p[0] = c.Blue, p[1] = c.Green, p[2] = c.Red;
    }
}

}  // namespace

Rgb8Image decode_gif(std::span<const uint8_t> bytes, const Limits& limits) {
  GifReader reader{bytes.data(), bytes.size(), 0};
  GifHandle h;
  int error = 0;
  h.gif = DGifOpen(&reader, on_read, &error);
  if (!h.gif) fail_gif(error);
  GifFileType* gif = h.gif;
  check_size("GIF", static_cast<uint64_t>(gif->SWidth), static_cast<uint64_t>(gif->SHeight), limits);
  const auto width = static_cast<uint32_t>(gif->SWidth), height = static_cast<uint32_t>(gif->SHeight);
  const int transparent = read_to_first_image(gif);
  if (DGifGetImageDesc(gif) == GIF_ERROR) fail_gif(gif->Error);
  const GifImageDesc& frame = gif->Image;
  if (frame.Left < 0 || frame.Top < 0 || frame.Width < 0 || frame.Height < 0 ||
      uint64_t{static_cast<uint32_t>(frame.Left)} + static_cast<uint32_t>(frame.Width) > width ||
      uint64_t{static_cast<uint32_t>(frame.Top)} + static_cast<uint32_t>(frame.Height) > height)
    fail("image: GIF's first frame ({}x{} at {},{}) lies outside its {}x{} screen", frame.Width, frame.Height,
         frame.Left, frame.Top, width, height);
  const ColorMapObject* colors = frame.ColorMap ? frame.ColorMap : gif->SColorMap;
  if (!colors) fail("image: GIF has no colour table for its first frame");
  Rgb8Image image = blank_image(width, height);
  fill_background(&image, gif->SColorMap, gif->SBackGroundColor, frame);
  std::vector<GifPixelType> line(static_cast<size_t>(frame.Width));
  // An interlaced frame stores rows 0, 8, 16, ... then 4, 12, ... then 2, 6, ... then 1, 3, ...
  static constexpr int kStart[4] = {0, 4, 2, 1}, kStep[4] = {8, 8, 4, 2};
  const int passes = frame.Interlace ? 4 : 1;
  for (int pass = 0; pass < passes; ++pass)
    for (int row = frame.Interlace ? kStart[pass] : 0; row < frame.Height;
         row += frame.Interlace ? kStep[pass] : 1) {
      if (frame.Width > 0 && DGifGetLine(gif, line.data(), frame.Width) == GIF_ERROR) fail_gif(gif->Error);
      uint8_t* out = &image.rgb[(size_t{static_cast<uint32_t>(frame.Top + row)} * width + frame.Left) * 3];
      for (int x = 0; x < frame.Width; ++x) {
        const int index = line[x];
        if (index == transparent || index >= colors->ColorCount) continue;
        const GifColorType c = colors->Colors[index];
        out[3 * x] = c.Red, out[3 * x + 1] = c.Green, out[3 * x + 2] = c.Blue;
      }
    }
  return image;
}

}  // namespace k3::image::detail
