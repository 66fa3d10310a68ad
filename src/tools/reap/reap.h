// tools/reap: `k3 reap` end to end — calibrate, choose, slice, report (docs/reap.md).
// The parts: reap_saliency.h (statistics from the engine's own forward pass), reap_plan.h
// (selection and the JSON report), reap_slice.h (the byte-exact GGUF writer), chat_corpus.h
// (chat calibration).
//
// Contract: check_reap_request() does every check that needs no forward pass — the keep
// count (from n_keep or ratio), the model's MoE tensors, the output and report locations —
// so bad requests fail in seconds, before calibration. run_reap() repeats those checks, runs
// the calibration sequences, plans, writes the pruned GGUF (atomically) and then the report;
// on any error no output file exists.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gguf/writer.h"
#include "tools/reap/reap_plan.h"
#include "tools/reap/reap_saliency.h"
#include "tools/reap/reap_slice.h"

namespace k3::model {
class Model;
}
namespace k3::gguf {
class GgufFile;
}

namespace k3::tools {

struct ReapOptions {
  ReapMethod method = ReapMethod::Reap;
  int64_t n_keep = -1;  // exactly one of n_keep ≥ 0 / ratio ≥ 0 is set
  double ratio = -1.0;  // fraction of experts removed, 0 < ratio < 1
  uint64_t seed = 1;    // --method random
  ReapCalibOptions calib;
  std::string output;      // pruned GGUF (first shard name when splitting)
  std::string scores_out;  // JSON report; empty: none
  gguf::WriteOptions write;
  bool progress = false;
  std::string calibration_name;  // recorded in the report
};

// Throws k3::Error when the output's directory does not exist or the path is a directory.
void check_output_location(const std::string& path, const char* flag);
// Returns the resolved number of experts to keep per layer.
uint32_t check_reap_request(const gguf::GgufFile& model, const ReapOptions& opt);

struct ReapResult {
  ReapCalibResult calib;
  ReapPlan plan;
  ReapWriteResult written;
  std::string report;  // the JSON document (also written to scores_out when set)
};

ReapResult run_reap(std::shared_ptr<const model::Model> model,
                    const std::vector<std::vector<int32_t>>& sequences, const ReapOptions& opt);

}  // namespace k3::tools
