// core/log: leveled logging to stderr. Data goes to stdout; diagnostics never do.
#pragma once

#include <fmt/format.h>

#include <cstdio>

namespace k3::log {

enum class Level { debug = 0, info = 1, warn = 2, error = 3, quiet = 4 };
Level level();
void set_level(Level l);

template <typename... Args>
void write(Level l, const char* tag, fmt::format_string<Args...> f, Args&&... args) {
  if (l < level()) return;
  fmt::print(stderr, "{}{}\n", tag, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void debug(fmt::format_string<Args...> f, Args&&... a) {
  write(Level::debug, "debug: ", f, std::forward<Args>(a)...);
}
template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... a) {
  write(Level::info, "", f, std::forward<Args>(a)...);
}
template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... a) {
  write(Level::warn, "warning: ", f, std::forward<Args>(a)...);
}
template <typename... Args>
void error(fmt::format_string<Args...> f, Args&&... a) {
  write(Level::error, "error: ", f, std::forward<Args>(a)...);
}

}  // namespace k3::log
