// Pooling. Every form turns its arguments into PoolWindows (where each output reads) and
// runs one of three primitives on [..., H, W]: window max (with indices; its gradient
// scatters back through them), window average, and the average's adjoint (its gradient,
// whose own gradient is the average again). 1-d pooling is 2-d pooling with a height of 1;
// float16 and bfloat16 compute in float32.
#include "ug/ops/pool.h"

#include <memory>

#include "ug/graph/grad_mode.h"
#include "ug/backend/backend.h"
#include "ug/graph/op_call.h"
#include "ug/ops/window_size.h"

namespace ug {

namespace {

using Windows = std::shared_ptr<const PoolWindows>;

// The primitives' own calls: nested in the public poolings, they are captured only where they
// run alone (in a backward pass).
const graph::OpDef kMaxPool2d("max_pool2d"), kAvgPool2d("avg_pool2d"), kAvgPool2dBackward("avg_pool2d_backward");

/** x [..., H, W] as planes [P, H, W] (contiguous), for a kernel: no autograd node for the view. */
Tensor planes(const Tensor& x) {
  NoGradGuard kernel_view;
  return x.contiguous().reshape({-1, x.size(-2), x.size(-1)});
}

Shape with_last2(const Tensor& x, int64_t a, int64_t b) {
  Shape s(x.shape().begin(), x.shape().end() - 2);
  s.push_back(a);
  s.push_back(b);
  return s;
}

/** The window maxima and (when want_idx, or a derivative may read them) their positions. */
std::pair<Tensor, Tensor> window_max(const Tensor& x, const Windows& win, bool want_idx) {
  graph::OpCall call(kMaxPool2d);
  if (call.capturing())  // a vmap's physical call (no graph form of its own): a program calls it back
    call.set_replay([win](const graph::Tensors& in) {
      auto [out, idx] = window_max(in[0], win, true);
      return graph::Tensors{out, idx};
    });
  Tensor out, idx;
  if (int lvl = batching::level(x)) {
    auto [o, i] = window_max(batching::physical(x, lvl), win, true);
    out = batching::wrap(o, lvl);
    idx = batching::wrap(i, lvl);
  } else {
    Shape shape = with_last2(x, win->out_size(0), win->out_size(1));
    out = empty(shape, {.dtype = x.dtype(), .device = x.device()});
    // Inference (no derivative, no capture) skips the positions' bookkeeping.
    if (want_idx || (GradMode::is_enabled() && autograd::requires_grad(x)) || forward::active() ||
        graph::detail::current_capture)
      idx = empty(shape, {.dtype = DType::Int64, .device = x.device()});
    if (out.numel() > 0)
      backend_for(x.device())
          .max_pool2d(planes(x), *win, out.view({-1, shape[shape.size() - 2], shape.back()}),
                      idx.defined() ? idx.view({-1, shape[shape.size() - 2], shape.back()}) : Tensor());
  }
  // The indices are an integer by-product, an output for the capture (a derivative reads them).
  std::vector<const Tensor*> outputs{&out};
  if (idx.defined()) outputs.push_back(&idx);
  call.finish(
      {&x}, outputs, {},
      [&] {  // the captures are built only when a node is recorded
        return [idx, shape = x.shape(), dtype = x.dtype(), device = x.device()](graph::Saved, graph::Tensors&& g) {
          Tensor zero = zeros(shape, {.dtype = dtype, .device = device}).flatten(-2);
          return graph::Tensors{zero.scatter_add(-1, idx.flatten(-2), g[0].flatten(-2)).view(shape)};
        };
      },
      [&](const graph::Tensors& t) {
        return graph::Tensors{t[0].flatten(-2).gather(-1, idx.flatten(-2)).view(out.shape())};
      });
  return {out, idx};
}

Tensor window_avg_transpose(const Tensor& g, const Windows& win, int64_t h, int64_t w);

Tensor window_avg(const Tensor& x, const Windows& win) {
  graph::OpCall call(kAvgPool2d);
  if (call.capturing())  // a vmap's physical call (no graph form of its own): a program calls it back
    call.set_replay([win](const graph::Tensors& in) { return graph::Tensors{window_avg(in[0], win)}; });
  Tensor out;
  if (int lvl = batching::level(x)) {
    out = batching::wrap(window_avg(batching::physical(x, lvl), win), lvl);
  } else {
    Shape shape = with_last2(x, win->out_size(0), win->out_size(1));
    out = empty(shape, {.dtype = x.dtype(), .device = x.device()});
    if (out.numel() > 0)
      backend_for(x.device()).avg_pool2d(planes(x), *win, out.view({-1, shape[shape.size() - 2], shape.back()}));
  }
  call.finish(
      {&x}, {&out}, {},
      [win, h = x.size(-2), w = x.size(-1)](graph::Saved, graph::Tensors&& g) {
        return graph::Tensors{window_avg_transpose(g[0], win, h, w)};
      },
      [&](const graph::Tensors& t) { return graph::Tensors{window_avg(t[0], win)}; });
  return out;
}

/** The adjoint of window_avg: each output's gradient spread over its window. */
Tensor window_avg_transpose(const Tensor& g, const Windows& win, int64_t h, int64_t w) {
  graph::OpCall call(kAvgPool2dBackward);
  if (call.capturing()) {  // a gradient without a graph form of its own: a program calls it back
    call.set_replay(
        [win, h, w](const graph::Tensors& in) { return graph::Tensors{window_avg_transpose(in[0], win, h, w)}; },
        graph::ReplaySizes::None);
    call.set_attrs({{"height", h}, {"width", w}});  // the closure's sizes, for reduce_retracing to compare
  }
  Tensor out;
  if (int lvl = batching::level(g)) {
    out = batching::wrap(window_avg_transpose(batching::physical(g, lvl), win, h, w), lvl);
  } else {
    Shape shape = with_last2(g, h, w);
    out = empty(shape, {.dtype = g.dtype(), .device = g.device()});
    if (out.numel() > 0) backend_for(g.device()).avg_pool2d_transpose(planes(g), *win, out.view({-1, h, w}));
  }
  call.finish(
      {&g}, {&out}, {}, [win](graph::Saved, graph::Tensors&& gr) { return graph::Tensors{window_avg(gr[0], win)}; },
      [&](const graph::Tensors& t) { return graph::Tensors{window_avg_transpose(t[0], win, h, w)}; });
  return out;
}

// ---- arguments ------------------------------------------------------------------------

/** The checked arguments of a pooling over nd spatial dims, as 2-d ones (1-d: a height of
 *  1 with a kernel of 1). */
struct Args {
  int64_t kernel[2] = {1, 1}, stride[2] = {1, 1}, padding[2] = {0, 0}, dilation[2] = {1, 1};
};

Dims expand_arg(const Dims& v, int64_t nd, const char* op, const char* name, bool may_omit) {
  if (v.size() == 1) return Dims(static_cast<size_t>(nd), v[0]);
  if (static_cast<int64_t>(v.size()) != nd || (v.empty() && !may_omit))
    fail("[", op, "] ", name, " must either be ", may_omit ? "omitted, " : "", "a single int, or a tuple of ", nd,
         " ints, got ", v);
  return v;
}

Args make_args(int64_t nd, const Dims& kernel0, const Dims& stride0, const Dims& pad0, const Dims& dil0,
               const char* op) {
  Dims kernel = expand_arg(kernel0, nd, op, "kernel_size", false);
  Dims stride = stride0.empty() ? kernel : expand_arg(stride0, nd, op, "stride", true);
  Dims pad = expand_arg(pad0, nd, op, "padding", false), dil = expand_arg(dil0, nd, op, "dilation", false);
  Args a;
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t d = 2 - nd + i;
    if (kernel[i] <= 0) fail("[", op, "] kernel size should be greater than zero, got kernel_size=", kernel);
    if (stride[i] <= 0) fail("[", op, "] stride should be greater than zero, got stride=", stride);
    if (dil[i] <= 0) fail("[", op, "] dilation should be greater than zero, got dilation=", dil);
    if (pad[i] < 0 || pad[i] > kernel[i] / 2)
      fail("[", op, "] pad should be at most half of kernel size, but got pad=", pad, ", kernel_size=", kernel);
    a.kernel[d] = kernel[i];
    a.stride[d] = stride[i];
    a.padding[d] = pad[i];
    a.dilation[d] = dil[i];
  }
  return a;
}

/** The input, 3-d or 4-d (for nd = 2; 2-d or 3-d for nd = 1) with non-empty spatial dims,
 *  as a 2-d pooling input [..., H, W] of a computable dtype. */
Tensor pool_input(const Tensor& x, int64_t nd, const char* op) {
  bool ok = x.dim() == nd + 1 || x.dim() == nd + 2;
  for (int64_t i = 1; ok && i < x.dim(); ++i) ok = x.size(i) > 0;
  if (!ok)
    fail("[", op, "] expected a ", nd + 1, "D or ", nd + 2, "D input with non-zero sizes after the first dim, got ",
         x.shape());
  if (!is_floating(x.dtype())) fail<TypeError>("[", op, "] expected a floating-point input, got ", x.dtype());
  Tensor t = nd == 1 ? x.unsqueeze(-2) : x;
  return x.dtype() == DType::Float64 ? t : t.to(DType::Float32);
}

Tensor pool_output(const Tensor& out, const Tensor& input, int64_t nd) {
  return (nd == 1 ? out.squeeze({-2}) : out).to(input.dtype());
}
Tensor index_output(const Tensor& idx, int64_t nd) { return nd == 1 ? idx.squeeze({-2}) : idx; }

/** The windows of a sliding pooling over x [..., H, W]. */
PoolWindows sliding_windows(const Tensor& x, const Args& a, bool ceil_mode, const char* op) {
  PoolWindows win;
  int64_t outs[2];
  for (int d = 0; d < 2; ++d) {
    const int64_t in = x.size(x.dim() - 2 + d);
    outs[d] = pool_out_size(in, a.kernel[d], a.stride[d], a.padding[d], a.dilation[d], ceil_mode);
    win.step[d] = a.dilation[d];
    for (int64_t i = 0; i < outs[d]; ++i) {
      win.start[d].push_back(i * a.stride[d] - a.padding[d]);
      win.count[d].push_back(a.kernel[d]);
    }
  }
  if (outs[0] < 1 || outs[1] < 1)
    fail("[", op, "] given input size ", x.shape(), ", the calculated output size (", outs[0], "x", outs[1],
         ") is too small");
  return win;
}

/** Adaptive windows of x [..., H, W] pooled to `size` [Ho, Wo]. */
PoolWindows adaptive_windows(const Tensor& x, const int64_t size[2]) {
  PoolWindows win;
  for (int d = 0; d < 2; ++d) {
    const int64_t in = x.size(x.dim() - 2 + d), out = size[d];
    for (int64_t i = 0; i < out; ++i) {
      const int64_t start = i * in / out, end = ((i + 1) * in + out - 1) / out;
      win.start[d].push_back(start);
      win.count[d].push_back(end - start);
      win.divisor[d].push_back(static_cast<double>(end - start));
    }
  }
  return win;
}

const graph::OpDef kMaxPool("max_pool"), kAvgPool("avg_pool"), kAdaptiveMaxPool("adaptive_max_pool"),
    kAdaptiveAvgPool("adaptive_avg_pool");

/** A pooling's attributes for the capture: kernel, strides, pads and dilations of the nd
 *  spatial dims. */
graph::Attrs pool_attrs(const Args& a, int64_t nd, bool ceil_mode) {
  std::vector<int64_t> kernel, strides, pads, dilations;
  for (int64_t d = 2 - nd; d < 2; ++d) {
    kernel.push_back(a.kernel[d]);
    strides.push_back(a.stride[d]);
    pads.push_back(a.padding[d]);
    dilations.push_back(a.dilation[d]);
  }
  pads.insert(pads.end(), pads.begin(), pads.end());
  return {{"kernel_shape", kernel},
          {"strides", strides},
          {"pads", pads},
          {"dilations", dilations},
          {"ceil_mode", int64_t{ceil_mode}}};
}

std::pair<Tensor, Tensor> max_pool(const Tensor& input, int64_t nd, const Dims& kernel, const Dims& stride,
                                   const Dims& padding, const Dims& dilation, bool ceil_mode, const char* op,
                                   bool want_idx = true) {
  graph::OpCall call(kMaxPool);
  Tensor x = pool_input(input, nd, op);
  Args a = make_args(nd, kernel, stride, padding, dilation, op);
  auto [out, idx] = window_max(x, std::make_shared<const PoolWindows>(sliding_windows(x, a, ceil_mode, op)), want_idx);
  Tensor y = pool_output(out, input, nd);
  Tensor indices = idx.defined() ? index_output(idx, nd) : idx;
  if (call.capturing()) call.set_attrs(pool_attrs(a, nd, ceil_mode));
  call.finish({&input}, {&y, &indices});
  return {y, indices};
}

Tensor avg_pool(const Tensor& input, int64_t nd, const Dims& kernel, const Dims& stride, const Dims& padding,
                bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override, const char* op) {
  graph::OpCall call(kAvgPool);
  Tensor x = pool_input(input, nd, op);
  Args a = make_args(nd, kernel, stride, padding, {1}, op);
  if (divisor_override && *divisor_override == 0) fail("[", op, "] divisor must be not zero");
  PoolWindows win = sliding_windows(x, a, ceil_mode, op);
  for (int d = 0; d < 2; ++d) {
    const int64_t in = x.size(x.dim() - 2 + d);
    for (size_t i = 0; i < win.start[d].size(); ++i) {
      // As torch: a window ends at the right padding at most and counts the padding it covers.
      const int64_t start = win.start[d][i], end = std::min(start + a.kernel[d], in + a.padding[d]);
      win.count[d][i] = end - start;
      const int64_t inside = std::min(end, in) - std::max<int64_t>(start, 0);
      win.divisor[d].push_back(static_cast<double>(count_include_pad ? end - start : inside));
    }
    if (divisor_override)
      std::fill(win.divisor[d].begin(), win.divisor[d].end(), d == 0 ? static_cast<double>(*divisor_override) : 1.0);
  }
  Tensor y = pool_output(window_avg(x, std::make_shared<const PoolWindows>(std::move(win))), input, nd);
  if (call.capturing()) {
    graph::Attrs attrs = pool_attrs(a, nd, ceil_mode);
    attrs.emplace_back("count_include_pad", int64_t{count_include_pad});
    attrs.emplace_back("divisor_override", divisor_override.value_or(0));
    call.set_attrs(std::move(attrs));
    // With divisor_override it has no graph form: a program calls it back.
    call.set_replay(
        [nd, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, op](const graph::Tensors& in) {
          return graph::Tensors{
              avg_pool(in[0], nd, kernel, stride, padding, ceil_mode, count_include_pad, divisor_override, op)};
        });
  }
  call.finish({&input}, {&y});
  return y;
}

void adaptive_size(int64_t nd, const Dims& output_size, int64_t size[2], const char* op) {
  Dims s = expand_arg(output_size, nd, op, "output_size", false);
  size[0] = 1;
  for (int64_t i = 0; i < nd; ++i) {
    if (s[i] < 0) fail("[", op, "] output_size must be non-negative, got ", s);
    size[2 - nd + i] = s[i];
  }
}

std::pair<Tensor, Tensor> adaptive_max(const Tensor& input, int64_t nd, const Dims& output_size, const char* op) {
  graph::OpCall call(kAdaptiveMaxPool);
  Tensor x = pool_input(input, nd, op);
  int64_t size[2];
  adaptive_size(nd, output_size, size, op);
  auto [out, idx] = window_max(x, std::make_shared<const PoolWindows>(adaptive_windows(x, size)), true);
  Tensor y = pool_output(out, input, nd);
  Tensor indices = index_output(idx, nd);
  if (call.capturing()) {
    call.set_attrs({{"spatial_dims", nd}});
    // Windows of unequal sizes (sizes that do not divide) have no graph form: a program calls
    // the op back.
    call.set_replay([nd, output_size, op](const graph::Tensors& in) {
      auto [out, index] = adaptive_max(in[0], nd, output_size, op);
      return graph::Tensors{out, index};
    });
  }
  call.finish({&input}, {&y, &indices});
  return {y, indices};
}

Tensor adaptive_avg(const Tensor& input, int64_t nd, const Dims& output_size, const char* op) {
  graph::OpCall call(kAdaptiveAvgPool);
  Tensor x = pool_input(input, nd, op);
  int64_t size[2];
  adaptive_size(nd, output_size, size, op);
  Tensor y = pool_output(window_avg(x, std::make_shared<const PoolWindows>(adaptive_windows(x, size))), input, nd);
  if (call.capturing()) {
    call.set_attrs({{"spatial_dims", nd}});
    call.set_replay([nd, output_size, op](const graph::Tensors& in) {
      return graph::Tensors{adaptive_avg(in[0], nd, output_size, op)};
    });
  }
  call.finish({&input}, {&y});
  return y;
}

}  // namespace

std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const Dims& kernel_size, const Dims& stride,
                                                  const Dims& padding, const Dims& dilation, bool ceil_mode) {
  return max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d");
}
Tensor max_pool2d(const Tensor& input, const Dims& kernel_size, const Dims& stride, const Dims& padding,
                  const Dims& dilation, bool ceil_mode) {
  return max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d", false).first;
}
std::pair<Tensor, Tensor> max_pool1d_with_indices(const Tensor& input, const Dims& kernel_size, const Dims& stride,
                                                  const Dims& padding, const Dims& dilation, bool ceil_mode) {
  return max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode, "max_pool1d");
}
Tensor max_pool1d(const Tensor& input, const Dims& kernel_size, const Dims& stride, const Dims& padding,
                  const Dims& dilation, bool ceil_mode) {
  return max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode, "max_pool1d", false).first;
}

Tensor avg_pool2d(const Tensor& input, const Dims& kernel_size, const Dims& stride, const Dims& padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  return avg_pool(input, 2, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, "avg_pool2d");
}
Tensor avg_pool1d(const Tensor& input, const Dims& kernel_size, const Dims& stride, const Dims& padding, bool ceil_mode,
                  bool count_include_pad) {
  return avg_pool(input, 1, kernel_size, stride, padding, ceil_mode, count_include_pad, {}, "avg_pool1d");
}

Tensor adaptive_avg_pool2d(const Tensor& input, const Dims& output_size) {
  return adaptive_avg(input, 2, output_size, "adaptive_avg_pool2d");
}
Tensor adaptive_avg_pool1d(const Tensor& input, const Dims& output_size) {
  return adaptive_avg(input, 1, output_size, "adaptive_avg_pool1d");
}
std::pair<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& input, const Dims& output_size) {
  return adaptive_max(input, 2, output_size, "adaptive_max_pool2d");
}
Tensor adaptive_max_pool2d(const Tensor& input, const Dims& output_size) {
  return adaptive_max(input, 2, output_size, "adaptive_max_pool2d").first;
}
std::pair<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& input, const Dims& output_size) {
  return adaptive_max(input, 1, output_size, "adaptive_max_pool1d");
}
Tensor adaptive_max_pool1d(const Tensor& input, const Dims& output_size) {
  return adaptive_max(input, 1, output_size, "adaptive_max_pool1d").first;
}

}  // namespace ug
