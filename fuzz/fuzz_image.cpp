// fuzz/fuzz_image: libFuzzer target for the image decoders (src/image). An input that starts
// with "data:" or "http" is a URL: it goes through image::parse_data_url first and its payload
// is decoded; any other input is decoded as it is. Either must give an image whose buffer holds
// exactly width x height RGB pixels within the limits, or throw k3::Error with a message that
// starts "image: "; anything else (a crash, a sanitizer report, another exception escaping) is
// a bug. The limits are smaller than the defaults so that one input stays cheap.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/error.h"
#include "image/data_url.h"
#include "image/image.h"

namespace {

constexpr k3::image::Limits kLimits{.max_bytes = 1 << 20, .max_side = 4096, .max_pixels = 4'000'000};

void check(const k3::image::Rgb8Image& im) {
  const bool ok = im.width > 0 && im.height > 0 && im.width <= kLimits.max_side &&
                  im.height <= kLimits.max_side && uint64_t{im.width} * im.height <= kLimits.max_pixels &&
                  im.rgb.size() == size_t{im.width} * im.height * 3;
  if (!ok) std::abort();
  if (k3::image::content_hash(im) == 1) std::abort();  // reads every pixel (and never happens)
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    if (text.starts_with("data:") || text.starts_with("http")) {
      const auto url = k3::image::parse_data_url(text, kLimits.max_bytes);
      check(k3::image::decode(url.bytes, kLimits));
    } else {
      check(k3::image::decode({data, size}, kLimits));
    }
  } catch (const k3::Error& e) {
    if (std::strncmp(e.what(), "image: ", 7) != 0) std::abort();
  }
  return 0;
}
