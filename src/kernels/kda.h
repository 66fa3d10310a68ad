// kernels/kda: the inner loops of the KDA delta-rule recurrence (model/kda.cpp, docs/MODEL.md),
// with plain-C twins (*_scalar). The state is float (token-by-token form) or double (chunked
// form); every product and sum is in double.
// Contract (n >= 0, no alignment needed):
//   kda_decay_dot(row, decay, k, n):  row[i] = (float)(row[i]·decay[i]); returns Σ row[i]·k[i]
//                                     over the rounded row;
//   kda_update_dot(row, k, δ, q, n):  row[i] = (float)(row[i] + k[i]·δ); returns Σ row[i]·q[i];
//   kda_token_step(S, n, decay, k, q, v, β, o): one token of the delta rule on one head's state
//                                     S (n rows of n floats, row j for value j): per row j the two
//                                     passes above, δ = (v[j] − u)·β, o[j] = (float) of the second
//                                     dot (one call per token: the row loop stays inside);
//   dot2_f64(a, b, s, n, &as, &bs):   as = Σ a[i]·s[i], bs = Σ b[i]·s[i];
//   decay_rank_update_f64(s, decay, w, w_stride, c, m, n):
//                                     s[i] = s[i]·decay[i] + Σ_{t<m} w[t·w_stride + i]·c[t].
// Each element of a row or state is rounded exactly where the scalar definition rounds it, so
// the stored rows equal the twins' bit for bit; the x86 builds (x86/kda_avx2.cpp) sum the
// returned dots in 4-lane partial sums (within double rounding of the twins' index order), and
// decay_rank_update_f64 fuses its multiply-adds in both forms.
#pragma once

#include <cstdint>

namespace k3::kernels {

double kda_decay_dot(float* row, const double* decay, const double* k, int64_t n);
double kda_update_dot(float* row, const double* k, double delta, const double* q, int64_t n);
void kda_token_step(float* S, int64_t n, const double* decay, const double* k, const double* q,
                    const float* v, double beta, float* o);
void dot2_f64(const double* a, const double* b, const double* s, int64_t n, double* as, double* bs);
void decay_rank_update_f64(double* s, const double* decay, const double* w, int64_t w_stride, const double* c,
                           int64_t m, int64_t n);

double kda_decay_dot_scalar(float* row, const double* decay, const double* k, int64_t n);
double kda_update_dot_scalar(float* row, const double* k, double delta, const double* q, int64_t n);
void kda_token_step_scalar(float* S, int64_t n, const double* decay, const double* k, const double* q,
                           const float* v, double beta, float* o);
void dot2_f64_scalar(const double* a, const double* b, const double* s, int64_t n, double* as, double* bs);
void decay_rank_update_f64_scalar(double* s, const double* decay, const double* w, int64_t w_stride,
                                  const double* c, int64_t m, int64_t n);

}  // namespace k3::kernels
