// image/png: PNG through libpng's progressive reader.
// Before libpng sees the file, one pass over its chunks checks the header's size against the
// limits, each chunk's length, the CRC of every critical chunk and the final IEND, and bounds
// the image by its compressed size (the decompression-bomb check). libpng then gets the whole
// file in one png_process_data call. Its progressive reader stops inflating at the first byte
// past the last row ("Extra compressed data"), where the pull reader (png_read_image) would
// inflate all the compressed data that follows the image: up to 1032 times the file's size,
// a minute of CPU for a 20 MB file.
// libpng reports errors by longjmp. The one call into it that can fail, png_process_data, runs
// in a small function that sets the jump point and holds nothing that needs destroying
// (process), so a longjmp skips no C++ destructor. Our callbacks hold no C++ objects either;
// the handles are freed by PngHandle in the caller, and the image is allocated before libpng
// starts.
#include <png.h>
#include <zlib.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "core/error.h"
#include "image/codecs.h"

namespace k3::image::detail {

namespace {

// Ancillary chunk data libpng may hold at once (zTXt, iCCP, unknown chunks after decompression),
// and how many such chunks it keeps: colour profiles and text are skipped anyway (below).
constexpr png_alloc_size_t kChunkMallocMax = 8u << 20;
constexpr png_uint_32 kChunkCacheMax = 128;

// What the callbacks share with the decoder: plain data only (it lives across longjmps).
struct PngState {
  uint8_t* out;  // the image, width * height * 3 bytes
  uint32_t width, height;
  int last_pass;   // the pass that ends the image: 0, or 6 when interlaced
  int64_t seen_y;  // the last row libpng handed over (-1: none yet) and its pass
  int seen_pass;
  bool ended;  // IEND read
  char message[256];
};

PngState* state_of(png_structp png) { return static_cast<PngState*>(png_get_progressive_ptr(png)); }

void on_error(png_structp png, png_const_charp message) {
  auto* s = static_cast<PngState*>(png_get_error_ptr(png));
  std::snprintf(s->message, sizeof s->message, "%s", message);
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}  // recoverable: not printed, not fatal

// The header is read: sets the conversions to 8-bit RGB and checks that they give it.
void on_info(png_structp png, png_infop info) {
  PngState* s = state_of(png);
  const int depth = png_get_bit_depth(png, info), type = png_get_color_type(png, info);
  if (depth == 16) png_set_strip_16(png);  // the high byte, as stb_image does
  if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (type == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (type == PNG_COLOR_TYPE_GRAY || type == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
  if (type & PNG_COLOR_MASK_ALPHA ||
      (type == PNG_COLOR_TYPE_PALETTE && png_get_valid(png, info, PNG_INFO_tRNS)))
    png_set_strip_alpha(png);
  s->last_pass = png_set_interlace_handling(png) == 1 ? 0 : 6;
  png_read_update_info(png, info);
  if (png_get_image_width(png, info) != s->width || png_get_image_height(png, info) != s->height ||
      png_get_channels(png, info) != 3 || png_get_rowbytes(png, info) != size_t{s->width} * 3)
    png_error(png, "the conversion to 8-bit RGB failed");
}

// A row of a pass, in order, every row of the image in every pass (with interlace handling;
// `row` is null where the pass changes nothing): merged into the image's row, libpng keeping
// the pixels of the other passes. The image is whole once the last pass's last row came.
void on_row(png_structp png, png_bytep row, png_uint_32 y, int pass) {
  PngState* s = state_of(png);
  if (y >= s->height) png_error(png, "row number out of range");
  s->seen_y = y;
  s->seen_pass = pass;
  if (row) png_progressive_combine_row(png, s->out + size_t{y} * s->width * 3, row);
}

void on_end(png_structp png, png_infop) { state_of(png)->ended = true; }

struct PngHandle {
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~PngHandle() { png_destroy_read_struct(&png, &info, nullptr); }
};

// Chunks that change nothing in the pixels we return: skipped unread (CRC still checked).
const png_byte kIgnoredChunks[] = {
    'b',  'K',  'G',  'D',  '\0', 'c',  'H',  'R',  'M',  '\0', 'e',  'X',  'I',  'f',  '\0', 'g',  'A',
    'M',  'A',  '\0', 'h',  'I',  'S',  'T',  '\0', 'i',  'C',  'C',  'P',  '\0', 'i',  'T',  'X',  't',
    '\0', 'o',  'F',  'F',  's',  '\0', 'p',  'C',  'A',  'L',  '\0', 'p',  'H',  'Y',  's',  '\0', 's',
    'B',  'I',  'T',  '\0', 's',  'C',  'A',  'L',  '\0', 's',  'P',  'L',  'T',  '\0', 's',  'R',  'G',
    'B',  '\0', 't',  'E',  'X',  't',  '\0', 't',  'I',  'M',  'E',  '\0', 'z',  'T',  'X',  't',  '\0'};

bool process(png_structp png, png_infop info, std::span<const uint8_t> bytes) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_process_data(png, info, const_cast<png_bytep>(bytes.data()), bytes.size());  // only read
  return true;
}

uint32_t be32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 |
         static_cast<uint32_t>(p[2]) << 8 | p[3];
}

// A chunk name as a message can show it.
std::string printable(std::string_view name) {
  std::string out;
  for (char c : name)
    out += (c >= 0x21 && c < 0x7f) ? std::string(1, c) : fmt::format("\\x{:02x}", static_cast<uint8_t>(c));
  return out;
}

// Walks the chunks: each must fit in the file, each critical one (IHDR, PLTE, IDAT, IEND; an
// upper-case first letter) must match its CRC, and IEND must come. Returns the IDAT bytes.
uint64_t check_chunks(std::span<const uint8_t> b) {
  uint64_t idat = 0;
  for (size_t pos = 8;;) {
    if (b.size() - pos < 12)
      fail("image: PNG truncated or corrupt: the file ends at {} bytes, before IEND", b.size());
    const uint32_t length = be32(b.data() + pos);
    const uint8_t* type = b.data() + pos + 4;
    const std::string_view name(reinterpret_cast<const char*>(type), 4);
    if (length > b.size() - pos - 12)
      fail(
          "image: PNG truncated or corrupt: the {}-byte chunk at offset {} runs past the end of the {}-byte "
          "file",
          length, pos, b.size());
    const bool critical = (type[0] & 0x20) == 0;
    if (critical && crc32_z(0, type, size_t{length} + 4) != be32(type + 4 + length))
      fail("image: PNG truncated or corrupt: {} chunk at offset {}: CRC error", printable(name), pos);
    if (name == "IDAT") idat += length;
    if (name == "IEND") return idat;
    pos += size_t{length} + 12;
  }
}

// Samples a pixel of a colour type has (0 for a type or depth PNG does not define).
int channels_of(int type, int depth) {
  switch (type) {
    case 0: return depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16 ? 1 : 0;
    case 3: return depth == 1 || depth == 2 || depth == 4 || depth == 8 ? 1 : 0;
    case 2: return depth == 8 || depth == 16 ? 3 : 0;
    case 4: return depth == 8 || depth == 16 ? 2 : 0;
    case 6: return depth == 8 || depth == 16 ? 4 : 0;
    default: return 0;
  }
}

// The size from IHDR, checked before anything else; then the chunks; then the decompression-
// bomb check: deflate expands at most 1032:1, so the filtered rows the header promises must
// fit in 1032 times the IDAT bytes, or the file cannot hold them (a tiny file declaring a huge
// image would otherwise cost the whole allocation before failing).
void check_header(std::span<const uint8_t> b, const Limits& limits) {
  if (b.size() < 33 || std::memcmp(b.data() + 12, "IHDR", 4) != 0 || be32(b.data() + 8) != 13)
    fail("image: PNG truncated or corrupt: no IHDR chunk at the start");
  const uint32_t width = be32(b.data() + 16), height = be32(b.data() + 20);
  check_size("PNG", width, height, limits);
  const uint64_t idat = check_chunks(b);
  const int depth = b[24], type = b[25], channels = channels_of(type, depth);
  if (channels == 0)
    fail("image: PNG truncated or corrupt: colour type {} with bit depth {} is not a PNG format", type,
         depth);
  const uint64_t row = (static_cast<uint64_t>(width) * channels * depth + 7) / 8 + 1;
  const uint64_t need = row * height, most = (idat + 16) * 1032;
  if (need > most)
    fail(
        "image: PNG is {}x{}, which takes {} bytes of image data, more than its {} bytes of compressed data "
        "can hold (truncated, or a decompression bomb)",
        width, height, need, idat);
}

}  // namespace

Rgb8Image decode_png(std::span<const uint8_t> bytes, const Limits& limits) {
  check_header(bytes, limits);
  Rgb8Image image = blank_image(be32(bytes.data() + 16), be32(bytes.data() + 20));
  PngState state{image.rgb.data(), image.width, image.height, 0, -1, 0, false, {}};
  PngHandle h;
  h.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &state, on_error, on_warning);
  if (h.png) h.info = png_create_info_struct(h.png);
  if (!h.png || !h.info) fail("image: PNG: out of memory creating the decoder");
  png_set_progressive_read_fn(h.png, &state, on_info, on_row, on_end);
  png_set_user_limits(h.png, limits.max_side, limits.max_side);
  png_set_chunk_malloc_max(h.png, kChunkMallocMax);
  png_set_chunk_cache_max(h.png, kChunkCacheMax);
  png_set_keep_unknown_chunks(h.png, PNG_HANDLE_CHUNK_NEVER, kIgnoredChunks, sizeof kIgnoredChunks / 5);
  if (!process(h.png, h.info, bytes)) fail("image: PNG truncated or corrupt: {}", state.message);
  if (!state.ended || state.seen_y != int64_t{image.height} - 1 || state.seen_pass != state.last_pass)
    fail("image: PNG truncated or corrupt: the image data ends early (at row {} of pass {})", state.seen_y,
         state.seen_pass);
  return image;
}

}  // namespace k3::image::detail
