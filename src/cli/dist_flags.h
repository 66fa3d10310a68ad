// cli/dist_flags: distributed runs for the commands that run a model through one engine
// (`k3 run`, `serve`, `bench`, `perplexity`, `eval-logits`; docs/distributed.md). Launched by
// `mpirun -np N`, every rank runs the same command line: rank 0 does the command's work, the
// others build the same engine and follow it (runtime/engine.h), then exit 0.
// Contract: start_dist() returns the collective for EngineOptions::hooks (nullptr when this is
// one process); on the ranks other than 0 it also silences stdout and routine logs, so the
// command's output comes once. follow_if_follower(engine) runs the follower's part and returns
// true when the command should return 0 now.
#pragma once

namespace CLI {
class App;
}

namespace k3::model {
class Collective;
}

namespace k3::runtime {
class Engine;
}

namespace k3::cli {

struct DistFlags {
  double timeout_s = 30.0;
  bool stats = false;
};

void add_dist_flags(CLI::App& app, DistFlags& f);
model::Collective* start_dist(const DistFlags& f);
bool follow_if_follower(runtime::Engine& engine);

}  // namespace k3::cli
