// server/api_error: error bodies as the OpenAI API sends them.
// Contract: the body is always {"error":{"message","type","param","code"}} with code = the
// HTTP status, so OpenAI SDKs and llama-server clients both understand it. The error type
// itself is the chat rules' (chat/api_error.h): the server names it as its own.
#pragma once

#include <string>

#include "chat/api_error.h"

namespace k3::server {

using chat::ApiError;
using chat::bad_request;

// The JSON text of an error body (compact, valid UTF-8 whatever the message holds).
std::string error_body(int status, const std::string& type, const std::string& message,
                       const std::string& param = {});
inline std::string error_body(const ApiError& e) {
  return error_body(e.status(), e.type(), e.what(), e.param());
}

}  // namespace k3::server
