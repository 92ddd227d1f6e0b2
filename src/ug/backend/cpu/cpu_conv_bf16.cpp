// bfloat16 convolutions on the bfloat16 GEMM (cpu_bf16_gemm.h): im2col copies bfloat16 planes
// into bfloat16 column blocks of bounded size (a block of output rows of one sample and group),
// which the GEMM packs as it packs any operand. Every result is a float32 sum rounded once:
// - forward: the bias is one more column of the weights against a row of ones in the column
//   block, so it joins the float32 sum;
// - input gradient: the GEMM writes float32 column blocks, scattered (col2im) into a float32
//   copy of one sample's planes, rounded when the sample is done;
// - weight gradient: float32 products of each block added into float32 partials (one per run
//   of samples, the runs fixed by the problem, added in order), rounded at the end.
// Where the CPU lacks AVX512-BF16 (or UG_CPU_ISA is set) the same blocks are widened to float32
// row block by row block into sgemm: no float32 copy of a whole tensor either way.
#include "ug/backend/cpu/cpu_conv_bf16.h"

#include <algorithm>
#include <cstdint>

#include "ug/backend/cpu/cpu_bf16_gemm.h"
#include "ug/core/thread_pool.h"

namespace ug::cpu {

namespace {

// A column block holds about this many elements (512 KiB of bfloat16): it stays in L2 while
// the GEMM packs it.
constexpr int64_t kBlockElements = int64_t{1} << 18;
// Without the bf16 GEMM, a product's first operand is widened this many float32 elements at a
// time.
constexpr int64_t kWidenBlock = int64_t{1} << 18;
constexpr uint16_t kOne = 0x3f80;  // 1.0 in bfloat16

struct Geometry {
  int64_t N, C, H, W, O, kh, kw, Ho, Wo, G;
  Conv2dParams p;
  Geometry(const Tensor& x, const Tensor& w, const Tensor& y, const Conv2dParams& params)
      : N(x.size(0)),
        C(x.size(1)),
        H(x.size(2)),
        W(x.size(3)),
        O(w.size(0)),
        kh(w.size(2)),
        kw(w.size(3)),
        Ho(y.size(2)),
        Wo(y.size(3)),
        G(params.groups),
        p(params) {}
  int64_t Cg() const { return C / G; }
  int64_t Og() const { return O / G; }
  int64_t K() const { return Cg() * kh * kw; }
  int64_t L() const { return Ho * Wo; }
  int64_t HW() const { return H * W; }
  /** 1x1, unit stride, no padding: a sample's planes are its column matrix. */
  bool pointwise() const {
    return kh == 1 && kw == 1 && p.stride[0] == 1 && p.stride[1] == 1 && p.padding[0] == 0 && p.padding[1] == 0;
  }
  /** Output rows per column block of `rows` rows of the column matrix. */
  int64_t block_rows(int64_t rows) const {
    return std::clamp<int64_t>(kBlockElements / std::max<int64_t>(rows * Wo, 1), 1, std::max<int64_t>(Ho, 1));
  }
};

/** A buffer of `dtype` grown on demand and never zeroed. */
struct Buffer {
  DType dtype;
  Tensor t;
  Tensor get(int64_t n) {
    if (!t.defined() || t.numel() < n) t = empty({std::max<int64_t>(n, 1)}, {.dtype = dtype, .device = Device()});
    return t;
  }
};

/** A [rows, cols] matrix in base's storage, `offset` elements in, as the [1, rows, cols]
 *  operand the GEMMs take. */
Tensor mat(const Tensor& base, int64_t offset, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  return Tensor(make_ref<TensorImpl>(base.storage(), Shape{1, rows, cols}, Strides{0, rs, cs},
                                     base.storage_offset() + offset, base.dtype()));
}

/** Rows [i0, i0 + m) of a [1, M, N] matrix. */
Tensor rows_of(const Tensor& t, int64_t i0, int64_t m) {
  return Tensor(make_ref<TensorImpl>(t.storage(), Shape{1, m, t.size(2)}, Strides{0, t.stride(1), t.stride(2)},
                                     t.storage_offset() + i0 * t.stride(1), t.dtype()));
}

/** out = a @ b for bfloat16 [1, M, K] and [1, K, N] matrices into a bfloat16 (rounded once) or
 *  float32 out with unit column stride. Without the bf16 GEMM, b (a block the caller bounds) is
 *  widened whole and a in row blocks. */
void product(CpuBackend& be, const Tensor& a, const Tensor& b, const Tensor& out) {
  if (be.bf16_gemm()) return gemm_bf16(a, b, out, be.amx_bf16());
  const int64_t M = a.size(1), K = a.size(2), N = b.size(2);
  const Tensor b32 = contiguous(b, DType::Float32);
  const int64_t rows = std::clamp<int64_t>(kWidenBlock / std::max<int64_t>(std::max(K, N), 1), 1, M);
  for (int64_t i0 = 0; i0 < M; i0 += rows) {
    const int64_t m = std::min(rows, M - i0);
    const Tensor o32 = empty({1, m, N}, {.dtype = DType::Float32, .device = Device()});
    be.matmul(contiguous(rows_of(a, i0, m), DType::Float32), b32, o32);
    be.copy(o32, rows_of(out, i0, m));
  }
}

/** The output columns ow of [0, Wo) whose input column ow * s + off lies in [0, W). */
void valid_range(const Geometry& g, int64_t off, int64_t& lo, int64_t& hi) {
  const int64_t s = g.p.stride[1];
  lo = off >= 0 ? 0 : (-off + s - 1) / s;
  hi = g.W - off <= 0 ? 0 : std::min(g.Wo, (g.W - off + s - 1) / s);
  lo = std::min(lo, hi);
}

/** Rows [oh0, oh1) of one sample's column matrix [Cg * kh * kw, Ho * Wo] from its group's
 *  planes x [Cg, H, W] into cols (row stride (oh1 - oh0) * Wo); padding reads as zero. */
template <class T> void im2col(const Geometry& g, const T* x, T* cols, int64_t oh0, int64_t oh1) {
  const auto& p = g.p;
  const int64_t n = (oh1 - oh0) * g.Wo, sw = p.stride[1];
  for (int64_t c = 0; c < g.Cg(); ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        T* row = cols + ((c * g.kh + i) * g.kw + j) * n;
        const int64_t off = j * p.dilation[1] - p.padding[1];
        int64_t lo, hi;
        valid_range(g, off, lo, hi);
        for (int64_t oh = oh0; oh < oh1; ++oh, row += g.Wo) {
          const int64_t ih = oh * p.stride[0] - p.padding[0] + i * p.dilation[0];
          if (ih < 0 || ih >= g.H) {
            std::fill(row, row + g.Wo, T(0));
            continue;
          }
          const T* src = x + (c * g.H + ih) * g.W + off;
          std::fill(row, row + lo, T(0));
          if (sw == 1) {
            for (int64_t ow = lo; ow < hi; ++ow) row[ow] = src[ow];
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) row[ow] = src[ow * sw];
          }
          std::fill(row + hi, row + g.Wo, T(0));
        }
      }
}

/** acc [Cg, H, W] += rows [oh0, oh1) of a column matrix scattered back (im2col's adjoint). */
void col2im_add(const Geometry& g, const float* cols, float* acc, int64_t oh0, int64_t oh1) {
  const auto& p = g.p;
  const int64_t n = (oh1 - oh0) * g.Wo, sw = p.stride[1];
  for (int64_t c = 0; c < g.Cg(); ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        const float* row = cols + ((c * g.kh + i) * g.kw + j) * n;
        const int64_t off = j * p.dilation[1] - p.padding[1];
        int64_t lo, hi;
        valid_range(g, off, lo, hi);
        for (int64_t oh = oh0; oh < oh1; ++oh, row += g.Wo) {
          const int64_t ih = oh * p.stride[0] - p.padding[0] + i * p.dilation[0];
          if (ih < 0 || ih >= g.H) continue;
          float* dst = acc + (c * g.H + ih) * g.W + off;
          if (sw == 1) {
            for (int64_t ow = lo; ow < hi; ++ow) dst[ow] += row[ow];
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) dst[ow * sw] += row[ow];
          }
        }
      }
}

const uint16_t* bits(const Tensor& t) { return static_cast<const uint16_t*>(t.raw_data()); }

}  // namespace

void conv2d_bf16(CpuBackend& be, const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p,
                 const Tensor& out) {
  const Geometry g(x, w, out, p);
  const int64_t K = g.K(), L = g.L(), Og = g.Og();
  // With a bias, the weights get it as column K (against a row of ones in the column blocks).
  const int64_t Kb = K + (bias.defined() ? 1 : 0);
  Tensor wb = w;
  if (bias.defined()) {
    wb = empty({g.O * Kb}, {.dtype = DType::BFloat16, .device = Device()});
    auto* dst = static_cast<uint16_t*>(wb.raw_data());
    const uint16_t *src = bits(w), *b = bits(bias);
    for (int64_t o = 0; o < g.O; ++o) {
      std::copy(src + o * K, src + (o + 1) * K, dst + o * Kb);
      dst[o * Kb + K] = b[o];
    }
  }
  const uint16_t* xs = bits(x);
  const int64_t rows = g.block_rows(Kb);
  parallel_for(g.N * g.G, 1, [&](int64_t t0, int64_t t1) {
    Buffer cols_buf{DType::BFloat16, {}};
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = t / g.G, grp = t % g.G;
      const int64_t x_off = (n * g.C + grp * g.Cg()) * g.HW(), y_off = (n * g.O + grp * Og) * L;
      const Tensor wg = mat(wb, grp * Og * Kb, Og, Kb, Kb, 1);
      if (g.pointwise() && !bias.defined()) {  // the planes are the column matrix
        product(be, wg, mat(x, x_off, g.Cg(), L, L, 1), mat(out, y_off, Og, L, L, 1));
        continue;
      }
      for (int64_t oh0 = 0; oh0 < g.Ho; oh0 += rows) {
        const int64_t oh1 = std::min(g.Ho, oh0 + rows), nc = (oh1 - oh0) * g.Wo;
        const Tensor cols = cols_buf.get(Kb * nc);
        auto* c = static_cast<uint16_t*>(cols.raw_data());
        im2col(g, xs + x_off, c, oh0, oh1);
        if (bias.defined()) std::fill(c + K * nc, c + Kb * nc, kOne);
        product(be, wg, mat(cols, 0, Kb, nc, nc, 1), mat(out, y_off + oh0 * g.Wo, Og, nc, L, 1));
      }
    }
  });
}

void conv2d_input_grad_bf16(CpuBackend& be, const Tensor& gy, const Tensor& w, const Conv2dParams& p,
                            const Tensor& gx) {
  const Geometry g(gx, w, gy, p);
  const int64_t K = g.K(), L = g.L(), Og = g.Og(), planes = g.Cg() * g.HW();
  const int64_t rows = g.block_rows(K);
  parallel_for(g.N * g.G, 1, [&](int64_t t0, int64_t t1) {
    Buffer cols_buf{DType::Float32, {}}, acc_buf{DType::Float32, {}};
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = t / g.G, grp = t % g.G;
      const int64_t x_off = (n * g.C + grp * g.Cg()) * g.HW(), y_off = (n * g.O + grp * Og) * L;
      const Tensor wt = mat(w, grp * Og * K, K, Og, 1, K);  // the group's weights transposed, in place
      if (g.pointwise()) {                                  // the product is the planes' gradient
        product(be, wt, mat(gy, y_off, Og, L, L, 1), mat(gx, x_off, g.Cg(), L, L, 1));
        continue;
      }
      const Tensor acc = acc_buf.get(planes);
      auto* a = static_cast<float*>(acc.raw_data());
      std::fill(a, a + planes, 0.0f);
      for (int64_t oh0 = 0; oh0 < g.Ho; oh0 += rows) {
        const int64_t oh1 = std::min(g.Ho, oh0 + rows), nc = (oh1 - oh0) * g.Wo;
        const Tensor cols = cols_buf.get(K * nc);
        product(be, wt, mat(gy, y_off + oh0 * g.Wo, Og, nc, L, 1), mat(cols, 0, K, nc, nc, 1));
        col2im_add(g, static_cast<const float*>(cols.raw_data()), a, oh0, oh1);
      }
      be.copy(mat(acc, 0, 1, planes, planes, 1), mat(gx, x_off, 1, planes, planes, 1));
    }
  });
}

void conv2d_weight_grad_bf16(CpuBackend& be, const Tensor& x, const Tensor& gy, const Conv2dParams& p,
                             const Tensor& gw) {
  const Geometry g(x, gw, gy, p);
  const int64_t K = g.K(), L = g.L(), Og = g.Og(), size = g.O * K;
  const uint16_t* xs = bits(x);
  // Runs of consecutive samples (how many: fixed by the problem, fewer for large weights) each
  // sum into a float32 partial of their own; the partials are added in order: the same bits on
  // any thread count.
  const int64_t runs =
      std::clamp<int64_t>((int64_t{1} << 22) / std::max<int64_t>(size, 1), 1, std::min<int64_t>(g.N, 16));
  const Tensor partial = empty({runs * size}, {.dtype = DType::Float32, .device = Device()});
  float* part = static_cast<float*>(partial.raw_data());
  std::fill(part, part + runs * size, 0.0f);
  const int64_t rows = g.block_rows(K);
  parallel_for(runs, 1, [&](int64_t r0, int64_t r1) {
    Buffer cols_buf{DType::BFloat16, {}}, prod_buf{DType::Float32, {}};
    const Tensor prod = prod_buf.get(Og * K);
    const float* pr = static_cast<const float*>(prod.raw_data());
    for (int64_t r = r0; r < r1; ++r)
      for (int64_t n = g.N * r / runs; n < g.N * (r + 1) / runs; ++n)
        for (int64_t grp = 0; grp < g.G; ++grp) {
          const int64_t x_off = (n * g.C + grp * g.Cg()) * g.HW(), y_off = (n * g.O + grp * Og) * L;
          float* acc = part + r * size + grp * Og * K;
          auto add = [&] {
            for (int64_t i = 0; i < Og * K; ++i) acc[i] += pr[i];
          };
          const Tensor out = mat(prod, 0, Og, K, K, 1);
          if (g.pointwise()) {  // gy [Og, L] @ the planes transposed [L, Cg], in place
            product(be, mat(gy, y_off, Og, L, L, 1), mat(x, x_off, L, K, 1, L), out);
            add();
            continue;
          }
          for (int64_t oh0 = 0; oh0 < g.Ho; oh0 += rows) {
            const int64_t oh1 = std::min(g.Ho, oh0 + rows), nc = (oh1 - oh0) * g.Wo;
            const Tensor cols = cols_buf.get(K * nc);
            im2col(g, xs + x_off, static_cast<uint16_t*>(cols.raw_data()), oh0, oh1);
            product(be, mat(gy, y_off + oh0 * g.Wo, Og, nc, L, 1), mat(cols, 0, nc, K, 1, nc), out);
            add();
          }
        }
  });
  for (int64_t r = 1; r < runs; ++r)
    for (int64_t i = 0; i < size; ++i) part[i] += part[r * size + i];
  be.copy(mat(partial, 0, 1, size, size, 1), mat(gw, 0, 1, size, size, 1));
}

}  // namespace ug::cpu
