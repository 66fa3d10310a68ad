// cli/parse_args: the one place that turns a command line's mistakes into the process's exit
// status, so every subcommand agrees: --help prints and exits 0, a usage error (unknown
// flag, missing or malformed value: CLI11's message; or a command's own check of its flags,
// through usage_error) prints `error: …` and exits 2 (kUsageError); runtime failures stay the
// commands' own (exit 1).
#pragma once

#include <fmt/format.h>

#include <optional>
#include <string_view>

namespace CLI {
class App;
}

namespace k3::cli {

constexpr int kUsageError = 2;

// Parses argv into `app`. Empty when the command should go on, else the exit status.
std::optional<int> parse_args(CLI::App& app, int argc, char** argv);

// Prints `error: MSG` to stderr and returns kUsageError: `return usage_error("…");`.
int usage_error(std::string_view msg);
template <typename... Args>
int usage_error(fmt::format_string<Args...> f, Args&&... args) {
  return usage_error(std::string_view(fmt::format(f, std::forward<Args>(args)...)));
}

}  // namespace k3::cli
