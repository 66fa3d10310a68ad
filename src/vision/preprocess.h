// vision/preprocess: from decoded RGB pixels to the tower's input, exactly as the reference
// (llama.cpp's mtmd, `kimik3`) does it, so that the same image gives the same patch grid and
// the same pixels (docs/vision.md, "Preprocessing"):
//   1. target_size: keep the aspect ratio, round each side to a multiple of patch·merge, then
//      scale down to image_max_pixels or up to image_min_pixels (float32 steps, as the reference);
//   2. fit_into: when the size changes, a corner-aligned bilinear resize (float32, truncated to
//      8 bits) of the image scaled to fit the target box (sides rounded up), centred on black;
//   3. patchify: x/255, minus the channel mean, over the channel std, cut into p×p patches in
//      row-major patch order, each patch in (channel, row, column) order.
// Contract: inputs are validated by the caller (width, height ≥ 1; rgb holds w·h·3 bytes).
#pragma once

#include <cstdint>
#include <vector>

#include "vision/tower.h"

namespace k3::vision {

struct ImageSize {
  int64_t width = 0, height = 0;
  bool operator==(const ImageSize&) const = default;
};

// An RGB image, 3 bytes per pixel, row-major, no padding between rows.
struct RgbView {
  int64_t width = 0, height = 0;
  const uint8_t* rgb = nullptr;
};

struct RgbImage {
  int64_t width = 0, height = 0;
  std::vector<uint8_t> rgb;
  RgbView view() const { return {width, height, rgb.data()}; }
};

ImageSize target_size(ImageSize in, int64_t align, int64_t min_pixels, int64_t max_pixels);

// The image resized into `box` as the reference does (a copy when the sizes are equal).
RgbImage fit_into(RgbView img, ImageSize box);

// n_patches × (3·p·p) floats; the image's sides must be multiples of p.
std::vector<float> patchify(RgbView img, const TowerHparams& hp);

}  // namespace k3::vision
