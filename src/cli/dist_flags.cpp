// cli/dist_flags: see dist_flags.h.
#include "cli/dist_flags.h"

#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "core/error.h"
#include "core/log.h"
#include "dist/cluster.h"
#include "runtime/engine.h"

namespace k3::cli {

void add_dist_flags(CLI::App& app, DistFlags& f) {
  app.add_option("--dist-timeout", f.timeout_s,
                 "under mpirun: the longest one rank waits for the others inside one exchange before it "
                 "declares a rank dead or hung and exits non-zero (seconds, default 30; docs/distributed.md)")
      ->check(CLI::Range(0.1, 86400.0));
  app.add_flag("--dist-stats", f.stats,
               "under mpirun: print rank 0's traffic at the end (exchanges, bytes out and in, time in them)");
}

model::Collective* start_dist(const DistFlags& f) {
  dist::Cluster* c = dist::Cluster::start({.timeout_s = f.timeout_s, .stats = f.stats});
  if (!c) return nullptr;
  if (c->rank() != 0) {
    // One copy of the output: rank 0's. Errors still reach stderr.
    std::fflush(stdout);
    const int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
      ::dup2(devnull, STDOUT_FILENO);
      ::close(devnull);
    }
    log::set_level(log::Level::warn);
  }
  return &c->collective();
}

bool follow_if_follower(runtime::Engine& engine) {
  if (!engine.follower()) return false;
  engine.follow();
  return true;
}

}  // namespace k3::cli
