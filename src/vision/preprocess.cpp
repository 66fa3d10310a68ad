// Compiled with -ffp-contract=off (CMakeLists.txt): the resize is defined by float32 steps
// that truncate to 8 bits, and a fused multiply-add would move some pixels by one level.
#include "vision/preprocess.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace k3::vision {

ImageSize target_size(ImageSize in, int64_t align, int64_t min_pixels, int64_t max_pixels) {
  const float f = static_cast<float>(align);
  const auto round_to = [&](float x) { return static_cast<int64_t>(std::round(x / f)) * align; };
  const auto ceil_to = [&](float x) { return static_cast<int64_t>(std::ceil(x / f)) * align; };
  const auto floor_to = [&](float x) { return static_cast<int64_t>(std::floor(x / f)) * align; };
  const float w = static_cast<float>(in.width), h = static_cast<float>(in.height);
  int64_t wb = std::max(align, round_to(w));
  int64_t hb = std::max(align, round_to(h));
  if (max_pixels > 0 && hb * wb > max_pixels) {
    const float beta = std::sqrt(h * w / static_cast<float>(max_pixels));
    hb = std::max(align, floor_to(h / beta));
    wb = std::max(align, floor_to(w / beta));
  } else if (min_pixels > 0 && hb * wb < min_pixels) {
    const float beta = std::sqrt(static_cast<float>(min_pixels) / (h * w));
    hb = ceil_to(h * beta);
    wb = ceil_to(w * beta);
  }
  return {wb, hb};
}

namespace {

float lerp(float s, float e, float t) { return s + (e - s) * t; }

// Corner-aligned: the first and last output pixels sample the first and last input pixels.
void resize_bilinear(RgbView src, RgbImage& dst, int64_t tw, int64_t th) {
  dst.width = tw;
  dst.height = th;
  dst.rgb.assign(static_cast<size_t>(tw * th * 3), 0);
  const float xr = tw > 1 ? static_cast<float>(src.width - 1) / static_cast<float>(tw - 1) : 0.0f;
  const float yr = th > 1 ? static_cast<float>(src.height - 1) / static_cast<float>(th - 1) : 0.0f;
  const auto px = [&](int64_t x, int64_t y) { return src.rgb + (y * src.width + x) * 3; };
  for (int64_t y = 0; y < th; ++y) {
    const float py = static_cast<float>(y) * yr;
    const int64_t y0 = std::min(static_cast<int64_t>(py), src.height - 1);
    const int64_t y1 = std::min(y0 + 1, src.height - 1);
    const float yf = py - static_cast<float>(y0);
    for (int64_t x = 0; x < tw; ++x) {
      const float pxf = static_cast<float>(x) * xr;
      const int64_t x0 = std::min(static_cast<int64_t>(pxf), src.width - 1);
      const int64_t x1 = std::min(x0 + 1, src.width - 1);
      const float xf = pxf - static_cast<float>(x0);
      const uint8_t *p00 = px(x0, y0), *p10 = px(x1, y0), *p01 = px(x0, y1), *p11 = px(x1, y1);
      uint8_t* out = dst.rgb.data() + (y * tw + x) * 3;
      for (int c = 0; c < 3; ++c) {
        const float top = lerp(static_cast<float>(p00[c]), static_cast<float>(p10[c]), xf);
        const float bottom = lerp(static_cast<float>(p01[c]), static_cast<float>(p11[c]), xf);
        out[c] = static_cast<uint8_t>(lerp(top, bottom, yf));
      }
    }
  }
}

}  // namespace

RgbImage fit_into(RgbView img, ImageSize box) {
  RgbImage out;
  if (img.width == box.width && img.height == box.height) {
    out.width = img.width;
    out.height = img.height;
    out.rgb.assign(img.rgb, img.rgb + img.width * img.height * 3);
    return out;
  }
  const float scale = std::min(static_cast<float>(box.width) / static_cast<float>(img.width),
                               static_cast<float>(box.height) / static_cast<float>(img.height));
  const int64_t nw =
      std::min(static_cast<int64_t>(std::ceil(static_cast<float>(img.width) * scale)), box.width);
  const int64_t nh =
      std::min(static_cast<int64_t>(std::ceil(static_cast<float>(img.height) * scale)), box.height);
  RgbImage scaled;
  resize_bilinear(img, scaled, std::max<int64_t>(nw, 1), std::max<int64_t>(nh, 1));
  out.width = box.width;
  out.height = box.height;
  out.rgb.assign(static_cast<size_t>(box.width * box.height * 3), 0);  // black
  const int64_t ox = (box.width - scaled.width) / 2, oy = (box.height - scaled.height) / 2;
  for (int64_t y = 0; y < scaled.height; ++y)
    std::memcpy(out.rgb.data() + ((y + oy) * box.width + ox) * 3, scaled.rgb.data() + y * scaled.width * 3,
                static_cast<size_t>(scaled.width * 3));
  return out;
}

std::vector<float> patchify(RgbView img, const TowerHparams& hp) {
  const int64_t p = hp.patch, gw = img.width / p, gh = img.height / p;
  const int64_t per = 3 * p * p;
  std::vector<float> out(static_cast<size_t>(gw * gh * per));
  for (int64_t py = 0; py < gh; ++py)
    for (int64_t px = 0; px < gw; ++px) {
      float* dst = out.data() + (py * gw + px) * per;
      for (int c = 0; c < 3; ++c)
        for (int64_t ky = 0; ky < p; ++ky) {
          const uint8_t* row = img.rgb + ((py * p + ky) * img.width + px * p) * 3 + c;
          for (int64_t kx = 0; kx < p; ++kx)
            *dst++ = (static_cast<float>(row[kx * 3]) / 255.0f - hp.mean[c]) / hp.std[c];
        }
    }
  return out;
}

}  // namespace k3::vision
