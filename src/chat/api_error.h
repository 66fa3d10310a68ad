// chat/api_error: the errors a request can end with, as the OpenAI API reports them.
// Contract: every failure a client can see is an ApiError carrying the HTTP status, the
// OpenAI error `type` and, when one request field is at fault, its name (`param`). The chat
// rules raise them (a constraint that cannot be honoured is a 400 naming its field), so the
// CLI reports the same message the server sends; the server turns them into bodies
// (server/api_error.h). Client mistakes are 4xx, never 500.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace k3::chat {

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

}  // namespace k3::chat
