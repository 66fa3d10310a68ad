// Placeholder until this subcommand lands.
#include <fmt/format.h>

#include "cli/commands.h"

namespace k3::cli {
int cmd_bench(int, char**) {
  fmt::print(stderr, "error: k3 bench is not available in this build yet\n");
  return 2;
}
}  // namespace k3::cli
