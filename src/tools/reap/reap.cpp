// tools/reap: the `k3 reap` pipeline (see reap.h).
#include "tools/reap/reap.h"

#include <filesystem>

#include "core/atomic_file.h"
#include "core/error.h"
#include "gguf/file.h"
#include "model/hparams.h"
#include "model/model.h"

namespace k3::tools {

namespace fs = std::filesystem;

void check_output_location(const std::string& path, const char* flag) {
  if (path.empty()) fail("reap: {} is empty", flag);
  std::error_code ec;
  if (fs::is_directory(path, ec)) fail("reap: {} '{}' is a directory; give a file name", flag, path);
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    fail("reap: {} '{}': directory '{}' does not exist", flag, path, parent.string());
}

uint32_t check_reap_request(const gguf::GgufFile& f, const ReapOptions& opt) {
  if ((opt.n_keep >= 0) == (opt.ratio >= 0)) fail("reap: give exactly one of --keep N or --prune-ratio R");
  const model::HParams hp = model::load_hparams(f);
  const uint32_t keep = opt.n_keep >= 0 ? (check_keep(hp.n_expert, hp.n_expert_used, opt.n_keep),
                                           static_cast<uint32_t>(opt.n_keep))
                                        : keep_from_ratio(hp.n_expert, hp.n_expert_used, opt.ratio);
  check_prunable(f, keep);
  check_output_location(opt.output, "-o");
  if (!opt.scores_out.empty()) check_output_location(opt.scores_out, "--scores-out");
  std::error_code ec;
  for (const gguf::Shard& s : f.shards()) {
    for (const std::string& out : {opt.output, opt.scores_out})
      if (!out.empty() && fs::equivalent(s.path, out, ec))
        fail("reap: output '{}' is the input model itself; write to a new file", out);
  }
  return keep;
}

ReapResult run_reap(std::shared_ptr<const model::Model> model,
                    const std::vector<std::vector<int32_t>>& sequences, const ReapOptions& opt) {
  const gguf::GgufFile& f = model->gguf();
  const uint32_t keep = check_reap_request(f, opt);
  const model::HParams& hp = model->hparams();

  ReapResult r;
  r.calib = collect_reap_saliency(model, sequences, opt.calib);
  r.plan = make_reap_plan(opt.method, r.calib.layers, hp.n_expert, keep, opt.seed);

  ReapReportInfo info;
  info.model = f.path();
  info.calibration = opt.calibration_name;
  info.method = opt.method;
  info.seed = opt.seed;
  info.n_expert_used = hp.n_expert_used;
  info.n_tokens = r.calib.n_tokens;
  info.n_sequences = r.calib.n_sequences;
  r.report = reap_report_json(info, r.plan, r.calib.layers);

  // The model first: a report without its model would describe something that does not exist.
  r.written = write_pruned_gguf(f, r.plan, opt.output, opt.write, opt.progress);
  if (!opt.scores_out.empty()) {
    AtomicFile out(opt.scores_out);
    out.write(r.report.data(), r.report.size());
    out.commit();
  }
  return r;
}

}  // namespace k3::tools
