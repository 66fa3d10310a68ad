// image/data_url: base64 data URLs in, bytes and media type out; every other URL, encoding and
// damage a k3::Error naming it; the size limit checked on the encoded length; and a data URL
// that calls its JPEG "image/png" still decodes as the JPEG it is.
#include <gtest/gtest.h>

#include "core/error.h"
#include "encoders.h"
#include "image/data_url.h"
#include "image/image.h"

namespace img = k3::image;
using imgtest::Bytes;

namespace {

std::string error_of(std::string_view url, size_t max_bytes = 1 << 20) {
  try {
    img::parse_data_url(url, max_bytes);
  } catch (const k3::Error& e) { return e.what(); }
  return "";
}

#define EXPECT_URL_ERROR(url_, part_, ...)                                          \
  do {                                                                              \
    const std::string e_ = error_of(url_ __VA_OPT__(, ) __VA_ARGS__);               \
    EXPECT_NE(e_.find(part_), std::string::npos)                                    \
        << "url '" << std::string(url_).substr(0, 80) << "': error '" << e_ << "'"; \
  } while (0)

}  // namespace

// RFC 4648's vectors: the encoder the other tests build their URLs with is checked on its own.
TEST(DataUrl, EncoderMatchesRfc4648) {
  const auto enc = [](std::string_view s) {
    return img::encode_base64({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
  };
  EXPECT_EQ(enc(""), "");
  EXPECT_EQ(enc("f"), "Zg==");
  EXPECT_EQ(enc("fo"), "Zm8=");
  EXPECT_EQ(enc("foo"), "Zm9v");
  EXPECT_EQ(enc("foob"), "Zm9vYg==");
  EXPECT_EQ(enc("fooba"), "Zm9vYmE=");
  EXPECT_EQ(enc("foobar"), "Zm9vYmFy");
  EXPECT_EQ(enc("\xff\xfe"), "//4=");
}

TEST(DataUrl, DecodesBase64OfEveryLength) {
  for (size_t n = 1; n < 40; ++n) {
    const Bytes b = imgtest::noise(static_cast<uint32_t>(n), 1, 1, static_cast<uint32_t>(n));
    const auto d = img::parse_data_url("data:image/png;base64," + img::encode_base64(b), 1 << 20);
    EXPECT_EQ(d.bytes, b) << n;
    EXPECT_EQ(d.media_type, "image/png");
  }
}

TEST(DataUrl, MediaTypeParametersCaseAndWhitespace) {
  const Bytes b = {1, 2, 3, 4, 5};
  auto d = img::parse_data_url("DATA:Image/JPEG;name=x.jpg;BASE64," + img::encode_base64(b), 100);
  EXPECT_EQ(d.media_type, "image/jpeg");
  EXPECT_EQ(d.bytes, b);
  d = img::parse_data_url("data:;base64," + img::encode_base64(b), 100);
  EXPECT_EQ(d.media_type, "");
  std::string wrapped = img::encode_base64(imgtest::noise(100, 1, 1, 1));
  for (size_t i = 76; i < wrapped.size(); i += 78) wrapped.insert(i, "\r\n");  // MIME line breaks
  EXPECT_EQ(img::parse_data_url("data:image/gif;base64," + wrapped, 1000).bytes,
            imgtest::noise(100, 1, 1, 1));
}

TEST(DataUrl, OtherUrlsAreRefused) {
  EXPECT_URL_ERROR("", "image: empty URL");
  EXPECT_URL_ERROR("https://example.com/cat.png", "image: only data: URLs are accepted, not http(s) URLs");
  EXPECT_URL_ERROR("HTTP://example.com/cat.png", "not http(s) URLs");
  EXPECT_URL_ERROR("file:///etc/passwd", "only data: URLs are accepted, not file: URLs");
  EXPECT_URL_ERROR("iVBORw0KGgo=", "image: not a data: URL");
}

TEST(DataUrl, MalformedDataUrls) {
  EXPECT_URL_ERROR("data:image/png;base64", "no ',' before its payload");
  EXPECT_URL_ERROR("data:image/png,%89PNG", "not base64 (no ';base64'");
  EXPECT_URL_ERROR("data:image/png;base64;x=y,AAAA", "not base64");  // ;base64 must come last
  EXPECT_URL_ERROR("data:image/png;base64,", "image: data URL has an empty payload");
  EXPECT_URL_ERROR("data:image/png;base64,  ", "empty payload");
}

TEST(DataUrl, BadBase64) {
  EXPECT_URL_ERROR("data:image/png;base64,AAA*", "'*' at offset 3 is not a base64 character");
  EXPECT_URL_ERROR("data:image/png;base64,AA-_", "base64url is not accepted");
  EXPECT_URL_ERROR("data:image/png;base64,AA%3D", "percent-encoded payloads are not accepted");
  EXPECT_URL_ERROR("data:image/png;base64,AA\x01=", "\\x01 at offset 2");
  EXPECT_URL_ERROR("data:image/png;base64,AAAAA", "5 base64 characters, not a multiple of 4");
  EXPECT_URL_ERROR("data:image/png;base64,AAA", "not a multiple of 4");  // unpadded
  EXPECT_URL_ERROR("data:image/png;base64,A===", "misplaced '=' padding at offset 1");
  EXPECT_URL_ERROR("data:image/png;base64,AA==AAAA", "'A' after the '=' padding at offset 4");
  EXPECT_URL_ERROR("data:image/png;base64,=AAA", "misplaced '='");
}

TEST(DataUrl, SizeLimitOnTheEncodedLength) {
  const std::string payload = img::encode_base64(Bytes(3000, 7));  // 4000 characters
  EXPECT_EQ(img::parse_data_url("data:image/png;base64," + payload, 3000).bytes.size(), 3000u);
  EXPECT_URL_ERROR("data:image/png;base64," + payload, "is 4000 characters, over the 2995-byte limit", 2995);
  // up to 2 bytes over, within the last group of 4 characters: caught after decoding
  EXPECT_URL_ERROR("data:image/png;base64," + payload, "decodes to 3000 bytes, over the 2999-byte limit",
                   2999);
  // a huge payload is refused without being read: one bad character at its end goes unseen
  const std::string huge = "data:image/png;base64," + std::string(10'000'000, 'A') + "*";
  EXPECT_URL_ERROR(huge, "over the 1048576-byte limit");
}

TEST(DataUrl, MislabelledImageDecodesAsWhatItIs) {
  const Bytes px = imgtest::gradient(16, 8, 3);
  const Bytes jpeg = imgtest::encode_jpeg({.width = 16, .height = 8, .quality = 95}, px);
  const auto d = img::parse_data_url("data:image/png;base64," + img::encode_base64(jpeg), 1 << 20);
  EXPECT_EQ(d.media_type, "image/png");
  EXPECT_EQ(img::sniff(d.bytes), img::Format::jpeg);
  const auto im = img::decode(d.bytes);
  EXPECT_EQ(im.width, 16u);
  EXPECT_EQ(im.height, 8u);
}
