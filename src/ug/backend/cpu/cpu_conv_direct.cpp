// The direct AVX-512 convolution (cpu_conv_direct.h). Per block of 64 output channels and run
// of the batch's output pixels (the samples' one after the other), the output is summed in a
// blocked buffer [pixels][64] (one zmm per pixel and 16 channels), a block of input channels
// at a time so that the block's packed weights stay in L2 while every pixel reads them; the
// last block's pass adds the bias and writes the planes of y. Each output channel is one lane running the same FMA
// sequence as every other channel: channels with equal weights come out bit-equal (the light SqueezeNet zoo graph
// relies on that), and the order is fixed by the shape, never by the thread count.
#include "ug/backend/cpu/cpu_conv_direct.h"

#include <immintrin.h>

#include <algorithm>
#include <list>
#include <mutex>

#include "ug/backend/cpu/cpu_backend.h"
#include "ug/backend/cpu/cpu_winograd.h"
#include "ug/backend/cpu/scratch.h"
#include "ug/core/thread_pool.h"

namespace ug::cpu {

namespace {

constexpr int64_t kBlock = 64;                       // output channels per block: 4 zmm
constexpr int64_t kTile = 6;                         // output pixels per micro-kernel call: 4 x 6 accumulators
constexpr int64_t kChunk = 960;                      // output pixels summed before they are written: 240 KiB of sums
constexpr int64_t kInBlock = 64;                     // input channels per pass over the output block
constexpr int64_t kCacheBytes = int64_t{256} << 20;  // packed weights kept at most

/** Packed weights: for each block of 64 output channels (the last one zero-padded to a
 *  multiple of 16), [C][kh][kw][lanes], lanes = the block's padded width. */
int64_t packed_size(int64_t O, int64_t K) { return (O + 15) / 16 * 16 * K; }
int64_t lanes_of(int64_t O, int64_t o0) { return std::min<int64_t>(kBlock, (O - o0 + 15) / 16 * 16); }

Tensor pack(const Tensor& w, bool transposed, const Tensor& into);

/** The forms a weight is cached in: the direct kernel's packing, plain or transposed (pack),
 *  and Winograd's transformed filters (winograd_filters). */
enum class Form { Direct, DirectTransposed, Winograd };

/** Packed weights by the weight's storage (held, so that its address is never another's),
 *  offset, shape, strides and version: an in-place change bumps the version, so a changed
 *  weight is packed again, never read stale. Least recently used first out past kCacheBytes;
 *  entries whose weight nobody else holds any more go at every call. */
class PackCache {
 public:
  /** w in this form, made by make(w, a buffer to reuse or an undefined tensor) if not cached.
   *  defer: a weight not seen at this version before is only noted, and an undefined tensor
   *  returned (the caller packs as it goes); the second call at one version packs and caches.
   *  A training step, whose weights change after every step, then never packs a copy. */
  template <class Make> Tensor get(const Tensor& w, Form form, const Make& make, bool defer = false) {
    Tensor reuse;  // a stale entry's buffer that no caller holds: packed again in place
    {
      std::lock_guard lock(mutex_);
      // Weights nobody else holds any more (a model deleted): their blocks go at the next call.
      std::erase_if(entries_, [&](const Entry& e) {
        const bool orphan = e.storage->use_count() == 1;
        if (orphan) bytes_ -= bytes(e.packed);
        return orphan;
      });
      for (auto it = entries_.begin(); it != entries_.end(); ++it)
        if (it->storage.get() == w.storage().get() && it->offset == w.storage_offset() && it->shape == w.shape() &&
            it->strides == w.strides() && it->form == form) {
          if (it->version != w.version()) {
            bytes_ -= bytes(it->packed);
            // No convolution still reading it: callers hold copies of the Tensor (its impl).
            if (it->packed.defined() && it->packed.impl_ref()->use_count() == 1 &&
                it->packed.storage()->use_count() == 1)
              reuse = std::move(it->packed);
            entries_.erase(it);
            break;
          }
          if (!it->packed.defined()) {  // noted once at this version: packed now
            entries_.erase(it);
            defer = false;
            break;
          }
          entries_.splice(entries_.begin(), entries_, it);
          return it->packed;
        }
    }
    // A training step changes every weight: packing into the same block again spares the
    // page faults of a fresh one (the allocator returns large blocks to the system).
    Tensor packed = defer ? Tensor() : make(w, reuse);  // outside the lock: other threads' convolutions go on
    std::lock_guard lock(mutex_);
    entries_.push_front({w.storage(), w.storage_offset(), w.shape(), w.strides(), form, w.version(), packed});
    bytes_ += bytes(packed);
    while (bytes_ > kCacheBytes && entries_.size() > 1) {
      bytes_ -= bytes(entries_.back().packed);
      entries_.pop_back();
    }
    return packed;
  }

 private:
  struct Entry {
    Ref<Storage> storage;
    int64_t offset;
    Shape shape;
    Strides strides;
    Form form;
    uint32_t version;
    Tensor packed;
  };
  static int64_t bytes(const Tensor& packed) { return packed.defined() ? packed.numel() * 4 : 0; }
  std::mutex mutex_;
  std::list<Entry> entries_;
  int64_t bytes_ = 0;
};

PackCache& pack_cache() {
  static auto* cache = new PackCache();
  return *cache;
}

/** Where a window's inputs lie in the padded planes, in floats. */
struct Window {
  int64_t kh, kw, row_step, plane, col_step = 1;  // col_step: read by the general window only
};

// Everything up to the matching pop is compiled for AVX-512 (GCC's pragma; clang's, for the
// fuzzing build); callers check the CPU first (see the header).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,fma,prfchw"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512vl,avx512bw,avx512dq,fma,prfchw")
#endif

/** Cache lines to prefetch into L2 as a micro-kernel runs: `lines` per input channel from `at`. */
struct Prefetch {
  const char* at = nullptr;
  int64_t lines = 0;
};

/** acc [R][V * 16] (+)= R output pixels of V * 16 channels over `channels` input channels:
 *  pixel r reads x + off[r] (its window's first input, channel 0), w is the packed block at
 *  input channel 0. KH, KW > 0: the window's size known at compile time, its taps unrolled. */
template <int V, int R, int KH, int KW>
void micro_kernel(const float* x, const int64_t* off, const Window& win, const float* w, int64_t channels, float* acc,
                  bool first, Prefetch pf) {
  const int64_t kh = KH > 0 ? KH : win.kh, kw = KW > 0 ? KW : win.kw, row = win.row_step;
  const int64_t col = KW > 0 ? 1 : win.col_step;
  __m512 a[R][V];
  int64_t o[R];
  for (int r = 0; r < R; ++r) o[r] = off[r];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) a[r][v] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(acc + (r * V + v) * 16);
  for (int64_t c = 0; c < channels; ++c, x += win.plane) {
    for (int64_t k = 0; k < pf.lines; ++k, pf.at += 64) _mm_prefetch(pf.at, _MM_HINT_T1);
    const float* xi = x;
    for (int64_t i = 0; i < kh; ++i, xi += row)
      for (int64_t j = 0; j < kw; ++j, w += V * 16) {
        __m512 wv[V];
        for (int v = 0; v < V; ++v) wv[v] = _mm512_loadu_ps(w + v * 16);
        for (int r = 0; r < R; ++r) {
          const __m512 b = _mm512_set1_ps(xi[o[r] + j * col]);
          for (int v = 0; v < V; ++v) a[r][v] = _mm512_fmadd_ps(b, wv[v], a[r][v]);
        }
      }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < V; ++v) _mm512_storeu_ps(acc + (r * V + v) * 16, a[r][v]);
}

using Kernel = void (*)(const float*, const int64_t*, const Window&, const float*, int64_t, float*, bool, Prefetch);

template <int V, int KH, int KW> Kernel kernel_for(int64_t r) {
  switch (r) {
    case 1: return micro_kernel<V, 1, KH, KW>;
    case 2: return micro_kernel<V, 2, KH, KW>;
    case 3: return micro_kernel<V, 3, KH, KW>;
    case 4: return micro_kernel<V, 4, KH, KW>;
    case 5: return micro_kernel<V, 5, KH, KW>;
    default: return micro_kernel<V, kTile, KH, KW>;
  }
}

template <int KH, int KW> Kernel kernel_for(int64_t v, int64_t r) {
  switch (v) {
    case 1: return kernel_for<1, KH, KW>(r);
    case 2: return kernel_for<2, KH, KW>(r);
    case 3: return kernel_for<3, KH, KW>(r);
    default: return kernel_for<4, KH, KW>(r);
  }
}

/** The micro-kernel for V vectors of channels, R pixels and this window (0, 0: the general
 *  one, which also steps its columns by col_step). */
Kernel kernel_for(int64_t v, int64_t r, int64_t kh, int64_t kw) {
  if (kh == 3 && kw == 3) return kernel_for<3, 3>(v, r);
  if (kh == 1 && kw == 1) return kernel_for<1, 1>(v, r);
  if (kh == 7 && kw == 7) return kernel_for<7, 7>(v, r);  // the stems of ResNets
  return kernel_for<0, 0>(v, r);
}

/** One sample's zero-padded planes [C][Hp][Wp] from x [C][H][W]. */
void pad_planes(const DirectConv& g, const float* x, float* out, int64_t Hp, int64_t Wp) {
  // Each padded row is built 16 floats at a time in a register: a load of the lanes that lie
  // in x's row (the others read as zero), a store of all of them. Each element is written
  // once, with no call per row (std::copy and std::fill per 56-float row cost ResNet-18 2% of
  // its inference). Lanes [lo, hi) of vector k / 16 are x's: masks the same for every row.
  const int64_t vectors = (Wp + 15) / 16;
  std::vector<__mmask16> in(vectors);
  for (int64_t v = 0; v < vectors; ++v) {
    const int64_t lo = std::clamp<int64_t>(g.pw - v * 16, 0, 16), hi = std::clamp<int64_t>(g.pw + g.W - v * 16, 0, 16);
    in[v] = static_cast<__mmask16>(((1u << hi) - 1) & ~((1u << lo) - 1));
  }
  const __mmask16 last = static_cast<__mmask16>((1u << (Wp - (vectors - 1) * 16)) - 1);
  for (int64_t c = 0; c < g.C; ++c)
    for (int64_t h = 0; h < Hp; ++h) {
      float* row = out + (c * Hp + h) * Wp;
      const int64_t ih = h - g.ph;
      const float* src = ih >= 0 && ih < g.H ? x + (c * g.H + ih) * g.W - g.pw : nullptr;  // lane l: src[k + l]
      for (int64_t v = 0, k = 0; v < vectors; ++v, k += 16) {
        // Plain loads and stores where all 16 lanes lie inside (masked ones stalled); the
        // masked load touches no element outside x's row.
        const __m512 val = !src || !in[v]    ? _mm512_setzero_ps()
                           : in[v] == 0xFFFF ? _mm512_loadu_ps(src + k)
                                             : _mm512_maskz_loadu_ps(in[v], src + k);
        if (v + 1 < vectors) _mm512_storeu_ps(row + k, val);
        else _mm512_mask_storeu_ps(row + k, last, val);
      }
    }
}

/** rows[c] = column c of the 16x16 matrix whose row p is rows[p]: three stages of shuffles
 *  (pairs of floats, pairs of doubles, 128-bit lanes twice). */
void transpose16(__m512 rows[16]) {
  __m512 t[16], u[16];
  for (int k = 0; k < 8; ++k) {
    t[2 * k] = _mm512_unpacklo_ps(rows[2 * k], rows[2 * k + 1]);
    t[2 * k + 1] = _mm512_unpackhi_ps(rows[2 * k], rows[2 * k + 1]);
  }
  for (int k = 0; k < 4; ++k) {  // u[4k + m], 128-bit lane q: column 4q + m of rows 4k .. 4k + 3
    const __m512d a = _mm512_castps_pd(t[4 * k]), b = _mm512_castps_pd(t[4 * k + 1]);
    const __m512d c = _mm512_castps_pd(t[4 * k + 2]), d = _mm512_castps_pd(t[4 * k + 3]);
    u[4 * k] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    u[4 * k + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    u[4 * k + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    u[4 * k + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int m = 0; m < 4; ++m) {
    const __m512 v0 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x44), v1 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xEE);
    const __m512 v2 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x44);
    const __m512 v3 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xEE);
    rows[m] = _mm512_shuffle_f32x4(v0, v2, 0x88);
    rows[4 + m] = _mm512_shuffle_f32x4(v0, v2, 0xDD);
    rows[8 + m] = _mm512_shuffle_f32x4(v1, v3, 0x88);
    rows[12 + m] = _mm512_shuffle_f32x4(v1, v3, 0xDD);
  }
}

/** Input channels [c0, c1) of the packed block of output channels o0 .. o0 + lanes (see
 *  packed_size) into dst [c1 - c0][kh][kw][lanes], from src, the contiguous w [O, C, kh, kw]
 *  (taps = kh * kw): 16 output channels x 16 of the taps at a time, transposed in registers (a
 *  training step packs every weight anew, so this runs at memory speed). transposed: src is w'
 *  [C, O, kh, kw] and the block that of w[o][c] = w'[c][o] rotated by 180 degrees, the weight
 *  whose convolution is the input gradient of w' (stride 1): 16 channels o x 16 taps of one c
 *  at a time, transposed the same way. */
void pack_block(const float* src, bool transposed, int64_t O, int64_t C, int64_t taps, int64_t o0, int64_t c0,
                int64_t c1, float* dst) {
  const int64_t lanes = lanes_of(O, o0);
  if (transposed) {
    for (int64_t c = c0; c < c1; ++c)  // w'[c] read once, in order
      for (int64_t l0 = 0; l0 < lanes; l0 += 16)
        for (int64_t t0 = 0; t0 < taps; t0 += 16) {  // rows: 16 channels o, columns: 16 taps
          const int64_t n = std::min<int64_t>(16, taps - t0);
          const __mmask16 mask = static_cast<__mmask16>((1u << n) - 1);
          __m512 rows[16];
          for (int64_t l = 0; l < 16; ++l)
            rows[l] = o0 + l0 + l < O ? _mm512_maskz_loadu_ps(mask, src + (c * O + o0 + l0 + l) * taps + t0)
                                      : _mm512_setzero_ps();
          transpose16(rows);
          for (int64_t t = 0; t < n; ++t)  // w[o][c] tap taps - 1 - t is w'[c][o] tap t
            _mm512_storeu_ps(dst + ((c - c0) * taps + taps - 1 - t0 - t) * lanes + l0, rows[t]);
        }
    return;
  }
  const int64_t K = C * taps, k1 = c1 * taps;
  for (int64_t l0 = 0; l0 < lanes; l0 += 16)
    for (int64_t k0 = c0 * taps; k0 < k1; k0 += 16) {
      const int64_t n = std::min<int64_t>(16, k1 - k0);
      const __mmask16 mask = static_cast<__mmask16>((1u << n) - 1);
      __m512 rows[16];
      for (int64_t l = 0; l < 16; ++l)
        rows[l] = o0 + l0 + l < O ? _mm512_maskz_loadu_ps(mask, src + (o0 + l0 + l) * K + k0) : _mm512_setzero_ps();
      transpose16(rows);
      for (int64_t k = 0; k < n; ++k) _mm512_storeu_ps(dst + (k0 - c0 * taps + k) * lanes + l0, rows[k]);
    }
}

/** The packed weights (see packed_size) of w [O, C, kh, kw], or of the transposed w' [C, O,
 *  kh, kw] (pack_block), into `into` if defined. */
Tensor pack(const Tensor& w, bool transposed, const Tensor& into) {
  const Tensor wc = contiguous(w, DType::Float32);
  const int64_t O = w.size(transposed ? 1 : 0), C = w.size(transposed ? 0 : 1), taps = w.size(2) * w.size(3);
  const Tensor packed =
      into.defined() ? into : empty({packed_size(O, C * taps)}, {.dtype = DType::Float32, .device = Device()});
  const float* src = static_cast<const float*>(wc.raw_data());
  float* dst = static_cast<float*>(packed.raw_data());
  for (int64_t o0 = 0; o0 < O; o0 += kBlock) pack_block(src, transposed, O, C, taps, o0, 0, C, dst + o0 * C * taps);
  return packed;
}

/** out[c * ld + l] = acc[l - l0][c] (+ bias[c]) for rows l in [l0, l1) and channels c <
 *  count of sums blocked [l1 - l0][lanes]: 16 rows x 16 channels at a time, transposed in
 *  registers; then the epilogue, in the composed ops' order: + out's old value, relu. */
void store_transposed(const float* acc, int64_t l0, int64_t l1, int64_t lanes, int64_t count, const float* bias,
                      float* out, int64_t ld, Epilogue e = {}) {
  for (int64_t l = l0; l < l1; l += 16) {
    const int64_t n = std::min<int64_t>(16, l1 - l);
    const __mmask16 mask = static_cast<__mmask16>((1u << n) - 1);
    for (int64_t c0 = 0; c0 < count; c0 += 16) {
      __m512 rows[16];
      for (int64_t p = 0; p < 16; ++p)
        rows[p] = p < n ? _mm512_loadu_ps(acc + (l - l0 + p) * lanes + c0) : _mm512_setzero_ps();
      transpose16(rows);
      for (int64_t c = 0; c < std::min<int64_t>(16, count - c0); ++c) {
        const __m512 b = _mm512_set1_ps(bias ? bias[c0 + c] : 0.0f);
        float* dst = out + (c0 + c) * ld + l;
        __m512 v = _mm512_add_ps(rows[c], b);
        if (e.accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, dst));
        // relu as ops::Relu::f: x > 0 or NaN keeps x, anything else (-0 too) is +0.
        if (e.relu) v = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_NLE_UQ), v);
        _mm512_mask_storeu_ps(dst, mask, v);
      }
    }
  }
}

/** Pixels [l0, l1) of y's planes o0 .. o0 + lanes of one sample from their blocked sums
 *  [l1 - l0][lanes], plus bias. */
void write_planes(const DirectConv& g, const float* acc, int64_t l0, int64_t l1, int64_t o0, int64_t lanes,
                  const float* bias, float* y) {
  const int64_t L = g.Ho * g.Wo;
  store_transposed(acc, l0, l1, lanes, std::min(lanes, g.O - o0), bias ? bias + o0 : nullptr, y + o0 * L, L,
                   g.epilogue);
}

/** Each sample's padded planes (x itself without padding), in buf if it needs them. */
const float* padded_inputs(const DirectConv& g, const float* x, Scratch<float>& buf) {
  if (g.ph == 0 && g.pw == 0) return x;
  const int64_t Hp = g.H + 2 * g.ph, Wp = g.W + 2 * g.pw;
  float* out = buf.get(g.N * g.C * Hp * Wp);
  parallel_for(g.N, 1, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) pad_planes(g, x + n * g.C * g.H * g.W, out + n * g.C * Hp * Wp, Hp, Wp);
  });
  return out;
}

/** y = x convolved with the packed weights, or where packed is null with w (contiguous; the
 *  transposed form if transposed, see direct_conv2d) packed a pass at a time as it runs: each
 *  block's weights are then read once, with no packed copy written and read back. The samples'
 *  output pixels run one after the other, so that a block's pass of weights serves the tiles of
 *  every sample while it is in cache. */
void run(const DirectConv& g, const float* x, const float* packed, const float* w, bool transposed, const float* bias,
         float* y) {
  const int64_t Hp = g.H + 2 * g.ph, Wp = g.W + 2 * g.pw, taps = g.kh * g.kw, K = g.C * taps, L = g.Ho * g.Wo;
  const int64_t P = g.N * L, blocks = (g.O + kBlock - 1) / kBlock;
  const Window win{g.kh, g.kw, Wp, Hp * Wp};
  std::vector<int64_t> offsets(P);  // each output pixel's first input, from sample 0's planes
  for (int64_t p = 0; p < P; ++p) offsets[p] = p / L * g.C * Hp * Wp + p % L / g.Wo * g.sh * Wp + p % L % g.Wo * g.sw;
  Scratch<float> pad_all;
  const float* pads = padded_inputs(g, x, pad_all);
  // Tasks: a block of output channels and a run of kChunk pixels, whose sums stay in L2.
  const int64_t chunks = (P + kChunk - 1) / kChunk;
  parallel_for(blocks * chunks, 1, [&](int64_t t0, int64_t t1) {
    Scratch<float> acc_buf, pass_buf;
    float* acc = acc_buf.get(std::min(P, kChunk) * kBlock);
    float* pass = packed ? nullptr : pass_buf.get(kInBlock * taps * kBlock);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o0 = t / chunks * kBlock, lanes = lanes_of(g.O, o0);
      const int64_t p0 = t % chunks * kChunk, p1 = std::min(P, p0 + kChunk);
      const int64_t count = std::min(lanes, g.O - o0);
      // The chunk's pixels of sample n: [lo(n), hi(n)) of its plane, for n in [p0 / L, (p1 - 1) / L].
      const int64_t n_first = p0 / L, n_last = (p1 - 1) / L;
      auto lo = [&](int64_t n) { return std::max(p0, n * L) - n * L; };
      auto hi = [&](int64_t n) { return std::min(p1, (n + 1) * L) - n * L; };
      auto row_lines = [&](int64_t n) { return (hi(n) - lo(n) + 15) / 16 + 1; };
      for (int64_t c0 = 0; c0 < g.C; c0 += kInBlock) {
        const int64_t cn = std::min(kInBlock, g.C - c0);
        const float* xc = pads + c0 * Hp * Wp;
        const float* wc = packed ? packed + o0 * K + c0 * taps * lanes : pass;
        if (!packed) pack_block(w, transposed, g.O, g.C, taps, o0, c0, c0 + cn, pass);
        // The packed weights of the next pass (the next input channels, or the next block's first
        // ones after this block's last pixels) are prefetched a few lines per input channel of each
        // tile: large layers' weights come from memory (ResNet-18's 512-channel ones, 9.4 MB
        // each, on a 49-pixel plane: each weight serves 9 tiles), which the first tile of a
        // pass otherwise waits for (ResNet-18 inference / ONNX Runtime 1.08 -> 1.05). A burst
        // of prefetches before each tile instead stalled on the misses and was slower.
        const float* next = !packed                        ? nullptr
                            : c0 + kInBlock < g.C          ? wc + cn * taps * lanes
                            : p1 == P && o0 + kBlock < g.O ? packed + (o0 + kBlock) * K
                                                           : nullptr;
        const int64_t next_lines =
            next ? std::min(kInBlock * taps * kBlock, packed + packed_size(g.O, K) - next) / 16 : 0;
        const int64_t tiles = (p1 - p0 + kTile - 1) / kTile;
        const int64_t per_channel = (next_lines + tiles * cn - 1) / (tiles * cn);
        // The last pass also claims the output's lines a share before each tile, so that the
        // stores of write_planes find them in cache (the stem's 3.2 MB output otherwise waits
        // on memory as it is written: 1.32 -> 1.25 ms alone; ResNet-18 / ONNX Runtime 1.05 -> 1.03).
        int64_t out_lines = 0;
        if (c0 + kInBlock >= g.C)
          for (int64_t n = n_first; n <= n_last; ++n) out_lines += count * row_lines(n);
        const int64_t out_per_tile = (out_lines + tiles - 1) / tiles;
        int64_t out_n = n_first, out_ch = 0, out_line = 0;  // the next output line to claim
        // The pixels split into tiles of as even sizes as fit (49 = 4 x 6 + 5 x 5, not 8 x 6 + 1:
        // a 1-pixel tile loads as many weights as a 6-pixel one for a sixth of the FMAs); each
        // pixel's sum is the same whatever its tile.
        const int64_t base = (p1 - p0) / tiles, longer = (p1 - p0) % tiles;
        for (int64_t i = 0, p = p0, done = 0, r; i < tiles; ++i, p += r, done += per_channel * cn) {
          r = base + (i < longer);
          for (int64_t m = 0; m < out_per_tile && out_n <= n_last; ++m) {
            __builtin_prefetch(y + (out_n * g.O + o0 + out_ch) * L + lo(out_n) + out_line * 16, 1, 3);
            if (++out_line == row_lines(out_n)) out_line = 0, ++out_ch;
            if (out_ch == count) out_ch = 0, ++out_n;
          }
          const Prefetch pf{reinterpret_cast<const char*>(next + done * 16), done < next_lines ? per_channel : 0};
          kernel_for(lanes / 16, r, g.kh, g.kw)(xc, offsets.data() + p, win, wc, cn, acc + (p - p0) * lanes, c0 == 0,
                                                pf);
        }
      }
      for (int64_t n = n_first; n <= n_last; ++n)
        write_planes(g, acc + (n * L + lo(n) - p0) * lanes, lo(n), hi(n), o0, lanes, bias, y + n * g.O * L);
    }
  });
}

/** gw [O, C, kh, kw] = the sum over samples and output pixels p of gy[n][o][p] times the
 *  input under tap (c, i, j) of p's window: the same micro-kernel with the roles turned, its
 *  "pixels" R taps (c, i, j) of the weight, its window the output plane (the input read at
 *  each output pixel's position), its packed weights the output gradient transposed to
 *  [n][p][64 channels o], the samples as its input channels. The sum runs over samples and
 *  pixels in order: the same bits on any thread count. */
void run_weight_grad(const DirectConv& g, const float* x, const float* gy, float* gw) {
  const int64_t Hp = g.H + 2 * g.ph, Wp = g.W + 2 * g.pw, K = g.C * g.kh * g.kw, L = g.Ho * g.Wo;
  const int64_t blocks = (g.O + kBlock - 1) / kBlock, Op = (g.O + 15) / 16 * 16;
  Scratch<float> pad_all, gyt_buf;
  const float* pads = padded_inputs(g, x, pad_all);
  // gyt: per block of 64 output channels, [N][L][lanes] (zero past O).
  float* gyt = gyt_buf.get(g.N * Op * L);
  parallel_for(g.N * blocks, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = t / blocks, o0 = t % blocks * kBlock, lanes = lanes_of(g.O, o0);
      float* dst = gyt + o0 * g.N * L + n * L * lanes;
      for (int64_t l0 = 0; l0 < lanes; l0 += 16)
        for (int64_t p0 = 0; p0 < L; p0 += 16) {
          const int64_t m = std::min<int64_t>(16, L - p0);
          const __mmask16 mask = static_cast<__mmask16>((1u << m) - 1);
          __m512 rows[16];
          for (int64_t l = 0; l < 16; ++l)
            rows[l] = o0 + l0 + l < g.O ? _mm512_maskz_loadu_ps(mask, gy + (n * g.O + o0 + l0 + l) * L + p0)
                                        : _mm512_setzero_ps();
          transpose16(rows);
          for (int64_t p = 0; p < m; ++p) _mm512_storeu_ps(dst + (p0 + p) * lanes + l0, rows[p]);
        }
    }
  });
  std::vector<int64_t> taps(K);  // tap (c, i, j)'s input at output pixel 0
  for (int64_t k = 0; k < K; ++k) taps[k] = k / (g.kh * g.kw) * Hp * Wp + k / g.kw % g.kh * Wp + k % g.kw;
  const Window win{g.Ho, g.Wo, g.sh * Wp, g.C * Hp * Wp, g.sw};  // its "channels": the samples
  const int64_t chunks = (K + kChunk - 1) / kChunk;
  parallel_for(blocks * chunks, 1, [&](int64_t t0, int64_t t1) {
    Scratch<float> acc_buf;
    float* acc = acc_buf.get(std::min(K, kChunk) * kBlock);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t o0 = t / chunks * kBlock, lanes = lanes_of(g.O, o0);
      const int64_t k0 = t % chunks * kChunk, k1 = std::min(K, k0 + kChunk);
      for (int64_t k = k0; k < k1; k += kTile)
        kernel_for(lanes / 16, std::min(kTile, k1 - k), 0, 0)(pads, taps.data() + k, win, gyt + o0 * g.N * L, g.N,
                                                              acc + (k - k0) * lanes, true, {});
      store_transposed(acc, k0, k1, lanes, std::min(lanes, g.O - o0), nullptr, gw + o0 * K, K);
    }
  });
}

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

}  // namespace

void direct_conv2d(const DirectConv& g, const Tensor& x, const Tensor& w, bool transposed, const Tensor& bias,
                   const Tensor& y) {
  // Where one task runs each block of output channels over all pixels, a weight seen for the
  // first time at its version is packed a pass at a time inside the tasks (run).
  const Tensor packed = pack_cache().get(
      w, transposed ? Form::DirectTransposed : Form::Direct,
      [&](const Tensor& v, const Tensor& into) { return pack(v, transposed, into); }, g.N * g.Ho * g.Wo <= kChunk);
  const Tensor wc = packed.defined() ? Tensor() : contiguous(w, DType::Float32);
  const float* xp = static_cast<const float*>(x.raw_data());
  const float* pp = packed.defined() ? static_cast<const float*>(packed.raw_data()) : nullptr;
  const float* wp = wc.defined() ? static_cast<const float*>(wc.raw_data()) : nullptr;
  const float* bp = bias.defined() ? static_cast<const float*>(bias.raw_data()) : nullptr;
  float* yp = static_cast<float*>(y.raw_data());
  run(g, xp, pp, wp, transposed, bp, yp);
}

void direct_conv2d_weight_grad(const DirectConv& g, const Tensor& x, const Tensor& gy, const Tensor& gw) {
  run_weight_grad(g, static_cast<const float*>(x.raw_data()), static_cast<const float*>(gy.raw_data()),
                  static_cast<float*>(gw.raw_data()));
}

Tensor winograd_filters(const Tensor& w) {
  return pack_cache().get(w, Form::Winograd, [](const Tensor& v, const Tensor& into) {
    const Tensor wc = contiguous(v, DType::Float32);
    const Tensor U =
        into.defined() ? into : empty({16 * v.size(0) * v.size(1)}, {.dtype = DType::Float32, .device = Device()});
    winograd_transform_filters(v.size(0), v.size(1), static_cast<const float*>(wc.raw_data()),
                               static_cast<float*>(U.raw_data()));
    return U;
  });
}

}  // namespace ug::cpu
