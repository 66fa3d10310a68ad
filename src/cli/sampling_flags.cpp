// cli/sampling_flags: see sampling_flags.h.
#include "cli/sampling_flags.h"

#include <CLI/CLI.hpp>

#include "runtime/sampler.h"

namespace k3::cli {

void add_sampling_flags(CLI::App& app, runtime::SamplerParams& sp) {
  app.add_option("--temp", sp.temperature, "temperature (default 0.8; <= 0: greedy)");
  app.add_option("--top-k", sp.top_k, "keep the K most likely tokens (default 40; <= 0: off)");
  app.add_option("--top-p", sp.top_p,
                 "keep the smallest set with this much probability (default 0.95; 1: off)");
  app.add_option("--min-p", sp.min_p, "drop tokens less likely than P times the best (default 0.05; 0: off)");
  app.add_option("--repeat-penalty", sp.repeat_penalty,
                 "penalise tokens seen in the last N (default 1.0: off)");
  app.add_option("--repeat-last-n", sp.repeat_last_n, "window of the repetition penalty (default 64)");
  app.add_option("--presence-penalty", sp.presence_penalty,
                 "subtract from tokens seen in the window (default 0)");
  app.add_option("--frequency-penalty", sp.frequency_penalty, "subtract count × this (default 0)");
}

}  // namespace k3::cli
