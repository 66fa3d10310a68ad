// image/webp: WebP through libwebp (stills: lossy, lossless, with alpha) and libwebpdemux
// (animations: the first frame, composed on the canvas). libwebp reports errors by status
// codes, so nothing here jumps; a still decodes straight into the image's own buffer.
#include <webp/decode.h>
#include <webp/demux.h>

#include "core/error.h"
#include "image/codecs.h"

namespace k3::image::detail {

namespace {

const char* status_text(VP8StatusCode s) {
  switch (s) {
    case VP8_STATUS_OK: return "ok";
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_SUSPENDED: return "suspended";
    case VP8_STATUS_USER_ABORT: return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "not enough data (truncated)";
  }
  return "unknown status";
}

struct AnimDecoder {
  WebPAnimDecoder* dec = nullptr;
  ~AnimDecoder() { WebPAnimDecoderDelete(dec); }
};

// The first frame of an animation as the canvas shows it (frames are composed on a transparent
// black canvas; the alpha is then dropped like any other).
Rgb8Image first_frame(std::span<const uint8_t> bytes, uint32_t width, uint32_t height) {
  WebPAnimDecoderOptions options;
  if (!WebPAnimDecoderOptionsInit(&options)) fail("image: WebP: libwebpdemux version mismatch");
  options.color_mode = MODE_RGBA;
  options.use_threads = 0;
  const WebPData data{bytes.data(), bytes.size()};
  AnimDecoder a;
  a.dec = WebPAnimDecoderNew(&data, &options);
  if (!a.dec) fail("image: WebP animation truncated or corrupt (its frames do not parse)");
  WebPAnimInfo info;
  if (!WebPAnimDecoderGetInfo(a.dec, &info) || info.canvas_width != width || info.canvas_height != height)
    fail("image: WebP animation's canvas does not match its header ({}x{})", width, height);
  uint8_t* rgba = nullptr;
  int timestamp = 0;
  if (info.frame_count == 0 || !WebPAnimDecoderGetNext(a.dec, &rgba, &timestamp) || !rgba)
    fail("image: WebP animation's first frame is truncated or corrupt");
  Rgb8Image image = blank_image(width, height);
  const size_t n = size_t{width} * height;
  for (size_t i = 0; i < n; ++i)
    for (int c = 0; c < 3; ++c) image.rgb[3 * i + c] = rgba[4 * i + c];
  return image;
}

}  // namespace

Rgb8Image decode_webp(std::span<const uint8_t> bytes, const Limits& limits) {
  WebPBitstreamFeatures features;
  const VP8StatusCode s = WebPGetFeatures(bytes.data(), bytes.size(), &features);
  if (s != VP8_STATUS_OK) fail("image: WebP truncated or corrupt: {} in its header", status_text(s));
  check_size("WebP", static_cast<uint64_t>(features.width), static_cast<uint64_t>(features.height), limits);
  const auto width = static_cast<uint32_t>(features.width), height = static_cast<uint32_t>(features.height);
  if (features.has_animation) return first_frame(bytes, width, height);
  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config)) fail("image: WebP: libwebp version mismatch");
  Rgb8Image image = blank_image(width, height);
  config.output.colorspace = MODE_RGB;  // alpha, if any, dropped
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = image.rgb.data();
  config.output.u.RGBA.stride = static_cast<int>(width * 3);
  config.output.u.RGBA.size = image.rgb.size();
  const VP8StatusCode d = WebPDecode(bytes.data(), bytes.size(), &config);
  WebPFreeDecBuffer(&config.output);  // the API's rule; with external memory it frees nothing of ours
  if (d != VP8_STATUS_OK) fail("image: WebP truncated or corrupt: {}", status_text(d));
  if (config.output.width != features.width || config.output.height != features.height)
    fail("image: WebP decoded to {}x{}, not the {}x{} of its header", config.output.width,
         config.output.height, width, height);
  return image;
}

}  // namespace k3::image::detail
