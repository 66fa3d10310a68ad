// cli/parse_args: see parse_args.h.
#include "cli/parse_args.h"

#include <CLI/CLI.hpp>

namespace k3::cli {

std::optional<int> parse_args(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kUsageError;  // app.exit prints the help or the error
  }
  return std::nullopt;
}

int usage_error(std::string_view msg) {
  fmt::print(stderr, "error: {}\n", msg);
  return kUsageError;
}

}  // namespace k3::cli
