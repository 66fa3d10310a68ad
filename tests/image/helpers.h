// tests/image/helpers: what the image tests share: the error a decode throws, pixel comparisons.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <span>
#include <string>

#include "core/error.h"
#include "image/image.h"

namespace imgtest {

// The message of the k3::Error a decode throws, or "" when it succeeds. Any other exception
// escapes and fails the test.
inline std::string decode_error(std::span<const uint8_t> bytes, const k3::image::Limits& limits = {}) {
  try {
    k3::image::decode(bytes, limits);
  } catch (const k3::Error& e) { return e.what(); }
  return "";
}

// The largest difference of any sample, and the mean difference.
struct Diff {
  int max = 0;
  double mean = 0;
};
inline Diff diff(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  Diff d;
  EXPECT_EQ(a.size(), b.size());
  if (a.size() != b.size() || a.empty()) return d;
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const int v = std::abs(int{a[i]} - int{b[i]});
    d.max = std::max(d.max, v);
    sum += v;
  }
  d.mean = sum / static_cast<double>(a.size());
  return d;
}

// The RGB channels of RGBA pixels (alpha dropped, as the decoder does).
inline std::vector<uint8_t> drop_alpha(std::span<const uint8_t> rgba) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 3 < rgba.size(); i += 4) out.insert(out.end(), {rgba[i], rgba[i + 1], rgba[i + 2]});
  return out;
}

// Grey samples as RGB.
inline std::vector<uint8_t> grey_to_rgb(std::span<const uint8_t> grey) {
  std::vector<uint8_t> out;
  for (uint8_t g : grey) out.insert(out.end(), {g, g, g});
  return out;
}

}  // namespace imgtest
