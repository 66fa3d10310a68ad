// Preprocessing: the target sizes of the reference's aspect-preserving resize (worked by hand
// from its definition), the resize's corner alignment and padding, and patch order.
#include <gtest/gtest.h>

#include "vision/preprocess.h"

namespace k3::vision {
namespace {

TEST(TargetSize, RoundsEachSideToTheAlignment) {
  EXPECT_EQ(target_size({56, 56}, 28, 1568, 12544), (ImageSize{56, 56}));
  EXPECT_EQ(target_size({100, 60}, 28, 1568, 12544), (ImageSize{112, 56}));  // 3.57→4, 2.14→2
  EXPECT_EQ(target_size({1, 1}, 28, 0, 0), (ImageSize{28, 28}));             // never below one cell
}

TEST(TargetSize, ScalesDownToTheMaximum) {
  // 300×200 at most 12544 px: β = √(60000/12544) = 2.187; 200/β = 91.4 → 84, 300/β = 137.2 → 112.
  EXPECT_EQ(target_size({300, 200}, 28, 1568, 12544), (ImageSize{112, 84}));
  const ImageSize big = target_size({4000, 3000}, 28, 1568, 16384 * 196);
  EXPECT_LE(big.width * big.height, 16384 * 196);
  EXPECT_EQ(big.width % 28, 0);
}

TEST(TargetSize, ScalesUpToTheMinimum) {
  // 37×91 rounds to 28×84 = 2352 ≥ 1568: kept. 20×20 rounds to 28×28 = 784 < 1568:
  // β = √(1568/400) = 1.98; 20·β = 39.6 → ceil to 56.
  EXPECT_EQ(target_size({37, 91}, 28, 1568, 12544), (ImageSize{28, 84}));
  EXPECT_EQ(target_size({20, 20}, 28, 1568, 12544), (ImageSize{56, 56}));
}

TEST(FitInto, SameSizeIsACopy) {
  std::vector<uint8_t> px(4 * 3 * 3);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(i * 7);
  const RgbImage out = fit_into({4, 3, px.data()}, {4, 3});
  EXPECT_EQ(out.rgb, px);
}

TEST(FitInto, CornerAlignedAndCentredOnBlack) {
  // A 2×1 image (black, white) into a 4×4 box: scale min(2, 4) = 2 → 4×2, rows 1–2 of the box.
  const uint8_t px[6] = {0, 0, 0, 255, 255, 255};
  const RgbImage out = fit_into({2, 1, px}, {4, 4});
  ASSERT_EQ(out.width, 4);
  ASSERT_EQ(out.height, 4);
  const auto at = [&](int x, int y) { return out.rgb[(y * 4 + x) * 3]; };
  for (int x = 0; x < 4; ++x) {
    EXPECT_EQ(at(x, 0), 0);
    EXPECT_EQ(at(x, 3), 0);
  }
  EXPECT_EQ(at(0, 1), 0);    // the first column samples the first pixel exactly
  EXPECT_EQ(at(3, 1), 255);  // the last column the last one
  EXPECT_EQ(at(1, 1), 85);   // 255 · 1/3, truncated
  EXPECT_EQ(at(2, 2), 170);  // 255 · 2/3, truncated
}

TEST(Patchify, PatchesRowMajorChannelsFirst) {
  TowerHparams hp;
  hp.patch = 2;
  hp.mean[0] = hp.mean[1] = hp.mean[2] = 0;
  hp.std[0] = hp.std[1] = hp.std[2] = 1;
  // 4×2 image: two patches side by side; pixel (x, y) has R = 10x + y, G = 100, B = 200.
  std::vector<uint8_t> px(4 * 2 * 3);
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 4; ++x) {
      px[(y * 4 + x) * 3] = static_cast<uint8_t>(10 * x + y);
      px[(y * 4 + x) * 3 + 1] = 100;
      px[(y * 4 + x) * 3 + 2] = 200;
    }
  const std::vector<float> p = patchify({4, 2, px.data()}, hp);
  ASSERT_EQ(p.size(), 2u * 12);
  // Second patch, red channel, row 1, column 0: pixel (2, 1) → 21.
  EXPECT_FLOAT_EQ(p[12 + 0 * 4 + 1 * 2 + 0], 21.0f / 255.0f);
  EXPECT_FLOAT_EQ(p[12 + 1 * 4], 100.0f / 255.0f);
  EXPECT_FLOAT_EQ(p[2 * 4 + 3], 200.0f / 255.0f);
}

}  // namespace
}  // namespace k3::vision
