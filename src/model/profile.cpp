// model/profile: see profile.h.
#include "model/profile.h"

namespace k3::model {
namespace {

using Clock = std::chrono::steady_clock;

thread_local ForwardProfile* t_profile = nullptr;
thread_local int t_section = -1;  // the ProfOp of the open section; -1: none

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The pool's waits since the last take, to `to` (the dispatches just made belong to it).
void take_waits(ThreadPool::WaitStats& to) {
  if (t_profile->pool) to += t_profile->pool->take_wait_stats();
}

}  // namespace

std::string_view prof_op_name(ProfOp op) {
  switch (op) {
    case ProfOp::embed: return "embedding";
    case ProfOp::attn_res_norm: return "attnres + norms";
    case ProfOp::kda: return "KDA";
    case ProfOp::mla: return "MLA";
    case ProfOp::dense_ffn: return "dense FFN";
    case ProfOp::moe_input: return "MoE router + input";
    case ProfOp::moe_experts: return "MoE experts";
    case ProfOp::head: return "output head";
    case ProfOp::count: break;
  }
  return "?";
}

ProfForward::ProfForward(ForwardProfile* p) : prev_(t_profile), t0_(p ? Clock::now() : Clock::time_point{}) {
  t_profile = p;
}

ProfForward::~ProfForward() {
  if (t_profile) {
    take_waits(t_profile->idle_waits);
    t_profile->forward_seconds += since(t0_);
    ++t_profile->forwards;
  }
  t_profile = prev_;
}

ProfScope::ProfScope(ProfOp op) : on_(t_profile != nullptr && t_section < 0), op_(op) {
  if (!on_) return;
  take_waits(t_profile->idle_waits);
  t_section = static_cast<int>(op);
  t0_ = Clock::now();
}

ProfScope::~ProfScope() {
  if (!on_) return;
  (*t_profile)[op_].seconds += since(t0_);
  take_waits((*t_profile)[op_].waits);
  t_section = -1;
}

bool prof_matmul_active() { return t_profile != nullptr && t_section >= 0; }

void prof_matmul(double seconds, uint64_t bytes, double ops, uint64_t n_products) {
  if (!prof_matmul_active()) return;
  ForwardProfile::Row& r = t_profile->rows[static_cast<size_t>(t_section)];
  r.matmul_seconds += seconds;
  r.matmul_bytes += bytes;
  r.matmul_ops += ops;
  r.matmuls += n_products;
}

}  // namespace k3::model
