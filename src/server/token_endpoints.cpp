// server/token_endpoints: see token_endpoints.h.
#include "server/token_endpoints.h"

#include <cstdint>
#include <string_view>
#include <vector>

#include "server/api_error.h"
#include "server/responses.h"
#include "text/output_parser_utf8.h"
#include "text/tokenizer.h"
#include "text/unicode.h"

namespace k3::server {

using text::Json;

namespace {

// The most ids one /detokenize request may name: 2^20 covers a whole context of any K3 model
// (and any --ctx this server can be given a model for) with room to spare, while it bounds
// what the answer may cost: 4 MiB of ids, and text of at most 2^20 times the longest token.
constexpr size_t kMaxDetokenizeIds = size_t{1} << 20;

// Appends `utf8` (valid UTF-8) as a JSON string, escaped as the library's dump() would, so
// large answers are written once, in place, without a Json value or a copy of the text.
void append_json_string(std::string& out, std::string_view utf8) {
  static const char kHex[] = "0123456789abcdef";
  out += '"';
  size_t plain = 0;  // start of the run of bytes not yet copied
  for (size_t i = 0; i < utf8.size(); ++i) {
    const auto c = static_cast<unsigned char>(utf8[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(utf8.data() + plain, i - plain);
    plain = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 15];
    }
  }
  out.append(utf8.data() + plain, utf8.size() - plain);
  out += '"';
}

}  // namespace

std::string tokenize_body(const text::Tokenizer& tok, const Json& body) {
  const Json& content = body.contains("content") ? body["content"] : Json();
  if (!content.is_string()) bad_request("content", "'content' must be a string");
  auto flag = [&](const char* name, bool def) {
    if (!body.contains(name) || body[name].is_null()) return def;
    if (!body[name].is_boolean()) bad_request(name, "'{}' must be a boolean", name);
    return body[name].get<bool>();
  };
  bool add_special = flag("add_special", false), parse_special = flag("parse_special", true);
  bool with_pieces = flag("with_pieces", false);
  std::vector<int32_t> ids = tok.encode(content.get_ref<const std::string&>(), parse_special, add_special);
  // Written as text, not built as a Json tree: a tree costs ~240 bytes per token (2 MB of
  // text: +512 MB), the text a few dozen.
  std::string out = "{\"tokens\":[";
  out.reserve(out.size() + ids.size() * (with_pieces ? 24 : 6));
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ',';
    const int32_t id = ids[i];
    if (!with_pieces) {
      out += std::to_string(id);
      continue;
    }
    const std::string& piece = tok.token_bytes(id);
    out += "{\"id\":" + std::to_string(id) + ",\"piece\":";
    if (text::utf8_sanitize(piece) == piece) {
      out += dump(Json(piece));
    } else {
      out += '[';
      for (size_t b = 0; b < piece.size(); ++b)
        out += (b ? "," : "") + std::to_string(static_cast<unsigned char>(piece[b]));
      out += ']';
    }
    out += '}';
  }
  out += "]}";
  return out;
}

std::string detokenize_body(const text::Tokenizer& tok, const Json& body) {
  const Json& tokens = body.contains("tokens") ? body["tokens"] : Json();
  if (!tokens.is_array()) bad_request("tokens", "'tokens' must be an array of token ids");
  if (tokens.size() > kMaxDetokenizeIds)
    bad_request("tokens", "'tokens' has {} ids; at most {} are accepted per request", tokens.size(),
                kMaxDetokenizeIds);
  std::vector<int32_t> ids;
  ids.reserve(tokens.size());
  const int64_t n_vocab = static_cast<int64_t>(tok.n_vocab());
  for (const Json& t : tokens) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= n_vocab)
      bad_request("tokens", "token ids must be integers in 0…{}", n_vocab - 1);
    ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  // Written as text, like /tokenize: a Json value holding the text, then its dump, held
  // three copies of it at once (1.5 M ids: +145 MiB).
  std::string content = tok.decode(ids, true);
  std::vector<int32_t>().swap(ids);
  if (!text::unicode::is_valid_utf8(content)) content = text::utf8_sanitize(content);  // U+FFFD
  std::string out;
  out.reserve(content.size() + content.size() / 8 + 16);
  out += "{\"content\":";
  append_json_string(out, content);
  out += '}';
  std::string().swap(content);
  return out;
}

}  // namespace k3::server
