// core/error: the one exception type that crosses module boundaries.
// Contract: every error a user can cause (bad file, bad flag, bad request) is thrown as
// k3::Error with a message that names the thing at fault (file, field, offset, tensor,
// request field). Kernels never throw; they are called only on validated inputs.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace k3 {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

// Throws k3::Error with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace k3
