// image/data_url: see data_url.h.
#include "image/data_url.h"

#include <array>

#include "core/error.h"

namespace k3::image {

namespace {

constexpr std::array<int8_t, 256> make_base64_table() {
  std::array<int8_t, 256> t{};
  for (auto& v : t) v = -1;
  const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (int i = 0; i < 64; ++i) t[static_cast<uint8_t>(alphabet[i])] = static_cast<int8_t>(i);
  return t;
}
constexpr std::array<int8_t, 256> kBase64 = make_base64_table();

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }
char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool starts_with_nocase(std::string_view s, std::string_view prefix) {
  if (s.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (lower(s[i]) != prefix[i]) return false;
  return true;
}

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = lower(c);
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// A character as a message can show it: itself when printable ASCII, else \xNN.
std::string shown(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return fmt::format("'{}'", c);
  return fmt::format("\\x{:02x}", u);
}

// The first `n` characters of a URL, safe to print.
std::string snippet(std::string_view s, size_t n = 48) {
  std::string out;
  for (size_t i = 0; i < s.size() && i < n; ++i) {
    const auto u = static_cast<unsigned char>(s[i]);
    out += u >= 0x20 && u < 0x7f ? std::string(1, s[i]) : fmt::format("\\x{:02x}", u);
  }
  if (s.size() > n) out += "...";
  return out;
}

// The most base64 characters that can encode max_bytes bytes.
uint64_t encoded_limit(size_t max_bytes) { return (static_cast<uint64_t>(max_bytes) + 2) / 3 * 4; }

}  // namespace

std::vector<uint8_t> decode_base64(std::string_view text, size_t max_bytes, std::string_view what) {
  if (text.size() > encoded_limit(max_bytes))
    fail("{} is {} characters, over the {}-byte limit (at most {} base64 characters)", what, text.size(),
         max_bytes, encoded_limit(max_bytes));
  std::vector<uint8_t> out;
  out.reserve(text.size() / 4 * 3);
  uint32_t quad = 0;
  size_t count = 0;  // significant characters, '=' included
  int pads = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (is_space(c)) continue;
    if (c == '=') {
      if (count % 4 < 2) fail("{}: misplaced '=' padding at offset {}", what, i);
      ++pads, ++count;
      continue;
    }
    if (pads) fail("{}: {} after the '=' padding at offset {}", what, shown(c), i);
    const int v = kBase64[static_cast<uint8_t>(c)];
    if (v < 0) {
      const char* hint = c == '-' || c == '_' ? " (base64url is not accepted: use '+' and '/')"
                         : c == '%'           ? " (percent-encoded payloads are not accepted)"
                                              : "";
      fail("{}: {} at offset {} is not a base64 character{}", what, shown(c), i, hint);
    }
    quad = quad << 6 | static_cast<uint32_t>(v);
    if (++count % 4 == 0) {
      out.push_back(static_cast<uint8_t>(quad >> 16));
      out.push_back(static_cast<uint8_t>(quad >> 8));
      out.push_back(static_cast<uint8_t>(quad));
      quad = 0;
    }
  }
  if (count == 0) fail("{} is empty", what);
  if (count % 4 != 0)
    fail("{}: {} base64 characters, not a multiple of 4 (truncated, or the '=' padding is missing)", what,
         count);
  if (pads == 1) {  // the last group held 3 characters: 18 bits, 2 bytes
    out.push_back(static_cast<uint8_t>(quad >> 10));
    out.push_back(static_cast<uint8_t>(quad >> 2));
  } else if (pads == 2) {  // 2 characters: 12 bits, 1 byte
    out.push_back(static_cast<uint8_t>(quad >> 4));
  }
  if (out.size() > max_bytes)
    fail("{} decodes to {} bytes, over the {}-byte limit", what, out.size(), max_bytes);
  return out;
}

DataUrl parse_data_url(std::string_view url, size_t max_bytes) {
  if (url.empty()) fail("image: empty URL (expected a data: URL)");
  if (starts_with_nocase(url, "http://") || starts_with_nocase(url, "https://"))
    fail("image: only data: URLs are accepted, not http(s) URLs (nothing is fetched): {}", snippet(url));
  if (!starts_with_nocase(url, "data:")) {
    const size_t colon = url.find(':');
    if (colon != std::string_view::npos && colon > 0 && colon < 16)
      fail("image: only data: URLs are accepted, not {}: URLs", to_lower(url.substr(0, colon)));
    fail("image: not a data: URL: {}", snippet(url));
  }
  const size_t comma = url.find(',');
  if (comma == std::string_view::npos) fail("image: data URL has no ',' before its payload");
  std::string_view header = url.substr(5, comma - 5);
  DataUrl result;
  bool base64 = false;
  for (size_t part = 0; !header.empty() || part == 0; ++part) {
    const size_t semi = header.find(';');
    const std::string_view piece = trim(header.substr(0, semi));
    if (part == 0) result.media_type = to_lower(piece);
    else if (to_lower(piece) == "base64")
      base64 = semi == std::string_view::npos;  // only as the last parameter
    header = semi == std::string_view::npos ? std::string_view() : header.substr(semi + 1);
  }
  if (!base64)
    fail("image: data URL is not base64 (no ';base64' before the ','): only base64 payloads are accepted");
  const std::string_view payload = url.substr(comma + 1);
  if (trim(payload).empty()) fail("image: data URL has an empty payload");
  result.bytes = decode_base64(payload, max_bytes, "image: data URL payload");
  return result;
}

std::string encode_base64(std::span<const uint8_t> b) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((b.size() + 2) / 3 * 4);
  for (size_t i = 0; i < b.size(); i += 3) {
    const uint32_t v = uint32_t{b[i]} << 16 | (i + 1 < b.size() ? uint32_t{b[i + 1]} << 8 : 0) |
                       (i + 2 < b.size() ? b[i + 2] : 0);
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += i + 1 < b.size() ? kAlphabet[v >> 6 & 63] : '=';
    out += i + 2 < b.size() ? kAlphabet[v & 63] : '=';
  }
  return out;
}

}  // namespace k3::image
