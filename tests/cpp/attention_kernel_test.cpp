// The CPU attention kernels (Backend::attention / attention_backward) called directly, against
// plain float64 loops written here: operands with strides the kernel must honour (a
// transposed q, k broadcast over the batch with stride 0, a mask broadcast over heads and
// rows), grouped query heads, bool, additive and causal masks, fully masked rows, sizes that
// cross the 64-query and 256-key blocks, in float32, float64 and bfloat16.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "ug/backend/backend.h"
#include "ug/ops/binary.h"
#include "ug/ops/random.h"

namespace {

using ug::Tensor;

struct Case {
  int64_t B, Hq, Hk, L, S, E, Ev;
  bool causal;
  int mask;  // 0 none, 1 bool, 2 additive
};

std::vector<double> values(const Tensor& t) {
  Tensor c = t.to(ug::float64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

/** The reference: out, lse and (for the cotangent g) dq, dk, dv, all in float64 from the
 *  operands' values, laid out contiguously. */
struct Reference {
  std::vector<double> out, lse, dq, dk, dv;
};

Reference reference(const Case& c, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                    const Tensor& g, double scale) {
  const auto qv = values(q), kv = values(k), vv = values(v), gv = values(g);
  const auto mv = mask.defined() ? values(mask.to(ug::float64)) : std::vector<double>();
  const int64_t G = c.Hq / c.Hk;
  Reference r;
  r.out.assign(c.B * c.Hq * c.L * c.Ev, 0.0);
  r.lse.assign(c.B * c.Hq * c.L, 0.0);
  r.dq.assign(qv.size(), 0.0);
  r.dk.assign(kv.size(), 0.0);
  r.dv.assign(vv.size(), 0.0);
  std::vector<double> p(c.S), dp(c.S);
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.Hq; ++h)
      for (int64_t i = 0; i < c.L; ++i) {
        const int64_t hk = h / G;
        const double* qi = &qv[((b * c.Hq + h) * c.L + i) * c.E];
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < c.S; ++j) {
          const double* kj = &kv[((b * c.Hk + hk) * c.S + j) * c.E];
          double s = 0;
          for (int64_t e = 0; e < c.E; ++e) s += qi[e] * kj[e];
          s *= scale;
          const double m = c.mask ? mv[((b * c.Hq + h) * c.L + i) * c.S + j] : 0.0;
          if ((c.causal && j > i) || (c.mask == 1 && m == 0.0)) s = -std::numeric_limits<double>::infinity();
          if (c.mask == 2) s += m;
          p[j] = s;
          mx = std::max(mx, s);
        }
        const int64_t row = (b * c.Hq + h) * c.L + i;
        if (mx == -std::numeric_limits<double>::infinity()) {  // nothing attended: 0, gradients 0
          r.lse[row] = std::numeric_limits<double>::infinity();
          continue;
        }
        double sum = 0;
        for (int64_t j = 0; j < c.S; ++j) sum += p[j] = std::exp(p[j] - mx);
        r.lse[row] = mx + std::log(sum);
        for (int64_t j = 0; j < c.S; ++j) p[j] /= sum;
        const double* gi = &gv[row * c.Ev];
        double d = 0;
        for (int64_t j = 0; j < c.S; ++j) {
          const double* vj = &vv[((b * c.Hk + hk) * c.S + j) * c.Ev];
          dp[j] = 0;
          for (int64_t e = 0; e < c.Ev; ++e) {
            r.out[row * c.Ev + e] += p[j] * vj[e];
            dp[j] += gi[e] * vj[e];
            r.dv[((b * c.Hk + hk) * c.S + j) * c.Ev + e] += p[j] * gi[e];
          }
          d += p[j] * dp[j];
        }
        for (int64_t j = 0; j < c.S; ++j) {
          const double ds = p[j] * (dp[j] - d) * scale;
          const double* kj = &kv[((b * c.Hk + hk) * c.S + j) * c.E];
          for (int64_t e = 0; e < c.E; ++e) {
            r.dq[row * c.E + e] += ds * kj[e];
            r.dk[((b * c.Hk + hk) * c.S + j) * c.E + e] += ds * qi[e];
          }
        }
      }
  return r;
}

void expect_near(const std::vector<double>& actual, const std::vector<double>& expected, double tol, const char* what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  int64_t bad = 0;
  for (size_t i = 0; i < actual.size(); ++i)
    bad += !(actual[i] == expected[i] || std::abs(actual[i] - expected[i]) <= tol * (1 + std::abs(expected[i])));
  EXPECT_EQ(bad, 0) << what;
}

void run(const Case& c, ug::DType dtype, double tol) {
  ug::manual_seed(7);
  ug::Backend& be = ug::backend_for(ug::Device());
  // q laid out [B, L, Hq, E] and seen [B, Hq, L, E]; k shared by the batch (stride 0).
  Tensor q = (ug::rand({c.B, c.L, c.Hq, c.E}) * 2 - 1).to(dtype).transpose(1, 2);
  Tensor k = (ug::rand({1, c.Hk, c.S, c.E}) * 2 - 1).to(dtype).expand({c.B, c.Hk, c.S, c.E});
  Tensor v = (ug::rand({c.B, c.Hk, c.S, c.Ev}) * 4 - 2).to(dtype);
  Tensor mask;
  if (c.mask == 1) {
    Tensor keep = ug::rand({c.B, 1, c.L, c.S}).gt(0.3);
    keep.select(2, c.L / 2).fill_(false);  // a row that attends nothing
    mask = keep.expand({c.B, c.Hq, c.L, c.S});
  } else if (c.mask == 2) {
    mask = (ug::rand({1, 1, c.L, c.S}) * 4 - 2).to(dtype).expand({c.B, c.Hq, c.L, c.S});
  }
  const double scale = 1 / std::sqrt(static_cast<double>(c.E));
  Tensor out = ug::empty({c.B, c.Hq, c.L, c.Ev}, {.dtype = dtype});
  Tensor lse = ug::empty({c.B, c.Hq, c.L}, {.dtype = dtype == ug::float64 ? ug::float64 : ug::float32});
  be.attention(q, k, v, mask, c.causal, scale, out, lse);
  Tensor g = (ug::rand({c.B, c.Hq, c.L, c.Ev}) * 2 - 1).to(dtype);
  Tensor dq = ug::empty(q.shape(), {.dtype = dtype}), dk = ug::empty(k.shape(), {.dtype = dtype}),
         dv = ug::empty(v.shape(), {.dtype = dtype});
  be.attention_backward(g, q, k, v, mask, c.causal, scale, out, lse, dq, dk, dv);
  const Reference r = reference(c, q, k, v, mask, g, scale);
  expect_near(values(out), r.out, tol, "out");
  expect_near(values(lse), r.lse, tol, "lse");
  expect_near(values(dq), r.dq, tol, "dq");
  expect_near(values(dk), r.dk, tol, "dk");
  expect_near(values(dv), r.dv, tol, "dv");
}

// Each value sums at most a few hundred terms of magnitude ~1: float32 (eps 6e-8) keeps about
// 1e-5 relative, float64 1e-12; bfloat16 operands are exact in the float64 reference and the
// kernel sums in float32, so its error is the final rounding (2^-8) and the rounded output the
// backward reads.
const Case kCases[] = {
    {2, 3, 3, 5, 7, 8, 4, false, 0},    {2, 4, 2, 5, 7, 8, 4, true, 0},    {2, 2, 1, 9, 4, 4, 6, true, 0},
    {1, 2, 2, 70, 300, 8, 5, false, 1}, {1, 2, 1, 70, 300, 8, 5, true, 0}, {2, 2, 2, 65, 257, 4, 4, false, 2},
};

TEST(AttentionKernel, Float32MatchesReference) {
  for (const Case& c : kCases) run(c, ug::float32, 2e-5);
}

TEST(AttentionKernel, Float64MatchesReference) {
  for (const Case& c : kCases) run(c, ug::float64, 1e-12);
}

TEST(AttentionKernel, BFloat16ComputesInFloat32) {
  for (const Case& c : kCases) run(c, ug::bfloat16, 3e-2);
}

}  // namespace
