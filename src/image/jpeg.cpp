// image/jpeg: JPEG through libjpeg-turbo. libjpeg reports errors by calling error_exit, which
// must not return: ours longjmps to the jump point of the function that called into the
// library (read_header, read_pixels), functions that hold nothing that needs destroying, so no
// C++ destructor is skipped; the decompressor is destroyed by JpegHandle in the caller, and
// every buffer libjpeg writes into is allocated by the caller beforehand.
// Corrupt-data warnings that mean pixels are missing or wrong (a truncated file, a bad Huffman
// code, a premature marker) are errors too; libjpeg would otherwise fill in grey and succeed.
#include <cstdio>  // jpeglib.h needs FILE
// clang-format off: jerror.h needs jpeglib.h first
#include <jpeglib.h>
#include <jerror.h>
// clang-format on

#include <csetjmp>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "image/codecs.h"

namespace k3::image::detail {

namespace {

// A progressive file decodes every scan over the whole image; ordinary encoders write at most
// a dozen or two, so more is a file built to burn CPU (libjpeg-turbo's own tools cap it too).
constexpr int kMaxScans = 100;

// What the callbacks share with the decoder: plain data only (it lives across longjmps).
struct JpegError {
  jpeg_error_mgr mgr;  // first: libjpeg hands back a pointer to it
  jmp_buf jump;
  bool too_many_scans;  // refused by on_progress
  bool out_of_memory;   // over max_memory_to_use
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void jump_out(j_common_ptr c) {
  auto* e = reinterpret_cast<JpegError*>(c->err);
  c->err->format_message(c, e->message);
  e->out_of_memory = c->err->msg_code == JERR_NO_BACKING_STORE;
  std::longjmp(e->jump, 1);
}

void on_error_exit(j_common_ptr c) { jump_out(c); }

// Level -1 is a corrupt-data warning, higher levels are traces. Damage to the pixels is fatal;
// the rest (extra bytes between markers, an unknown JFIF version or Adobe transform) is not.
void on_message(j_common_ptr c, int level) {
  if (level >= 0) return;
  switch (c->err->msg_code) {
    case JWRN_JPEG_EOF:
    case JWRN_HIT_MARKER:
    case JWRN_HUFF_BAD_CODE:
    case JWRN_ARITH_BAD_CODE:
    case JWRN_MUST_RESYNC:
    case JWRN_NOT_SEQUENTIAL:
    case JWRN_BOGUS_PROGRESSION: jump_out(c);
    default: ++c->err->num_warnings;
  }
}

void on_output(j_common_ptr) {}  // nothing is printed

struct JpegProgress {
  jpeg_progress_mgr mgr;  // first, as above
};

void on_progress(j_common_ptr c) {
  if (!c->is_decompressor) return;
  const auto* d = reinterpret_cast<j_decompress_ptr>(c);
  if (d->input_scan_number > kMaxScans) {
    auto* e = reinterpret_cast<JpegError*>(c->err);
    e->too_many_scans = true;
    std::longjmp(e->jump, 1);
  }
}

struct JpegHandle {
  jpeg_decompress_struct cinfo{};  // zeroed: destroying it before creation is harmless
  JpegError error{};
  JpegProgress progress{};
  ~JpegHandle() { jpeg_destroy_decompress(&cinfo); }
};

bool read_header(JpegHandle* h, const uint8_t* data, size_t size) {
  if (setjmp(h->error.jump)) return false;
  jpeg_create_decompress(&h->cinfo);
  h->cinfo.progress = &h->progress.mgr;
  jpeg_mem_src(&h->cinfo, data, static_cast<unsigned long>(size));
  if (jpeg_read_header(&h->cinfo, TRUE) != JPEG_HEADER_OK) {
    std::snprintf(h->error.message, sizeof h->error.message, "tables only, no image");
    return false;
  }
  return true;
}

// Decodes every row into `out` (width * 3 bytes a row); a CMYK file through `cmyk_row`
// (width * 4 bytes), converted as stb_image does: Adobe's inverted CMYK, R = C * K / 255.
bool read_pixels(JpegHandle* h, uint8_t* out, uint8_t* cmyk_row, uint32_t width, uint32_t height) {
  if (setjmp(h->error.jump)) return false;
  j_decompress_ptr c = &h->cinfo;
  jpeg_start_decompress(c);
  if (c->output_width != width || c->output_height != height || c->output_components != (cmyk_row ? 4 : 3)) {
    std::snprintf(h->error.message, sizeof h->error.message, "decodes to %ux%u with %d components",
                  c->output_width, c->output_height, c->output_components);
    return false;
  }
  while (c->output_scanline < c->output_height) {
    uint8_t* dst = out + static_cast<size_t>(c->output_scanline) * width * 3;
    JSAMPROW row = cmyk_row ? cmyk_row : dst;
    if (jpeg_read_scanlines(c, &row, 1) != 1) {
      std::snprintf(h->error.message, sizeof h->error.message, "no scanline returned");
      return false;
    }
    for (size_t x = 0; cmyk_row && x < width; ++x) {
      const unsigned k = cmyk_row[4 * x + 3];
      for (int ch = 0; ch < 3; ++ch) {
        const unsigned t = cmyk_row[4 * x + ch] * k + 128;
        dst[3 * x + ch] = static_cast<uint8_t>((t + (t >> 8)) >> 8);
      }
    }
  }
  jpeg_finish_decompress(c);
  return true;
}

const char* color_space_name(J_COLOR_SPACE s) {
  switch (s) {
    case JCS_GRAYSCALE: return "grey";
    case JCS_RGB: return "RGB";
    case JCS_YCbCr: return "YCbCr";
    case JCS_CMYK: return "CMYK";
    case JCS_YCCK: return "YCCK";
    default: return "unknown";
  }
}

}  // namespace

Rgb8Image decode_jpeg(std::span<const uint8_t> bytes, const Limits& limits) {
  JpegHandle h;
  h.cinfo.err = jpeg_std_error(&h.error.mgr);
  h.error.mgr.error_exit = on_error_exit;
  h.error.mgr.emit_message = on_message;
  h.error.mgr.output_message = on_output;
  h.progress.mgr.progress_monitor = on_progress;
  if (!read_header(&h, bytes.data(), bytes.size()))
    fail("image: JPEG truncated or corrupt: {}", h.error.message);
  jpeg_decompress_struct& c = h.cinfo;
  check_size("JPEG", c.image_width, c.image_height, limits);
  const J_COLOR_SPACE in = c.jpeg_color_space;
  const bool cmyk = in == JCS_CMYK || in == JCS_YCCK;
  const bool ok = (in == JCS_GRAYSCALE && c.num_components == 1) ||
                  ((in == JCS_YCbCr || in == JCS_RGB) && c.num_components == 3) ||
                  (cmyk && c.num_components == 4);
  if (!ok)
    fail(
        "image: JPEG with {} components in colour space {} is not supported (supported: grey, YCbCr, RGB, "
        "CMYK, YCCK)",
        c.num_components, color_space_name(in));
  c.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  // Whole-image coefficient buffers (progressive or multi-scan files) need 2 bytes a coefficient
  // for each of at most 4 components, the image rounded up to the largest block grid (under 64
  // pixels a side); a file that needs more is hostile.
  c.mem->max_memory_to_use = static_cast<long>(
      2 * 4 * (uint64_t{c.image_width} + 64) * (uint64_t{c.image_height} + 64) + (uint64_t{16} << 20));
  Rgb8Image image = blank_image(c.image_width, c.image_height);
  std::vector<uint8_t> cmyk_row(cmyk ? size_t{c.image_width} * 4 : 0);
  if (!read_pixels(&h, image.rgb.data(), cmyk ? cmyk_row.data() : nullptr, image.width, image.height)) {
    if (h.error.too_many_scans)
      fail("image: JPEG has more than {} scans (ordinary encoders write about 10): refused", kMaxScans);
    if (h.error.out_of_memory)
      fail("image: JPEG needs more working memory than a {}x{} image can ({} bytes): refused", image.width,
           image.height, c.mem->max_memory_to_use);
    fail("image: JPEG truncated or corrupt: {}", h.error.message);
  }
  return image;
}

}  // namespace k3::image::detail
