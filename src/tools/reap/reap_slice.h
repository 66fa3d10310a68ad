// tools/reap_slice: writes the pruned GGUF — every MoE layer reduced to the experts its
// LayerPlan keeps, by copying bytes, never by re-encoding.
//
// Contract:
// * Sliced (per MoE layer N, along the last ne dimension, which must equal expert_count):
//   blk.N.ffn_gate_exps.*, ffn_up_exps.*, ffn_down_exps.* (one whole expert matrix per
//   index), blk.N.ffn_gate_inp.* (router rows) and blk.N.exp_probs_b.* (bias entries). The
//   kept experts' bytes are copied in ascending original order, so expert i of the output is
//   byte-identical to expert kept[i] of the input. Companions such as ffn_up_exps.scale [X]
//   are sliced the same way.
// * Everything else — latent projections, routed norm, shared experts, attention, norms —
//   is copied byte for byte in the input's tensor order. KVs are copied unchanged except
//   <arch>.expert_count, which becomes n_keep (same GGUF type), and split.*, which the writer
//   regenerates.
// * check_prunable() validates before any work: a K3 model, expert_count and
//   expert_used_count consistent with n_keep (reap_plan.h check_keep), and in each MoE layer
//   the router and the three expert tensors present with last dimension expert_count and a
//   byte-exact expert stride. write_pruned_gguf() checks that and the plan again, then writes
//   through gguf::write_gguf (temporary files renamed at the end; shards with opt.split), one
//   tensor in memory at a time. Any error leaves no output file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/writer.h"
#include "tools/reap/reap_plan.h"

namespace k3::gguf {
class GgufFile;
}

namespace k3::tools {

// Returns the number of MoE layers; throws k3::Error naming the file/tensor/key at fault.
uint32_t check_prunable(const gguf::GgufFile& f, int64_t n_keep);

struct ReapWriteResult {
  std::vector<std::string> files;
  uint64_t bytes_in = 0, bytes_out = 0;  // tensor bytes
  size_t n_sliced = 0;                   // tensors sliced
};

ReapWriteResult write_pruned_gguf(const gguf::GgufFile& in, const ReapPlan& plan, const std::string& out_path,
                                  const gguf::WriteOptions& opt = {}, bool progress = false);

}  // namespace k3::tools
