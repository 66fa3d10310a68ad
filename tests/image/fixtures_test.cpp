// image: the files of tests/data/image/ (written by fuzz/make_image_seeds, fuzz_image's seeds,
// and any input fuzzing turns up) do what their names say: "ok-WxH-..." decode to W x H,
// "bad-..." end in a k3::Error starting "image: "; a ".url" file is a data: URL parsed first.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <cstdio>
#include <iterator>

#include "core/error.h"
#include "image/data_url.h"
#include "image/image.h"

namespace img = k3::image;

TEST(ImageFixtures, EachFileDoesWhatItsNameSays) {
  const std::filesystem::path dir = std::filesystem::path(K3_TEST_DATA_DIR) / "image";
  int ok = 0, bad = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    unsigned width = 0, height = 0;
    int end = 0;  // "ok-WxH-": the size the file must decode to
    const bool want_ok = std::sscanf(name.c_str(), "ok-%ux%u-%n", &width, &height, &end) == 2 && end > 0;
    ASSERT_TRUE(want_ok || name.starts_with("bad-")) << name << ": neither ok-WxH-... nor bad-...";
    try {
      img::Rgb8Image im;
      if (entry.path().extension() == ".url") im = img::decode(img::parse_data_url(bytes, 1 << 20).bytes);
      else im = img::decode_file(entry.path().string());
      EXPECT_TRUE(want_ok) << name << " decoded";
      if (want_ok) {
        EXPECT_EQ(im.width, width) << name;
        EXPECT_EQ(im.height, height) << name;
        EXPECT_EQ(im.rgb.size(), size_t{im.width} * im.height * 3) << name;
      }
    } catch (const k3::Error& e) {
      EXPECT_FALSE(want_ok) << name << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("image: "), std::string::npos) << name << ": " << e.what();
    }
    ++(want_ok ? ok : bad);
  }
  EXPECT_GE(ok, 20);
  EXPECT_GE(bad, 8);
}
