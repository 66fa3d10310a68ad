// server/token_endpoints: the answers of /tokenize and /detokenize (llama-server's shapes).
// Contract: each takes a parsed request body and returns the response body as JSON text; a
// field the client got wrong is an ApiError 400 naming it. Both write their text directly
// rather than building a Json tree (a tree costs ~240 bytes per token), and /detokenize names
// at most 2^20 ids, so what one request costs stays bounded.
#pragma once

#include <string>

#include "text/json_py.h"

namespace k3::text {
class Tokenizer;
}

namespace k3::server {

std::string tokenize_body(const text::Tokenizer& tok, const text::Json& body);
std::string detokenize_body(const text::Tokenizer& tok, const text::Json& body);

}  // namespace k3::server
