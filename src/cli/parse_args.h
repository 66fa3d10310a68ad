// cli/parse_args: the one place that turns CLI11's parse outcome into the process's exit
// status, so every subcommand agrees: --help prints and exits 0, a usage error (unknown
// flag, missing or malformed value) prints CLI11's message and exits 2; runtime failures
// stay the commands' own (exit 1).
#pragma once

#include <optional>

namespace CLI {
class App;
}

namespace k3::cli {

// Parses argv into `app`. Empty when the command should go on, else the exit status.
std::optional<int> parse_args(CLI::App& app, int argc, char** argv);

}  // namespace k3::cli
