// server/api_error: errors as the OpenAI API reports them.
// Contract: every failure a client can see is an ApiError carrying the HTTP status, the
// OpenAI error `type` and, when one request field is at fault, its name (`param`). The body
// is always {"error":{"message","type","param","code"}} with code = the HTTP status, so
// OpenAI SDKs and llama-server clients both understand it. Client mistakes are
// 4xx, never 500.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace k3::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string type, const std::string& message, std::string param = {})
      : std::runtime_error(message), status_(status), type_(std::move(type)), param_(std::move(param)) {}
  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& param() const { return param_; }

 private:
  int status_;
  std::string type_;
  std::string param_;
};

// 400 invalid_request_error naming the field at fault.
template <typename... Args>
[[noreturn]] void bad_request(const std::string& param, fmt::format_string<Args...> f, Args&&... args) {
  throw ApiError(400, "invalid_request_error", fmt::format(f, std::forward<Args>(args)...), param);
}

// The JSON text of an error body (compact, valid UTF-8 whatever the message holds).
std::string error_body(int status, const std::string& type, const std::string& message,
                       const std::string& param = {});
inline std::string error_body(const ApiError& e) {
  return error_body(e.status(), e.type(), e.what(), e.param());
}

}  // namespace k3::server
