// Placeholder until this subcommand lands.
#include <fmt/format.h>

#include "cli/commands.h"

namespace k3::cli {
int cmd_dequant(int, char**) {
  fmt::print(stderr, "error: k3 dequant is not available in this build yet\n");
  return 2;
}
}  // namespace k3::cli
