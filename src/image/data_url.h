// image/data_url: the bytes of a `data:` URL, as OpenAI clients send images (image_url parts).
// Contract: parse_data_url(url, max_bytes) accepts `data:[<media type>][;<parameter>]*;base64,
// <payload>` (the scheme and `;base64` in any case) and returns the media type (lower case,
// parameters dropped, empty when none was given) and the decoded payload. Only base64 payloads
// are accepted; the payload is strict base64 (RFC 4648 alphabet, `=` padding only at the end,
// a length that is a multiple of four) except that ASCII whitespace between characters is
// skipped. The payload's encoded length is checked against max_bytes before anything is decoded.
// Every failure is a k3::Error starting "image: ": an `http(s)://` URL ("only data: URLs are
// accepted"), another scheme, a missing comma, no `;base64`, an empty payload, a bad character
// (with its offset), bad padding, over max_bytes. The media type is informational: the image is
// later decoded by its bytes (image/image.h), so a mislabelled file still decodes as what it is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace k3::image {

struct DataUrl {
  std::string media_type;      // "image/png", or "" when the URL names none
  std::vector<uint8_t> bytes;  // the decoded payload
};

DataUrl parse_data_url(std::string_view url, size_t max_bytes);

// Standard base64 with `=` padding (RFC 4648): what a client puts in a data URL (the tests and
// the fuzz seeds build their URLs with it).
std::string encode_base64(std::span<const uint8_t> bytes);

// Strict base64 as above; `what` leads the error messages ("image: data URL payload").
std::vector<uint8_t> decode_base64(std::string_view text, size_t max_bytes, std::string_view what);

}  // namespace k3::image
