// 2-d convolution kernels: Winograd's F(2x2, 3x3) for the 3x3 float32 convolutions with unit
// stride where it pays (cpu_winograd.h), im2col and OpenBLAS for the rest. A chunk of samples
// (its size fixed by the problem) is folded into one [C/groups * kh * kw, samples * Ho * Wo]
// column matrix, so each group needs one product per chunk; chunks run in parallel (OpenBLAS
// itself runs on the calling thread, see thread_pool.cpp). A one-sample chunk reads and writes
// the tensors in place, and 1x1 convolutions with unit stride and no padding need no column
// matrix then. The weight gradient sums runs of chunks into partials and adds them in order:
// the same bits on any thread count.
#include <cblas.h>

#include <algorithm>
#include <type_traits>

#include "ug/backend/cpu/cpu_backend.h"
#include "ug/backend/cpu/cpu_conv_bf16.h"
#include "ug/backend/cpu/cpu_conv_direct.h"
#include "ug/backend/cpu/scratch.h"
#include "ug/backend/cpu/cpu_winograd.h"
#include "ug/core/thread_pool.h"

namespace ug::cpu {

namespace {

// Samples are folded into the products' columns in chunks of about this many column-matrix
// elements: few, large products, and a column matrix that stays in cache.
constexpr int64_t kChunkElements = int64_t{1} << 16;
// ... but at least this many columns, where the batch allows: a product over a 7x7 plane of
// one sample is too narrow for OpenBLAS to run at speed.
constexpr int64_t kMinColumns = 256;
// A one-sample column matrix is built in blocks of output rows of about this many elements.
constexpr int64_t kBlockColumns = int64_t{1} << 18;

template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb, T beta,
          T* c, int64_t ldc) {
  const CBLAS_TRANSPOSE cta = ta ? CblasTrans : CblasNoTrans, ctb = tb ? CblasTrans : CblasNoTrans;
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, cta, ctb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  else cblas_dgemm(CblasRowMajor, cta, ctb, m, n, k, 1.0, a, lda, b, ldb, beta, c, ldc);
}

/** The sizes of one convolution, from its operands' shapes, and how the batch is chunked. */
struct Geometry {
  int64_t N, C, H, W, O, kh, kw, Ho, Wo, G;
  Conv2dParams p;
  /** > 1: the planes' rows are split into this many column phases (padded_planes). */
  int64_t split = 1;
  int64_t Cg() const { return C / G; }
  int64_t Og() const { return O / G; }
  int64_t K() const { return Cg() * kh * kw; }  // rows of the column matrix
  int64_t L() const { return Ho * Wo; }         // its columns per sample
  /** 1x1, unit stride, no padding: a sample's input planes are its column matrix. */
  bool pointwise() const {
    return kh == 1 && kw == 1 && p.stride[0] == 1 && p.stride[1] == 1 && p.padding[0] == 0 && p.padding[1] == 0;
  }
  /** Samples per chunk: fixed by the problem, never by the thread count. */
  int64_t chunk() const {
    const int64_t in_cache = kChunkElements / std::max<int64_t>(std::max(K(), Og()) * L(), 1);
    return std::clamp<int64_t>(std::max(in_cache, (kMinColumns + L() - 1) / std::max<int64_t>(L(), 1)), 1, N);
  }
  int64_t chunks() const { return (N + chunk() - 1) / chunk(); }
  /** 3x3, unit stride and dilation, one group: the Winograd kernel's case, if it pays. The
   *  input gradient is such a convolution too, of g with padding 2 - padding. */
  bool winograd(bool input_grad) const {
    if (kh != 3 || kw != 3 || G != 1 || p.stride[0] != 1 || p.stride[1] != 1 || p.dilation[0] != 1 ||
        p.dilation[1] != 1 || p.padding[0] > 2 || p.padding[1] > 2)
      return false;
    return input_grad ? winograd_input_grad().worthwhile() : winograd_forward().worthwhile();
  }
  Winograd3x3 winograd_forward() const { return {N, C, H, W, O, p.padding[0], p.padding[1]}; }
  Winograd3x3 winograd_input_grad() const { return {N, O, Ho, Wo, C, 2 - p.padding[0], 2 - p.padding[1]}; }
};

/** The direct kernel's case (cpu_conv_direct.h): an AVX-512 CPU, one group, no dilation, and
 *  16+ channels across its vectors (`lanes`: fewer leave most of each vector idle, and LeNet's
 *  6-channel layers stay with OpenBLAS). */
bool direct_applies(const Conv2dParams& p, int64_t lanes, bool avx512) {
  return avx512 && p.groups == 1 && p.dilation[0] == 1 && p.dilation[1] == 1 && lanes >= 16;
}

/** Whether Winograd's products (where they apply) beat the direct kernel on Ho x Wo output
 *  planes, `channels` the fewer of the convolution's input and output channels: over large
 *  planes, whatever the batch (64 channels on 56x56: 0.93 against 1.01 ms at batch 1; 1.58
 *  against 1.82 at batch 2; 128 channels on 56x56, batch 1: 3.32 against 3.85); with 128+
 *  channels, down to 14x14 (128 on 28x28, batch 1: 1.65 against 2.15; 256 on 14x14 at batch 2
 *  with a new weight, as in training: 3.9 against 4.5, at batch 32: 50 against 71); never over
 *  smaller ones, whose products are too narrow and whose 4x4 tiles overhang the plane (512 on
 *  7x7 at batch 8: 18.5 against 17.2), nor with fewer channels (64 on 28x28 at batch 8: 4.4
 *  both ways). */
bool winograd_first(bool winograd, int64_t channels, int64_t Ho, int64_t Wo) {
  const int64_t tiles = ((Ho + 1) / 2) * ((Wo + 1) / 2);
  return winograd && (tiles >= 512 || (channels >= 128 && tiles >= 49));
}

Geometry geometry(const Tensor& x, const Tensor& w, const Tensor& y, const Conv2dParams& p) {
  return {x.size(0), x.size(1), x.size(2), x.size(3), w.size(0), w.size(2),
          w.size(3), y.size(2), y.size(3), p.groups,  p};
}

/** The output columns [lo, hi) whose input column o * s - pad + off lies inside [0, size). */
void valid_range(int64_t out, int64_t s, int64_t pad, int64_t off, int64_t size, int64_t& lo, int64_t& hi) {
  const int64_t first = pad - off;  // o * s >= first
  lo = first <= 0 ? 0 : (first + s - 1) / s;
  const int64_t last = size + pad - off;  // o * s < last
  hi = last <= 0 ? 0 : std::min(out, (last + s - 1) / s);
  lo = std::min(lo, hi);
}

/** The columns of output rows [oh0, oh1) of one sample's column matrix [Cg * kh * kw, Ho * Wo]
 *  from its planes x [Cg, H, W], row r at cols + r * ld; padding reads as zero. */
template <class T> void im2col_planes(const Geometry& g, const T* x, T* cols, int64_t ld, int64_t oh0, int64_t oh1) {
  const auto& p = g.p;
  const int64_t rows = oh1 - oh0;
  if (g.split > 1) {  // padded, phase-split planes: every row is a run of contiguous copies
    const int64_t phase_w = g.W / g.split, step = p.stride[0] * g.W;
    for (int64_t c = 0; c < g.Cg(); ++c)
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t j = 0; j < g.kw; ++j) {
          T* row = cols + ((c * g.kh + i) * g.kw + j) * ld;
          const int64_t off = j * p.dilation[1];
          const T* src =
              x + (c * g.H + oh0 * p.stride[0] + i * p.dilation[0]) * g.W + off % g.split * phase_w + off / g.split;
          for (int64_t oh = 0; oh < rows; ++oh)
            for (int64_t ow = 0; ow < g.Wo; ++ow) row[oh * g.Wo + ow] = src[oh * step + ow];
        }
    return;
  }
  if (g.pointwise()) {
    for (int64_t c = 0; c < g.Cg(); ++c)
      std::copy(x + c * g.L() + oh0 * g.Wo, x + c * g.L() + oh1 * g.Wo, cols + c * ld);
    return;
  }
  for (int64_t c = 0; c < g.Cg(); ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        T* row = cols + ((c * g.kh + i) * g.kw + j) * ld;
        int64_t lo, hi;
        valid_range(g.Wo, p.stride[1], p.padding[1], j * p.dilation[1], g.W, lo, hi);
        const int64_t ih0 = oh0 * p.stride[0] + i * p.dilation[0] - p.padding[0];
        const int64_t ih1 = ih0 + (rows - 1) * p.stride[0];
        if (lo == 0 && hi == g.Wo && ih0 >= 0 && ih1 < g.H) {
          // Inside the input: a plain strided copy, branch-free (unit width steps vectorise).
          const T* src = x + (c * g.H + ih0) * g.W + j * p.dilation[1] - p.padding[1];
          const int64_t step = p.stride[0] * g.W, sw = p.stride[1];
          for (int64_t oh = 0; oh < rows; ++oh)
            if (sw == 1) {
              for (int64_t ow = 0; ow < g.Wo; ++ow) row[oh * g.Wo + ow] = src[oh * step + ow];
            } else {
              for (int64_t ow = 0; ow < g.Wo; ++ow) row[oh * g.Wo + ow] = src[oh * step + ow * sw];
            }
          continue;
        }
        for (int64_t oh = oh0; oh < oh1; ++oh, row += g.Wo) {
          const int64_t ih = oh * p.stride[0] - p.padding[0] + i * p.dilation[0];
          if (ih < 0 || ih >= g.H) {
            for (int64_t ow = 0; ow < g.Wo; ++ow) row[ow] = T(0);
            continue;
          }
          // Plain loops: rows are short, and memcpy/memset calls cost more than the copy.
          const T* src = x + (c * g.H + ih) * g.W + j * p.dilation[1] - p.padding[1];
          for (int64_t ow = 0; ow < lo; ++ow) row[ow] = T(0);
          if (p.stride[1] == 1) {
            for (int64_t ow = lo; ow < hi; ++ow) row[ow] = src[ow];
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) row[ow] = src[ow * p.stride[1]];
          }
          for (int64_t ow = hi; ow < g.Wo; ++ow) row[ow] = T(0);
        }
      }
}

/** x [Cg, H, W] += one sample's columns scattered back (im2col's adjoint). */
template <class T> void col2im_planes(const Geometry& g, const T* cols, int64_t ld, T* x) {
  const auto& p = g.p;
  if (g.pointwise()) {
    for (int64_t c = 0; c < g.Cg(); ++c)
      for (int64_t l = 0; l < g.L(); ++l) x[c * g.L() + l] += cols[c * ld + l];
    return;
  }
  for (int64_t c = 0; c < g.Cg(); ++c)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j) {
        const T* row = cols + ((c * g.kh + i) * g.kw + j) * ld;
        int64_t lo, hi;
        valid_range(g.Wo, p.stride[1], p.padding[1], j * p.dilation[1], g.W, lo, hi);
        const int64_t ih0 = i * p.dilation[0] - p.padding[0], ih1 = ih0 + (g.Ho - 1) * p.stride[0];
        if (lo == 0 && hi == g.Wo && ih0 >= 0 && ih1 < g.H) {
          T* dst = x + (c * g.H + ih0) * g.W + j * p.dilation[1] - p.padding[1];
          const int64_t step = p.stride[0] * g.W, sw = p.stride[1];
          for (int64_t oh = 0; oh < g.Ho; ++oh)
            if (sw == 1) {
              for (int64_t ow = 0; ow < g.Wo; ++ow) dst[oh * step + ow] += row[oh * g.Wo + ow];
            } else {
              for (int64_t ow = 0; ow < g.Wo; ++ow) dst[oh * step + ow * sw] += row[oh * g.Wo + ow];
            }
          continue;
        }
        for (int64_t oh = 0; oh < g.Ho; ++oh, row += g.Wo) {
          const int64_t ih = oh * p.stride[0] - p.padding[0] + i * p.dilation[0];
          if (ih < 0 || ih >= g.H) continue;
          T* dst = x + (c * g.H + ih) * g.W + j * p.dilation[1] - p.padding[1];
          if (p.stride[1] == 1) {
            for (int64_t ow = lo; ow < hi; ++ow) dst[ow] += row[ow];
          } else {
            for (int64_t ow = lo; ow < hi; ++ow) dst[ow * p.stride[1]] += row[ow];
          }
        }
      }
}

/** With padding, the planes are first copied into a zero-padded buffer: every row of the
 *  column matrix is then a plain strided copy (short rows with bounds checks cost more than
 *  the extra copy). */
bool pads_first(const Geometry& g) { return g.p.padding[0] > 0 || g.p.padding[1] > 0; }

Geometry padded_geometry(const Geometry& g) {
  Geometry q = g;
  q.H += 2 * g.p.padding[0];
  q.W += 2 * g.p.padding[1];
  q.p.padding[0] = q.p.padding[1] = 0;
  return q;
}

/** One sample's planes as im2col_planes reads them: x itself, or with padding or a column
 *  stride a zero-padded copy in pad_buf (whose geometry q then has no padding). With a column
 *  stride s, each padded row is also split into its s phases (element w at w % s, w / s; q.W
 *  becomes s times the phase width): a kernel column then reads a contiguous run of one phase,
 *  where it would gather every s-th element (the 7x7 stride-2 stem spent most of its column
 *  matrix's time there). */
template <class T> const T* padded_planes(const Geometry& g, const T* x, Scratch<T>& pad_buf, Geometry& q) {
  q = g;
  const int64_t s = g.p.stride[1];
  if (!pads_first(g) && s == 1) return x;
  q = padded_geometry(g);
  const int64_t phase_w = (q.W + s - 1) / s;
  q.W = s * phase_w;
  q.split = s;
  T* buf = pad_buf.get(g.Cg() * q.H * q.W);
  std::fill(buf, buf + g.Cg() * q.H * q.W, T(0));
  for (int64_t c = 0; c < g.Cg(); ++c)
    for (int64_t h = 0; h < g.H; ++h) {
      const T* src = x + (c * g.H + h) * g.W;
      T* dst = buf + (c * q.H + h + g.p.padding[0]) * q.W;
      if (s == 1) {
        for (int64_t w = 0; w < g.W; ++w) dst[w + g.p.padding[1]] = src[w];
        continue;
      }
      for (int64_t ph = 0; ph < s; ++ph)
        for (int64_t k = 0; k < phase_w; ++k) {
          const int64_t w = k * s + ph - g.p.padding[1];
          if (w >= 0 && w < g.W) dst[ph * phase_w + k] = src[w];
        }
    }
  return buf;
}

/** One sample's column matrix from its group's planes x [Cg, H, W] (see im2col_planes). */
template <class T> void im2col(const Geometry& g, const T* x, T* cols, int64_t ld, Scratch<T>& pad_buf) {
  Geometry q;
  const T* planes = padded_planes(g, x, pad_buf, q);
  im2col_planes(q, planes, cols, ld, 0, g.Ho);
}

/** x [Cg, H, W] = one sample's columns scattered back (im2col's adjoint). */
template <class T> void col2im(const Geometry& g, const T* cols, int64_t ld, T* x, Scratch<T>& pad_buf) {
  if (!pads_first(g)) {
    std::fill(x, x + g.Cg() * g.H * g.W, T(0));
    return col2im_planes(g, cols, ld, x);
  }
  const Geometry q = padded_geometry(g);
  T* buf = pad_buf.get(g.Cg() * q.H * q.W);
  std::fill(buf, buf + g.Cg() * q.H * q.W, T(0));
  col2im_planes(q, cols, ld, buf);
  for (int64_t c = 0; c < g.Cg(); ++c)
    for (int64_t h = 0; h < g.H; ++h) {
      const T* src = buf + (c * q.H + h + g.p.padding[0]) * q.W + g.p.padding[1];
      T* dst = x + (c * g.H + h) * g.W;
      for (int64_t w = 0; w < g.W; ++w) dst[w] = src[w];
    }
}

/** A chunk of samples [n0, n1) and one group: where its operands live. */
template <class T> struct Chunk {
  const Geometry& g;
  int64_t n0, n1, grp;
  int64_t count() const { return n1 - n0; }
  int64_t ld() const { return count() * g.L(); }  // columns of the folded matrices
  /** Sample n's planes of this group in an [N, channels, plane] tensor. */
  template <class P> P* planes(P* base, int64_t channels, int64_t per_group, int64_t plane, int64_t n) const {
    return base + (n * channels + grp * per_group) * plane;
  }
  /** folded [Og, count * L] <- the group's output planes of each sample. */
  void gather_out(const T* y, T* folded) const {
    for (int64_t n = n0; n < n1; ++n)
      for (int64_t o = 0; o < g.Og(); ++o) {
        const T* src = planes(y, g.O, g.Og(), g.L(), n) + o * g.L();
        std::copy(src, src + g.L(), folded + o * ld() + (n - n0) * g.L());
      }
  }
};

template <class T>
void conv_forward(const Tensor& xt, const Tensor& wt, const Tensor& bt, const Conv2dParams& p, const Tensor& yt,
                  bool avx512) {
  const Geometry g = geometry(xt, wt, yt, p);
  if constexpr (std::is_same_v<T, float>)
    if (direct_applies(p, g.O, avx512)) {
      const DirectConv d{g.N,  g.C,  g.H,         g.W,         g.O,          g.kh,         g.kw,
                         g.Ho, g.Wo, p.stride[0], p.stride[1], p.padding[0], p.padding[1], {p.accumulate, p.relu}};
      if (!winograd_first(g.winograd(false), std::min(g.C, g.O), g.Ho, g.Wo))
        return direct_conv2d(d, xt, wt, false, bt, yt);
      return winograd_conv3x3(
          g.winograd_forward(), static_cast<const float*>(xt.raw_data()), static_cast<const float*>(wt.raw_data()),
          false, bt.defined() ? static_cast<const float*>(bt.raw_data()) : nullptr, static_cast<float*>(yt.raw_data()),
          {p.accumulate, p.relu}, static_cast<const float*>(winograd_filters(wt).raw_data()));
    }
  if (p.accumulate || p.relu) {  // the other paths: the convolution, then the epilogue in one pass
    Conv2dParams plain = p;
    plain.accumulate = plain.relu = false;
    const Tensor conv =
        p.accumulate ? empty(Dims(yt.shape().begin(), yt.shape().end()), {.dtype = yt.dtype(), .device = yt.device()})
                     : yt;
    conv_forward<T>(xt, wt, bt, plain, conv, avx512);
    const T* c = static_cast<const T*>(conv.raw_data());
    T* y = static_cast<T*>(yt.raw_data());
    parallel_for(yt.numel(), 1 << 14, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const T v = p.accumulate ? c[i] + y[i] : c[i];
        y[i] = p.relu ? ops::Relu::f(v) : v;
      }
    });
    return;
  }
  const T* x = static_cast<const T*>(xt.raw_data());
  const T* w = static_cast<const T*>(wt.raw_data());
  const T* bias = bt.defined() ? static_cast<const T*>(bt.raw_data()) : nullptr;
  T* y = static_cast<T*>(yt.raw_data());
  if constexpr (std::is_same_v<T, float>)
    if (g.winograd(false)) return winograd_conv3x3(g.winograd_forward(), x, w, false, bias, y);
  const int64_t K = g.K(), L = g.L(), HW = g.H * g.W;
  parallel_for(g.chunks(), 1, [&](int64_t c0, int64_t c1) {
    Scratch<T> cols_buf, folded_buf, pad_buf;
    for (int64_t c = c0; c < c1; ++c)
      for (int64_t grp = 0; grp < g.G; ++grp) {
        const Chunk<T> ch{g, c * g.chunk(), std::min(g.N, (c + 1) * g.chunk()), grp};
        const T* wg = w + grp * g.Og() * K;
        const T* b = bias ? bias + grp * g.Og() : nullptr;
        if (ch.count() == 1) {  // the product writes the output planes directly
          T* ys = ch.planes(y, g.O, g.Og(), L, ch.n0);
          const T* src = ch.planes(x, g.C, g.Cg(), HW, ch.n0);
          if (b)
            for (int64_t o = 0; o < g.Og(); ++o) std::fill(ys + o * L, ys + (o + 1) * L, b[o]);
          if (g.pointwise()) {
            gemm<T>(false, false, g.Og(), L, K, wg, K, src, L, b ? T(1) : T(0), ys, L);
            continue;
          }
          // A large column matrix is made and multiplied a block of output rows at a time, so
          // that OpenBLAS reads it back from the cache.
          Geometry q;
          const T* planes = padded_planes(g, src, pad_buf, q);
          const int64_t rows = std::clamp<int64_t>(kBlockColumns / std::max<int64_t>(K * g.Wo, 1), 1, g.Ho);
          T* cols = cols_buf.get(K * rows * g.Wo);
          for (int64_t oh0 = 0; oh0 < g.Ho; oh0 += rows) {
            const int64_t oh1 = std::min(g.Ho, oh0 + rows), n = (oh1 - oh0) * g.Wo;
            im2col_planes(q, planes, cols, n, oh0, oh1);
            gemm<T>(false, false, g.Og(), n, K, wg, K, cols, n, b ? T(1) : T(0), ys + oh0 * g.Wo, L);
          }
          continue;
        }
        T* cols = cols_buf.get(K * ch.ld());
        T* folded = folded_buf.get(g.Og() * ch.ld());
        for (int64_t n = ch.n0; n < ch.n1; ++n)
          im2col(g, ch.planes(x, g.C, g.Cg(), HW, n), cols + (n - ch.n0) * L, ch.ld(), pad_buf);
        gemm<T>(false, false, g.Og(), ch.ld(), K, wg, K, cols, ch.ld(), T(0), folded, ch.ld());
        for (int64_t n = ch.n0; n < ch.n1; ++n)
          for (int64_t o = 0; o < g.Og(); ++o) {
            const T* src = folded + o * ch.ld() + (n - ch.n0) * L;
            T* dst = ch.planes(y, g.O, g.Og(), L, n) + o * L;
            const T add = b ? b[o] : T(0);
            for (int64_t l = 0; l < L; ++l) dst[l] = src[l] + add;
          }
      }
  });
}

template <class T>
void conv_input_grad(const Tensor& gt, const Tensor& wt, const Conv2dParams& p, const Tensor& gxt, bool avx512) {
  const Geometry g = geometry(gxt, wt, gt, p);
  if constexpr (std::is_same_v<T, float>)
    if (direct_applies(p, g.C, avx512) && p.stride[0] == 1 && p.stride[1] == 1 && p.padding[0] < g.kh &&
        p.padding[1] < g.kw && g.O * g.K() <= kChunkElements * 16) {
      // With unit stride the input gradient is a convolution of g by the rotated, transposed
      // weights with padding k - 1 - padding: the direct kernel's, under the same tile rule.
      // Only for weights of up to 2^20 elements: the transposed packing (a training step's
      // weights change every call) costs more than the kernel gains on larger ones (512
      // channels 3x3 on 7x7 at batch 2: 1.0 ms of packing, 2.9 in all against 2.55; 256 on
      // 14x14: 2.0 against 2.2; 128 on 28x28: 1.9 against 2.05).
      const DirectConv d{
          g.N, g.O, g.Ho, g.Wo, g.C, g.kh, g.kw, g.H, g.W, 1, 1, g.kh - 1 - p.padding[0], g.kw - 1 - p.padding[1]};
      if (!winograd_first(g.winograd(true), std::min(g.C, g.O), g.H, g.W))
        return direct_conv2d(d, gt, wt, true, Tensor(), gxt);
    }
  const T* gy = static_cast<const T*>(gt.raw_data());
  const T* w = static_cast<const T*>(wt.raw_data());
  T* gx = static_cast<T*>(gxt.raw_data());
  if constexpr (std::is_same_v<T, float>)
    if (g.winograd(true)) return winograd_conv3x3(g.winograd_input_grad(), gy, w, true, nullptr, gx);
  const int64_t K = g.K(), L = g.L(), HW = g.H * g.W;
  // Small weights are transposed to [K, Og] per group once: untransposed products take
  // OpenBLAS's faster small-matrix path. Large ones are read transposed in place, as the
  // strided copy would cost more than the product gains.
  const bool copy_transposed = g.O * K <= kChunkElements;
  Scratch<T> wt_buf;
  T* w_t = copy_transposed ? wt_buf.get(g.O * K) : nullptr;
  if (copy_transposed)
    for (int64_t grp = 0; grp < g.G; ++grp)
      for (int64_t o = 0; o < g.Og(); ++o)
        for (int64_t k = 0; k < K; ++k) w_t[(grp * K + k) * g.Og() + o] = w[(grp * g.Og() + o) * K + k];
  // cols [K, n] = the group's weights transposed times the outputs' gradient [Og, n].
  auto product = [&](int64_t grp, int64_t n, const T* gs, T* cols) {
    if (copy_transposed) gemm<T>(false, false, K, n, g.Og(), w_t + grp * K * g.Og(), g.Og(), gs, n, T(0), cols, n);
    else gemm<T>(true, false, K, n, g.Og(), w + grp * g.Og() * K, K, gs, n, T(0), cols, n);
  };
  parallel_for(g.chunks(), 1, [&](int64_t c0, int64_t c1) {
    Scratch<T> cols_buf, folded_buf, pad_buf;
    for (int64_t c = c0; c < c1; ++c)
      for (int64_t grp = 0; grp < g.G; ++grp) {
        const Chunk<T> ch{g, c * g.chunk(), std::min(g.N, (c + 1) * g.chunk()), grp};
        const T* gs = ch.planes(gy, g.O, g.Og(), L, ch.n0);
        if (ch.count() > 1) {
          T* folded = folded_buf.get(g.Og() * ch.ld());
          ch.gather_out(gy, folded);
          gs = folded;
        }
        if (ch.count() == 1 && g.pointwise()) {
          product(grp, L, gs, ch.planes(gx, g.C, g.Cg(), HW, ch.n0));
          continue;
        }
        T* cols = cols_buf.get(K * ch.ld());
        product(grp, ch.ld(), gs, cols);
        for (int64_t n = ch.n0; n < ch.n1; ++n)
          col2im(g, cols + (n - ch.n0) * L, ch.ld(), ch.planes(gx, g.C, g.Cg(), HW, n), pad_buf);
      }
  });
}

template <class T>
void conv_weight_grad(const Tensor& xt, const Tensor& gt, const Conv2dParams& p, const Tensor& gwt, bool avx512) {
  const Geometry g = geometry(xt, gwt, gt, p);
  const T* x = static_cast<const T*>(xt.raw_data());
  const T* gy = static_cast<const T*>(gt.raw_data());
  T* gw = static_cast<T*>(gwt.raw_data());
  if constexpr (std::is_same_v<T, float>) {
    if (g.winograd(false)) return winograd_weight_grad3x3(g.winograd_forward(), x, gy, gw);
    // The direct kernel sums over every sample's output plane per call: from 128 pixels in all
    // (ResNet-18 at batch 2: the stem 3.6 -> 3.0 ms, 256 channels 3x3 on 14x14 2.2 -> 1.9, the
    // strided 1x1 layers about halved); below (7x7 planes at batch 2) OpenBLAS's product over
    // the folded samples was as fast.
    if (direct_applies(p, g.O, avx512) && g.N * g.L() >= 128) {
      const DirectConv d{g.N,  g.C,  g.H,         g.W,         g.O,          g.kh,        g.kw,
                         g.Ho, g.Wo, p.stride[0], p.stride[1], p.padding[0], p.padding[1]};
      return direct_conv2d_weight_grad(d, xt, gt, gwt);
    }
  }
  const int64_t K = g.K(), L = g.L(), HW = g.H * g.W, size = g.O * K, chunks = g.chunks();
  // Runs of consecutive chunks (how many: fixed by the problem, and fewer for large weights)
  // each sum into their own partial, the first into gw; the partials are added in order.
  const int64_t runs =
      std::clamp<int64_t>((int64_t{1} << 22) / std::max<int64_t>(size, 1), 1, std::min<int64_t>(chunks, 16));
  Scratch<T> partial_buf;
  T* partial = partial_buf.get((runs - 1) * size);
  parallel_for(runs, 1, [&](int64_t r0, int64_t r1) {
    Scratch<T> cols_buf, folded_buf, pad_buf;
    for (int64_t r = r0; r < r1; ++r) {
      T* acc = r == 0 ? gw : partial + (r - 1) * size;
      for (int64_t c = chunks * r / runs; c < chunks * (r + 1) / runs; ++c)
        for (int64_t grp = 0; grp < g.G; ++grp) {
          const Chunk<T> ch{g, c * g.chunk(), std::min(g.N, (c + 1) * g.chunk()), grp};
          const T* src = ch.planes(x, g.C, g.Cg(), HW, ch.n0);
          const T beta = c == chunks * r / runs ? T(0) : T(1);
          T* acc_g = acc + grp * g.Og() * K;
          if (ch.count() == 1 && !g.pointwise() && K * L > kBlockColumns) {
            // As in the forward pass: a block of output rows at a time, from the cache.
            Geometry q;
            const T* planes = padded_planes(g, src, pad_buf, q);
            const T* gs = ch.planes(gy, g.O, g.Og(), L, ch.n0);
            const int64_t rows = std::clamp<int64_t>(kBlockColumns / std::max<int64_t>(K * g.Wo, 1), 1, g.Ho);
            T* cols = cols_buf.get(K * rows * g.Wo);
            for (int64_t oh0 = 0; oh0 < g.Ho; oh0 += rows) {
              const int64_t oh1 = std::min(g.Ho, oh0 + rows), n = (oh1 - oh0) * g.Wo;
              im2col_planes(q, planes, cols, n, oh0, oh1);
              gemm<T>(false, true, g.Og(), K, n, gs + oh0 * g.Wo, L, cols, n, oh0 == 0 ? beta : T(1), acc_g, K);
            }
            continue;
          }
          int64_t ld = L;
          if (ch.count() > 1 || !g.pointwise()) {
            T* cols = cols_buf.get(K * ch.ld());
            for (int64_t n = ch.n0; n < ch.n1; ++n)
              im2col(g, ch.planes(x, g.C, g.Cg(), HW, n), cols + (n - ch.n0) * L, ch.ld(), pad_buf);
            src = cols;
            ld = ch.ld();
          }
          const T* gs = ch.planes(gy, g.O, g.Og(), L, ch.n0);
          if (ch.count() > 1) {  // the chunk's output planes side by side, one product over all
            T* folded = folded_buf.get(g.Og() * ch.ld());
            ch.gather_out(gy, folded);
            gs = folded;
          }
          gemm<T>(false, true, g.Og(), K, ch.ld(), gs, ch.ld(), src, ld, beta, acc_g, K);
        }
    }
  });
  for (int64_t r = 1; r < runs; ++r) {
    const T* part = partial + (r - 1) * size;
    for (int64_t i = 0; i < size; ++i) gw[i] += part[i];
  }
}

}  // namespace

void CpuBackend::conv2d(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv2dParams& p,
                        const Tensor& out) {
  if (out.numel() == 0) return;
  if (x.size(1) == 0) {  // no input channels: the bias alone
    if (bias.defined())  // bias [O] seen as [N, O, H, W] with stride 0 along N, H and W
      copy(Tensor(make_ref<TensorImpl>(bias.storage(), out.shape(), Strides{0, bias.stride(0), 0, 0},
                                       bias.storage_offset(), bias.dtype())),
           out);
    else fill(out, 0);
    return;
  }
  if (out.dtype() == DType::BFloat16) return conv2d_bf16(*this, x, w, bias, p, out);  // cpu_conv_bf16.cpp
  dispatch_float_or_double(out.dtype(), "conv2d",
                           [&](auto t) { conv_forward<decltype(t)>(x, w, bias, p, out, isa_ == Isa::Avx512); });
}

void CpuBackend::conv2d_input_grad(const Tensor& g, const Tensor& w, const Conv2dParams& p, const Tensor& gx) {
  if (gx.numel() == 0) return;
  if (g.numel() == 0) return fill(gx, 0);
  if (gx.dtype() == DType::BFloat16) return conv2d_input_grad_bf16(*this, g, w, p, gx);  // cpu_conv_bf16.cpp
  dispatch_float_or_double(gx.dtype(), "conv2d",
                           [&](auto t) { conv_input_grad<decltype(t)>(g, w, p, gx, isa_ == Isa::Avx512); });
}

void CpuBackend::conv2d_weight_grad(const Tensor& x, const Tensor& g, const Conv2dParams& p, const Tensor& gw) {
  if (gw.numel() == 0) return;
  if (x.numel() == 0 || g.numel() == 0) return fill(gw, 0);
  if (gw.dtype() == DType::BFloat16) return conv2d_weight_grad_bf16(*this, x, g, p, gw);  // cpu_conv_bf16.cpp
  dispatch_float_or_double(gw.dtype(), "conv2d",
                           [&](auto t) { conv_weight_grad<decltype(t)>(x, g, p, gw, isa_ == Isa::Avx512); });
}

}  // namespace ug::cpu
