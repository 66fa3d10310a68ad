// quant/quant_search: implementations of ggml's k-quant search helpers (quant_search.h). Every
// expression mirrors the reference's operand order and int→float promotions; comments flag the
// non-obvious ones.
#include "quant/fp_strict.h"  // first: no FMA contraction in this file

#include "quant/quant_search.h"

#include <algorithm>
#include <cmath>

#include "quant/block_bits.h"

namespace k3::quant::detail {

namespace {

inline int clampi(int v, int lo, int hi) { return std::max(lo, std::min(hi, v)); }

// Largest |x| (first occurrence, strict >) and its signed value.
inline float signed_absmax(int n, const float* x, float& amax) {
  float max = 0;
  amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  return max;
}

float make_qkx(int n, int nmax, const float* x, const float* w, uint8_t* L, float* the_min, float rmin,
               float rdelta, int nstep, bool use_mad, bool strict_degenerate) {
  auto weight = [&](int i) { return w ? w[i] : x[i] * x[i]; };
  float min = x[0], max = x[0];
  float sum_w = weight(0);
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float wi = weight(i);
    sum_w += wi;
    sum_x += wi * x[i];
  }
  if (min > 0) min = 0;
  if (strict_degenerate ? (max == min) : (max <= min)) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.f;
  }
  float iscale = float(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = uint8_t(clampi(l, 0, nmax));
    float diff = scale * float(L[i]) + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    best_error += weight(i) * diff;
  }
  if (nstep < 1) {
    *the_min = -min;
    return scale;
  }
  uint8_t Laux[256];
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * float(is) + float(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clampi(nearest_int(iscale * (x[i] - min)), 0, nmax);
      Laux[i] = uint8_t(l);
      const float wi = weight(i);
      const float fl = float(l);
      sum_l += wi * fl;
      sum_l2 += wi * fl * fl;
      sum_xl += wi * fl * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float err = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * float(Laux[i]) + this_min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        err += weight(i) * diff;
      }
      if (err < best_error) {
        for (int i = 0; i < n; ++i) L[i] = Laux[i];
        best_error = err;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

}  // namespace

float make_qx(int n, int nmax, const float* x, int8_t* L, const float* w) {
  float amax;
  const float max = signed_absmax(n, x, amax);
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  auto weight = [&](int i) { return w ? w[i] : x[i] * x[i]; };
  float iscale = float(-nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = int8_t(l + nmax);
    const float wi = weight(i);
    sumlx += wi * x[i] * float(l);
    suml2 += wi * float(l) * float(l);
  }
  float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(float(nmax) + 0.1f * float(is)) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
      const float wi = weight(i);
      sumlx += wi * x[i] * float(l);
      suml2 += wi * float(l) * float(l);
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        L[i] = int8_t(nmax + clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

float make_q3(int n, int nmax, const float* x, int8_t* L) {
  float amax;
  const float max = signed_absmax(n, x, amax);
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  const float iscale = float(-nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = clampi(nearest_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = int8_t(l);
    const float wi = x[i] * x[i];
    sumlx += wi * x[i] * float(l);
    suml2 += wi * float(l) * float(l);
  }
  for (int pass = 0; pass < 5; ++pass) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float wi = x[i] * x[i];
      float slx = sumlx - wi * x[i] * float(L[i]);
      if (slx > 0) {
        float sl2 = suml2 - wi * float(L[i]) * float(L[i]);
        const int nl = clampi(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
        if (nl != L[i]) {
          slx += wi * x[i] * float(nl);
          sl2 += wi * float(nl) * float(nl);
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = int8_t(nl);
            sumlx = slx;
            suml2 = sl2;
            ++changed;
          }
        }
      }
    }
    if (!changed) break;
  }
  for (int i = 0; i < n; ++i) L[i] = int8_t(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

float make_qkx2(int n, int nmax, const float* x, const float* w, uint8_t* L, float* the_min, float rmin,
                float rdelta, int nstep, bool use_mad) {
  return make_qkx(n, nmax, x, w, L, the_min, rmin, rdelta, nstep, use_mad, true);
}

float make_qkx3(int n, int nmax, const float* x, const float* w, uint8_t* L, float* the_min, float rmin,
                float rdelta, int nstep, bool use_mad) {
  return make_qkx(n, nmax, x, w, L, the_min, rmin, rdelta, nstep, use_mad, false);
}

float make_qp(int n, int nmax, const float* x, uint8_t* L, const float* w) {
  float max = 0;
  for (int i = 0; i < n; ++i) max = max > x[i] ? max : x[i];
  if (max < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float iscale = float(nmax) / max;
  // No clamp here, and a negative result wraps in the uint8 array (as in ggml): later reads see it.
  for (int i = 0; i < n; ++i) L[i] = uint8_t(nearest_int(iscale * x[i]));
  const float scale = 1 / iscale;
  float best_mse = 0;
  for (int i = 0; i < n; ++i) {
    const float diff = x[i] - scale * float(L[i]);
    best_mse += w[i] * diff * diff;
  }
  for (int is = -4; is <= 4; ++is) {
    if (is == 0) continue;
    const float iscale_is = (0.1f * float(is) + float(nmax)) / max;
    const float scale_is = 1 / iscale_is;
    float mse = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::min(nmax, nearest_int(iscale_is * x[i]));
      const float diff = x[i] - scale_is * float(l);
      mse += w[i] * diff * diff;
    }
    if (mse < best_mse) {
      best_mse = mse;
      iscale = iscale_is;
    }
  }
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::min(nmax, nearest_int(iscale * x[i]));
    L[i] = uint8_t(l);
    sumlx += w[i] * x[i] * float(l);  // the unwrapped local level
    suml2 += w[i] * float(l) * float(l);
  }
  for (int pass = 0; pass < 5; ++pass) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float wi = w[i];
      const float li = float(L[i]);  // the wrapped stored level
      float slx = sumlx - wi * x[i] * li;
      float sl2 = suml2 - wi * li * li;
      if (slx > 0 && sl2 > 0) {
        const int nl = std::min(nmax, nearest_int(x[i] * sl2 / slx));
        if (nl != L[i]) {
          slx += wi * x[i] * float(nl);
          sl2 += wi * float(nl) * float(nl);
          if (slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = uint8_t(nl);
            sumlx = slx;
            suml2 = sl2;
            ++changed;
          }
        }
      }
    }
    if (!changed) break;
  }
  return suml2 > 0 ? sumlx / suml2 : 0.f;
}

}  // namespace k3::quant::detail
