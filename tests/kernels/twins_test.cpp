// The double-accumulating reductions (kernels/reduce.h), the KDA recurrence loops
// (kernels/kda.h) and the streaming read (kernels/stream_read.h): each against its plain-C twin
// and the twin against a long-double reference of the definition. In a portable build the
// kernel is the twin, and the reference checks still hold.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

#include "kernels/kda.h"
#include "kernels/reduce.h"
#include "kernels/stream_read.h"

namespace k3::kernels {
namespace {

std::vector<double> randd(int64_t n, uint32_t seed, double sd = 1.0) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d(0.0, sd);
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}
std::vector<float> randf(int64_t n, uint32_t seed) {
  const auto d = randd(n, seed);
  return std::vector<float>(d.begin(), d.end());
}

// A sum of n double products in any order is within n·2^-53·Σ|a·b| of the exact value.
double order_bound(int64_t n, long double mag) { return static_cast<double>(n + 1) * 1.2e-16 * mag + 1e-300; }

const int64_t kLengths[] = {0, 1, 3, 4, 5, 8, 9, 64, 127, 128, 1000};

TEST(Reduce, DotsMatchTheExactSum) {
  for (int64_t n : kLengths) {
    const auto a = randf(n, 1), b = randf(n, 2);
    const auto ad = randd(n, 3), bd = randd(n, 4);
    long double ex = 0, mag = 0, exd = 0, magd = 0;
    for (int64_t i = 0; i < n; ++i) {
      ex += static_cast<long double>(a[i]) * b[i];
      mag += std::fabs(static_cast<long double>(a[i]) * b[i]);
      exd += static_cast<long double>(ad[i]) * bd[i];
      magd += std::fabs(static_cast<long double>(ad[i]) * bd[i]);
    }
    EXPECT_NEAR(dot_f32_f64(a.data(), b.data(), n), static_cast<double>(ex), order_bound(n, mag)) << n;
    EXPECT_NEAR(dot_f32_f64_scalar(a.data(), b.data(), n), static_cast<double>(ex), order_bound(n, mag)) << n;
    EXPECT_NEAR(dot_f64(ad.data(), bd.data(), n), static_cast<double>(exd), order_bound(n, magd)) << n;
    EXPECT_NEAR(dot_f64_scalar(ad.data(), bd.data(), n), static_cast<double>(exd), order_bound(n, magd)) << n;
  }
}

TEST(Reduce, ElementwiseFormsEqualTheTwinsBitForBit) {
  for (int64_t n : kLengths) {
    const auto x = randf(n, 5);
    const auto xd = randd(n, 6);
    auto y = randd(n, 7), y2 = y, z = randd(n, 8), z2 = z;
    const auto z0 = z;
    axpy_f32_f64(0.3711, x.data(), y.data(), n);
    axpy_f32_f64_scalar(0.3711, x.data(), y2.data(), n);
    axmy_f64(-1.25e-3, xd.data(), z.data(), n);
    axmy_f64_scalar(-1.25e-3, xd.data(), z2.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(y[i], y2[i]) << n << " " << i;
      ASSERT_EQ(z[i], z2[i]) << n << " " << i;
      ASSERT_EQ(z2[i], std::fma(1.25e-3, xd[i], z0[i])) << "y -= l*x with l < 0";
    }
  }
}

// One token of the delta rule on a row, kernel against twin: the stored rows identical, the
// dots within summation-order rounding; and the twin's rows against the definition.
TEST(KdaKernels, RowPassesEqualTheTwins) {
  for (int64_t n : {1, 4, 7, 64, 128, 131}) {
    const auto row0 = randf(n, 11);
    std::vector<double> decay(static_cast<size_t>(n));
    {
      std::mt19937 rng(12);
      std::uniform_real_distribution<double> u(-3.0, 0.0);
      for (auto& d : decay) d = std::exp(u(rng));
    }
    const auto k = randd(n, 13), q = randd(n, 14);
    auto r1 = row0, r2 = row0;
    const double u1 = kda_decay_dot(r1.data(), decay.data(), k.data(), n);
    const double u2 = kda_decay_dot_scalar(r2.data(), decay.data(), k.data(), n);
    long double mag = 0;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(r1[i], r2[i]) << n << " " << i;
      ASSERT_EQ(r2[i], static_cast<float>(static_cast<double>(row0[i]) * decay[i]));
      mag += std::fabs(static_cast<long double>(r2[i]) * k[i]);
    }
    EXPECT_NEAR(u1, u2, 2 * order_bound(n, mag));
    const double delta = 0.7 - u2;
    const auto before = r2;
    const double o1 = kda_update_dot(r1.data(), k.data(), delta, q.data(), n);
    const double o2 = kda_update_dot_scalar(r2.data(), k.data(), delta, q.data(), n);
    mag = 0;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(r1[i], r2[i]) << n << " " << i;
      const volatile double upd = k[i] * delta;  // two roundings, as the definition
      ASSERT_EQ(r2[i], static_cast<float>(static_cast<double>(before[i]) + upd));
      mag += std::fabs(static_cast<long double>(r2[i]) * q[i]);
    }
    EXPECT_NEAR(o1, o2, 2 * order_bound(n, mag));
  }
}

// A whole token on a head (the row loop inside the kernel) against the twin: the same state bit
// for bit, the outputs within summation-order rounding of each other.
TEST(KdaKernels, TokenStepEqualsTheTwin) {
  for (int64_t n : {4, 7, 64}) {
    auto S1 = randf(n * n, 31), S2 = S1;
    std::vector<double> decay(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) decay[i] = std::exp(-0.01 * static_cast<double>(i + 1));
    const auto k = randd(n, 32), q = randd(n, 33);
    const auto v = randf(n, 34);
    std::vector<float> o1(static_cast<size_t>(n)), o2(o1.size());
    for (int step = 0; step < 3; ++step) {  // carries the state: later steps start from the updated S
      kda_token_step(S1.data(), n, decay.data(), k.data(), q.data(), v.data(), 0.6, o1.data());
      kda_token_step_scalar(S2.data(), n, decay.data(), k.data(), q.data(), v.data(), 0.6, o2.data());
      for (int64_t i = 0; i < n * n; ++i) ASSERT_EQ(S1[i], S2[i]) << n << " step " << step << " " << i;
      for (int64_t j = 0; j < n; ++j)
        EXPECT_NEAR(o1[j], o2[j], 1e-5 * (std::fabs(o2[j]) + 1)) << n << " " << j;
    }
  }
}

TEST(KdaKernels, ChunkFormsMatchTheTwins) {
  for (int64_t n : {1, 4, 6, 64, 129}) {
    const auto a = randd(n, 21), b = randd(n, 22), s = randd(n, 23);
    double x1, y1, x2, y2;
    dot2_f64(a.data(), b.data(), s.data(), n, &x1, &y1);
    dot2_f64_scalar(a.data(), b.data(), s.data(), n, &x2, &y2);
    long double ma = 0, mb = 0, ea = 0, eb = 0;
    for (int64_t i = 0; i < n; ++i) {
      ea += static_cast<long double>(a[i]) * s[i];
      eb += static_cast<long double>(b[i]) * s[i];
      ma += std::fabs(static_cast<long double>(a[i]) * s[i]);
      mb += std::fabs(static_cast<long double>(b[i]) * s[i]);
    }
    EXPECT_NEAR(x1, static_cast<double>(ea), order_bound(n, ma));
    EXPECT_NEAR(x2, static_cast<double>(ea), order_bound(n, ma));
    EXPECT_NEAR(y1, static_cast<double>(eb), order_bound(n, mb));
    EXPECT_NEAR(y2, static_cast<double>(eb), order_bound(n, mb));

    // S ← S·decay + Σ_t w_t·c_t, m = 0 (decay only) to a full chunk of 16.
    for (int64_t m : {0, 1, 5, 16}) {
      const int64_t stride = n + 3;
      const auto w = randd(m * stride, 24), c = randd(m, 25), decay = randd(n, 26, 0.3);
      auto s1 = randd(n, 27), s2 = s1;
      const auto s0 = s1;
      decay_rank_update_f64(s1.data(), decay.data(), w.data(), stride, c.data(), m, n);
      decay_rank_update_f64_scalar(s2.data(), decay.data(), w.data(), stride, c.data(), m, n);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(s1[i], s2[i]) << n << " " << m << " " << i;  // same fused order per element
        long double e = static_cast<long double>(s0[i]) * decay[i], mag = std::fabs(e);
        for (int64_t t = 0; t < m; ++t) {
          e += static_cast<long double>(w[t * stride + i]) * c[t];
          mag += std::fabs(static_cast<long double>(w[t * stride + i]) * c[t]);
        }
        EXPECT_NEAR(s2[i], static_cast<double>(e), order_bound(m + 1, mag));
      }
    }
  }
}

TEST(StreamRead, EveryPrefetchDistanceSumsEveryWord) {
  const size_t bytes = 3 * 4096 + 32 * 5;  // not a multiple of the unrolled 128 bytes
  void* p = std::aligned_alloc(64, bytes);
  ASSERT_NE(p, nullptr);
  auto* w = static_cast<uint64_t*>(p);
  uint64_t want = 0;
  for (size_t i = 0; i < bytes / 8; ++i) want += (w[i] = 0x9E3779B97F4A7C15ull * (i + 1));
  EXPECT_EQ(stream_read_sum_scalar(p, bytes), want);
  for (int ahead : kStreamPrefetchChoices) EXPECT_EQ(stream_read_sum(p, bytes, ahead), want) << ahead;
  std::free(p);
}

}  // namespace
}  // namespace k3::kernels
