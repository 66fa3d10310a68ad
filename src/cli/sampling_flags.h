// cli/sampling_flags: the sampling flags shared by the commands that generate (k3 run, k3 chat),
// so their names, defaults and help text cannot drift apart. The seed stays each command's
// own (its meaning differs: one answer or the first of many).
#pragma once

namespace CLI {
class App;
}

namespace k3::runtime {
struct SamplerParams;
}

namespace k3::cli {

// --temp, --top-k, --top-p, --min-p, --repeat-penalty, --repeat-last-n, --presence-penalty,
// --frequency-penalty, writing into `sp` (whose current values are the defaults).
void add_sampling_flags(CLI::App& app, runtime::SamplerParams& sp);

}  // namespace k3::cli
