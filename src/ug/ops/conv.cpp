// Convolutions. Everything ends in three primitives on [N, C, H, W] tensors, the three faces
// of one trilinear form <conv(x, w), y>: the convolution y = conv(x, w), its adjoint in x
// (conv_input_grad, which is also conv_transpose) and its adjoint in w (conv_weight_grad).
// Each one's derivatives are the other two, so derivatives of any order stay inside the
// family. 1-d convolutions are 2-d ones with a height of 1; bfloat16 has kernels of its own
// (float32 sums rounded once), float16 computes in float32.
#include "ug/ops/conv.h"

#include "ug/backend/backend.h"
#include "ug/graph/capture.h"
#include "ug/graph/forward.h"
#include "ug/graph/grad_mode.h"
#include "ug/graph/op_call.h"
#include "ug/ops/autocast.h"
#include "ug/ops/binary.h"
#include "ug/ops/join.h"
#include "ug/ops/reduce.h"
#include "ug/ops/unary.h"

namespace ug {

namespace {

int64_t conv_out_size(int64_t in, int64_t k, int64_t s, int64_t pad, int64_t d) {
  return (in + 2 * pad - d * (k - 1) - 1) / s + 1;
}

Tensor contiguous_or_undefined(const Tensor& t) { return t.defined() ? t.contiguous() : t; }

Tensor conv_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p);
Tensor conv_input_grad(const Tensor& g, const Tensor& w, const Conv2dParams& p, const Shape& x_shape);
Tensor conv_weight_grad(const Tensor& x, const Tensor& g, const Conv2dParams& p, const Shape& w_shape);

// The primitives' own calls: nested in conv and conv_transpose, they are captured only where
// they run alone (in a backward pass).
const graph::OpDef kConv2d("conv2d"), kConvTranspose2d("conv_transpose2d"), kConv2dWeightGrad("conv2d_weight_grad");

/** Whether t takes a gradient: the rules compute only the ones some input needs. */
bool wants_grad(const Tensor& t) { return t.defined() && autograd::requires_grad(t); }

/** The sum of the defined tensors (undefined when none is). */
Tensor sum_defined(std::initializer_list<Tensor> ts) {
  Tensor total;
  for (const Tensor& t : ts)
    if (t.defined()) total = total.defined() ? total + t : t;
  return total;
}

// Batched weights fold the vmap dim into the groups: a physical input [V, N, C, H, W]
// becomes [N, V * C, H, W] and weights [V, O, ...] become [V * O, ...], so with V times the
// groups example v meets only its own weights.
Conv2dParams grouped(Conv2dParams p, int64_t v) {
  p.groups *= v;
  return p;
}
/** Physical [V, N, C, H, W] as [N, V * C, H, W]. */
Tensor fold_channels(const Tensor& phys) {
  return phys.transpose(0, 1).reshape({phys.size(1), phys.size(0) * phys.size(2), phys.size(3), phys.size(4)});
}
/** The inverse: [N, V * C, H, W] back to a physical [V, N, C, H, W] batched at lvl. */
Tensor unfold_channels(const Tensor& out, int64_t v, int lvl) {
  return batching::wrap(out.view({out.size(0), v, out.size(1) / v, out.size(2), out.size(3)}).transpose(0, 1), lvl);
}
/** t's physical tensor at lvl, with the batch of size v made up by broadcasting if t is not
 *  batched there. */
Tensor physical_of(const Tensor& t, int lvl, int64_t v) {
  if (batching::level(t) == lvl) return batching::physical(t, lvl);
  Dims shape{v};
  for (int64_t s : t.shape()) shape.push_back(s);
  return t.unsqueeze(0).expand(shape);
}
int64_t vmap_size(std::initializer_list<const Tensor*> ts, int lvl) {
  for (const Tensor* t : ts)
    if (batching::level(*t) == lvl) return batching::physical(*t, lvl).size(0);
  return 1;
}
/** A vmap over no example: an empty result of each example's shape (folding zero examples
 *  into the groups would make zero groups). */
Tensor no_example(const Shape& example, const Tensor& like, int lvl) {
  Dims shape{0};
  for (int64_t s : example) shape.push_back(s);
  return batching::wrap(empty(shape, {.dtype = like.dtype(), .device = like.device()}), lvl);
}

Tensor conv_forward_batched(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p, int lvl) {
  const int64_t v = vmap_size({&x, &w}, lvl);
  if (v == 0)
    return no_example(
        {x.size(0), w.size(0), conv_out_size(x.size(2), w.size(2), p.stride[0], p.padding[0], p.dilation[0]),
         conv_out_size(x.size(3), w.size(3), p.stride[1], p.padding[1], p.dilation[1])},
        x, lvl);
  if (batching::level(w) != lvl) {  // only the input is batched: fold the vmap dim into N
    Tensor px = batching::physical(x, lvl);
    Tensor out = conv_forward(px.reshape({-1, x.size(1), x.size(2), x.size(3)}), w, b, p);
    return batching::wrap(out.view({v, x.size(0), out.size(1), out.size(2), out.size(3)}), lvl);
  }
  Tensor pw = batching::physical(w, lvl);
  Tensor bias = b.defined() ? b.repeat({v}) : b;
  Tensor out = conv_forward(fold_channels(physical_of(x, lvl, v)), pw.reshape({-1, w.size(1), w.size(2), w.size(3)}),
                            bias, grouped(p, v));
  return unfold_channels(out, v, lvl);
}

Tensor conv_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p) {
  graph::OpCall call(kConv2d);
  if (call.capturing())  // alone (a gradient of conv_transpose): a program calls it back
    call.set_replay([p](const graph::Tensors& in) { return graph::Tensors{conv_forward(in[0], in[1], in[2], p)}; });
  Tensor out;
  if (int lvl = batching::max_level({&x, &w, &b})) {
    if (batching::level(b) == lvl) {
      // A batched bias is added afterwards: those ops record their own derivatives.
      out = conv_forward(x, w, Tensor(), p) + b.view({-1, 1, 1});
      call.finish({&x, &w, &b}, {&out});
      return out;
    }
    out = conv_forward_batched(x, w, b, p, lvl);
  } else {
    out = empty({x.size(0), w.size(0), conv_out_size(x.size(2), w.size(2), p.stride[0], p.padding[0], p.dilation[0]),
                 conv_out_size(x.size(3), w.size(3), p.stride[1], p.padding[1], p.dilation[1])},
                {.dtype = x.dtype(), .device = x.device()});
    backend_for(x.device()).conv2d(x.contiguous(), w.contiguous(), contiguous_or_undefined(b), p, out);
  }
  call.finish(
      {&x, &w, &b}, {&out}, {graph::input(x), graph::input(w)},
      [p, gx = wants_grad(x), gw = wants_grad(w), gb = wants_grad(b)](graph::Saved s, graph::Tensors&& g) {
        const Tensor &x = s[0], &w = s[1];
        return graph::Tensors{gx ? conv_input_grad(g[0], w, p, x.shape()) : Tensor(),
                              gw ? conv_weight_grad(x, g[0], p, w.shape()) : Tensor(),
                              gb ? g[0].sum({0, 2, 3}) : Tensor()};
      },
      [&](const graph::Tensors& t) {
        Tensor tx = t[0].defined() ? conv_forward(t[0], w, Tensor(), p) : Tensor();
        Tensor tw = t[1].defined() ? conv_forward(x, t[1], Tensor(), p) : Tensor();
        Tensor tb = t[2].defined() ? t[2].view({-1, 1, 1}).expand(out.shape()) : Tensor();
        return graph::Tensors{sum_defined({tx, tw, tb})};
      });
  return out;
}

Tensor conv_input_grad_batched(const Tensor& g, const Tensor& w, const Conv2dParams& p, const Shape& x_shape, int lvl) {
  const int64_t v = vmap_size({&g, &w}, lvl);
  if (v == 0) return no_example(x_shape, g, lvl);
  if (batching::level(w) != lvl) {
    Tensor pg = batching::physical(g, lvl);
    Tensor gx = conv_input_grad(pg.reshape({-1, g.size(1), g.size(2), g.size(3)}), w, p,
                                {v * x_shape[0], x_shape[1], x_shape[2], x_shape[3]});
    return batching::wrap(gx.view({v, x_shape[0], x_shape[1], x_shape[2], x_shape[3]}), lvl);
  }
  Tensor pw = batching::physical(w, lvl);
  Tensor gx = conv_input_grad(fold_channels(physical_of(g, lvl, v)), pw.reshape({-1, w.size(1), w.size(2), w.size(3)}),
                              grouped(p, v), {x_shape[0], v * x_shape[1], x_shape[2], x_shape[3]});
  return unfold_channels(gx, v, lvl);
}

/** The adjoint of conv_forward in x: an x-shaped result from g and w (conv_transpose). */
Tensor conv_input_grad(const Tensor& g, const Tensor& w, const Conv2dParams& p, const Shape& x_shape) {
  graph::OpCall call(kConvTranspose2d);
  if (call.capturing())  // a gradient without a graph form of its own: a program calls it back
    call.set_replay(
        [p, x_shape](const graph::Tensors& in) { return graph::Tensors{conv_input_grad(in[0], in[1], p, x_shape)}; });
  Tensor out;
  if (int lvl = batching::max_level({&g, &w})) {
    out = conv_input_grad_batched(g, w, p, x_shape, lvl);
  } else {
    out = empty(x_shape, {.dtype = g.dtype(), .device = g.device()});
    backend_for(g.device()).conv2d_input_grad(g.contiguous(), w.contiguous(), p, out);
  }
  call.finish(
      {&g, &w}, {&out}, {graph::input(g), graph::input(w)},
      [p, gg = wants_grad(g), gw = wants_grad(w)](graph::Saved s, graph::Tensors&& gr) {
        const Tensor &g = s[0], &w = s[1];
        return graph::Tensors{gg ? conv_forward(gr[0], w, Tensor(), p) : Tensor(),
                              gw ? conv_weight_grad(gr[0], g, p, w.shape()) : Tensor()};
      },
      [&](const graph::Tensors& t) {
        return graph::Tensors{sum_defined({t[0].defined() ? conv_input_grad(t[0], w, p, x_shape) : Tensor(),
                                           t[1].defined() ? conv_input_grad(g, t[1], p, x_shape) : Tensor()})};
      });
  return out;
}

/** The adjoint of conv_forward in w: a weight-shaped result from x and g. */
Tensor conv_weight_grad(const Tensor& x, const Tensor& g, const Conv2dParams& p, const Shape& w_shape) {
  graph::OpCall call(kConv2dWeightGrad);
  if (call.capturing())  // w_shape is a parameter's: no size of the batch or the image
    call.set_replay(
        [p, w_shape](const graph::Tensors& in) { return graph::Tensors{conv_weight_grad(in[0], in[1], p, w_shape)}; },
        graph::ReplaySizes::None);
  Tensor out;
  if (int lvl = batching::max_level({&x, &g})) {
    const int64_t v = vmap_size({&x, &g}, lvl);
    out = v == 0 ? no_example(w_shape, x, lvl)
                 : batching::wrap(
                       conv_weight_grad(fold_channels(physical_of(x, lvl, v)), fold_channels(physical_of(g, lvl, v)),
                                        grouped(p, v), {v * w_shape[0], w_shape[1], w_shape[2], w_shape[3]})
                           .view({v, w_shape[0], w_shape[1], w_shape[2], w_shape[3]}),
                       lvl);
  } else {
    out = empty(w_shape, {.dtype = x.dtype(), .device = x.device()});
    backend_for(x.device()).conv2d_weight_grad(x.contiguous(), g.contiguous(), p, out);
  }
  call.finish(
      {&x, &g}, {&out}, {graph::input(x), graph::input(g)},
      [p, gx = wants_grad(x), gg = wants_grad(g)](graph::Saved s, graph::Tensors&& gr) {
        const Tensor &x = s[0], &g = s[1];
        return graph::Tensors{gx ? conv_input_grad(g, gr[0], p, x.shape()) : Tensor(),
                              gg ? conv_forward(x, gr[0], Tensor(), p) : Tensor()};
      },
      [&](const graph::Tensors& t) {
        return graph::Tensors{sum_defined({t[0].defined() ? conv_weight_grad(t[0], g, p, w_shape) : Tensor(),
                                           t[1].defined() ? conv_weight_grad(x, t[1], p, w_shape) : Tensor()})};
      });
  return out;
}

// ---- argument checks, shared by the public forms ---------------------------------------

/** A per-dim argument given as one value or one per spatial dim. */
Dims expand_arg(const Dims& v, int64_t n, const char* op, const char* name) {
  if (v.size() == 1) return Dims(static_cast<size_t>(n), v[0]);
  if (static_cast<int64_t>(v.size()) != n)
    fail("[", op, "] expected ", name, " to be a single integer value or a list of ", n,
         " values to match the convolution dimensions, but got ", name, "=", v);
  return v;
}

/** The dtype the kernels compute in: float32, float64 or bfloat16 (its own kernels, on the
 *  bfloat16 GEMM); float16 widens to float32. */
DType compute_dtype(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, const char* op) {
  if (w.dtype() != x.dtype() || (b && b->defined() && b->dtype() != x.dtype()))
    fail<TypeError>("[", op, "] expected input, weight and bias of one dtype, got input ", x.dtype(), ", weight ",
                    w.dtype(), b && b->defined() ? ", bias " : "", b && b->defined() ? dtype_name(b->dtype()) : "",
                    " (input shape ", x.shape(), ")");
  if (x.device() != w.device() || (b && b->defined() && b->device() != x.device()))
    fail<RuntimeError>("[", op, "] expected input, weight and bias on one device");
  if (!is_floating(x.dtype()))
    fail<TypeError>("[", op, "] expected floating-point tensors, got ", x.dtype(), " (input shape ", x.shape(), ")");
  return x.dtype() == DType::Float64 || x.dtype() == DType::BFloat16 ? x.dtype() : DType::Float32;
}

/** The checked parameters of a convolution with `nd` spatial dims, as a 2-d one. */
struct Spec {
  Conv2dParams p;
  Dims pad_right;  // extra right padding per spatial dim ("same" with an even effective kernel)
};

Spec make_spec(int64_t nd, const Dims& stride0, const Dims& pad0, const Dims& dil0, int64_t groups, const char* op) {
  Dims stride = expand_arg(stride0, nd, op, "stride"), pad = expand_arg(pad0, nd, op, "padding"),
       dil = expand_arg(dil0, nd, op, "dilation");
  for (int64_t i = 0; i < nd; ++i) {
    if (stride[i] <= 0) fail("[", op, "] non-positive stride is not supported, got stride=", stride);
    if (pad[i] < 0) fail("[", op, "] negative padding is not supported, got padding=", pad);
    if (dil[i] <= 0) fail("[", op, "] dilation should be greater than zero, got dilation=", dil);
  }
  if (groups <= 0) fail("[", op, "] non-positive groups is not supported, got groups=", groups);
  Spec s;
  s.p.groups = groups;
  for (int64_t i = 0; i < 2; ++i) {  // 1-d: dim 0 is the added height of 1
    const int64_t j = i - (2 - nd);
    s.p.stride[i] = j < 0 ? 1 : stride[j];
    s.p.padding[i] = j < 0 ? 0 : pad[j];
    s.p.dilation[i] = j < 0 ? 1 : dil[j];
  }
  return s;
}

/** Checks a batched input x [N, C, *spatial] against weight and bias, as torch words it. */
void check_shapes(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, const Spec& s, int64_t nd,
                  bool transposed, const char* op) {
  if (w.dim() != nd + 2)
    fail("[", op, "] expected a ", nd + 2, "-d weight [",
         transposed ? "in_channels, out_channels / groups" : "out_channels, in_channels / groups",
         nd == 1 ? ", kernel]" : ", kh, kw]", ", got weight of shape ", w.shape(), " for input of shape ", x.shape());
  const int64_t g = s.p.groups;
  if (w.size(0) % g != 0)
    fail("[", op, "] given groups=", g, ", expected weight to be divisible by ", g,
         " at dimension 0, but got weight of size ", w.shape(), " instead");
  const int64_t channels = transposed ? w.size(0) : w.size(1) * g;
  if (x.size(1) != channels)
    fail("[", op, "] given groups=", g, ", weight of size ", w.shape(), ", expected input", x.shape(), " to have ",
         channels, " channels, but got ", x.size(1), " channels instead");
  const int64_t out_channels = transposed ? w.size(1) * g : w.size(0);
  if (b && b->defined() && (b->dim() != 1 || b->size(0) != out_channels))
    fail("[", op, "] given weight of size ", w.shape(), ", expected bias to be 1-dimensional with ", out_channels,
         " elements, but got bias of size ", b->shape(), " instead");
  if (transposed) return;
  Shape padded, kernel;
  bool too_big = false;
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t d = 2 - nd + i;
    padded.push_back(x.size(2 + i) + 2 * s.p.padding[d] + s.pad_right[i]);
    kernel.push_back(s.p.dilation[d] * (w.size(2 + i) - 1) + 1);
    too_big |= padded.back() < kernel.back();
  }
  if (too_big)
    fail("[", op, "] calculated padded input size per channel: ", padded, ", (dilated) kernel size: ", kernel,
         "; kernel size can't be greater than actual input size (input shape ", x.shape(), ", weight shape ", w.shape(),
         ")");
}

/** An input with nd spatial dims, batched (nd + 2 dims) or not (nd + 1). */
bool is_batched(const Tensor& x, int64_t nd, const char* op) {
  if (x.dim() != nd + 1 && x.dim() != nd + 2)
    fail("[", op, "] expected ", nd + 1, "D (unbatched) or ", nd + 2, "D (batched) input to ", op,
         ", but got input of size: ", x.shape());
  return x.dim() == nd + 2;
}

/** nd-d tensors as 2-d ones: a height of 1 before the last dim. */
Tensor as_2d(const Tensor& t, int64_t nd) { return nd == 1 ? t.unsqueeze(-2) : t; }
Tensor from_2d(const Tensor& t, int64_t nd) { return nd == 1 ? t.squeeze({-2}) : t; }

const graph::OpDef kConv("conv", graph::Autocast::Lower), kConvTranspose("conv_transpose", graph::Autocast::Lower);

std::vector<int64_t> as_vector(const Dims& d) { return std::vector<int64_t>(d.begin(), d.end()); }

/** ONNX's pads: the begins of every spatial dim, then the ends. */
std::vector<int64_t> onnx_pads(const Dims& begin, const Dims& end) {
  std::vector<int64_t> pads = as_vector(begin);
  pads.insert(pads.end(), end.begin(), end.end());
  return pads;
}

Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, const Dims& stride,
                   const ConvPadding& padding, const Dims& dilation, int64_t groups, int64_t nd, const char* op) {
  if (autocast::applies(kConv)) [[unlikely]]
    return autocast::call(kConv, convolution, input, weight, bias, stride, padding, dilation, groups, nd, op);
  graph::OpCall call(kConv);
  const bool batched = is_batched(input, nd, op);
  const DType dtype = compute_dtype(input, weight, bias, op);
  Tensor x = batched ? input : input.unsqueeze(0);
  Dims pads = padding.sizes;
  Dims pad_right(static_cast<size_t>(nd), 0);
  if (!padding.mode.empty()) {
    if (padding.mode != "same" && padding.mode != "valid")
      fail("[", op, "] invalid padding string '", padding.mode, "': use 'valid', 'same' or sizes");
    pads = Dims(static_cast<size_t>(nd), 0);
    if (padding.mode == "same") {
      for (int64_t s : expand_arg(stride, nd, op, "stride"))
        if (s != 1) fail("[", op, "] padding='same' is not supported for strided convolutions");
      if (weight.dim() == nd + 2) {
        Dims dil = expand_arg(dilation, nd, op, "dilation");
        for (int64_t i = 0; i < nd; ++i) {
          const int64_t total = dil[i] * (weight.size(2 + i) - 1);
          pads[i] = total / 2;
          pad_right[i] = total - 2 * pads[i];  // as torch: the odd one out goes right
        }
      }
    }
  }
  Spec s = make_spec(nd, stride, pads, dilation, groups, op);
  s.pad_right = pad_right;
  check_shapes(x, weight, bias, s, nd, false, op);
  bool asymmetric = false;
  for (int64_t r : pad_right) asymmetric |= r != 0;
  if (asymmetric) {
    Dims extra;
    for (int64_t i = nd - 1; i >= 0; --i) {
      extra.push_back(0);
      extra.push_back(pad_right[i]);
    }
    x = pad(x, extra);
  }
  Tensor b = bias ? *bias : Tensor();
  Tensor out = conv_forward(as_2d(x, nd).to(dtype), as_2d(weight, nd).to(dtype), b.defined() ? b.to(dtype) : b, s.p);
  out = from_2d(out, nd).to(input.dtype());
  if (!batched) out = out.squeeze({0});
  if (call.capturing()) {
    Dims begin = expand_arg(pads, nd, op, "padding"), end = begin;
    for (int64_t i = 0; i < nd; ++i) end[i] += pad_right[i];
    call.set_attrs({{"strides", as_vector(expand_arg(stride, nd, op, "stride"))},
                    {"pads", onnx_pads(begin, end)},
                    {"dilations", as_vector(expand_arg(dilation, nd, op, "dilation"))},
                    {"group", groups}});
  }
  // A composite: the ops above record their own derivatives.
  call.finish({&input, &weight, &b}, {&out});
  return out;
}

Tensor transposed_convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                              const Dims& stride, const Dims& padding, const Dims& output_padding, int64_t groups,
                              const Dims& dilation, int64_t nd, const char* op) {
  if (autocast::applies(kConvTranspose)) [[unlikely]]
    return autocast::call(kConvTranspose, transposed_convolution, input, weight, bias, stride, padding, output_padding,
                          groups, dilation, nd, op);
  graph::OpCall call(kConvTranspose);
  const bool batched = is_batched(input, nd, op);
  const DType dtype = compute_dtype(input, weight, bias, op);
  Tensor x = batched ? input : input.unsqueeze(0);
  Spec s = make_spec(nd, stride, padding, dilation, groups, op);
  s.pad_right = Dims(static_cast<size_t>(nd), 0);
  Dims out_pad = expand_arg(output_padding, nd, op, "output_padding");
  check_shapes(x, weight, bias, s, nd, true, op);
  Shape out_shape{x.size(0), weight.size(1) * groups};
  if (nd == 1) out_shape.push_back(1);
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t d = 2 - nd + i;
    if (out_pad[i] < 0 || (out_pad[i] >= s.p.stride[d] && out_pad[i] >= s.p.dilation[d]))
      fail("[", op, "] output padding must be smaller than either stride or dilation, but got output_padding=", out_pad,
           ", stride=", stride, ", dilation=", dilation);
    const int64_t size = (x.size(2 + i) - 1) * s.p.stride[d] - 2 * s.p.padding[d] +
                         s.p.dilation[d] * (weight.size(2 + i) - 1) + out_pad[i] + 1;
    if (size <= 0)
      fail("[", op, "] the output size ", size, " of dim ", i, " is too small (input shape ", x.shape(),
           ", weight shape ", weight.shape(), ")");
    out_shape.push_back(size);
  }
  // An output padding of at least the stride leaves positions past the last one x reaches: as
  // the gradient of a convolution over the output, x is that convolution's output, whose
  // trailing positions (those x lacks) are zeros.
  Dims tail;
  for (int64_t i = nd - 1; i >= 0; --i) {
    const int64_t d = 2 - nd + i;
    tail.push_back(0);
    tail.push_back(conv_out_size(out_shape[2 + d], weight.size(2 + i), s.p.stride[d], s.p.padding[d], s.p.dilation[d]) -
                   x.size(2 + i));
  }
  for (int64_t t : tail)
    if (t != 0) {
      x = pad(x, tail);
      break;
    }
  const Tensor b = bias ? *bias : Tensor();
  Tensor out = conv_input_grad(as_2d(x, nd).to(dtype), as_2d(weight, nd).to(dtype), s.p, out_shape);
  if (b.defined()) out = out + b.to(dtype).view({-1, 1, 1});
  out = from_2d(out, nd).to(input.dtype());
  if (!batched) out = out.squeeze({0});
  if (call.capturing()) {
    Dims pads = expand_arg(padding, nd, op, "padding");
    call.set_attrs({{"strides", as_vector(expand_arg(stride, nd, op, "stride"))},
                    {"pads", onnx_pads(pads, pads)},
                    {"dilations", as_vector(expand_arg(dilation, nd, op, "dilation"))},
                    {"output_padding", as_vector(out_pad)},
                    {"group", groups}});
  }
  // A composite: the ops above record their own derivatives.
  call.finish({&input, &weight, &b}, {&out});
  return out;
}

}  // namespace

Tensor conv1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, const Dims& stride,
              const ConvPadding& padding, const Dims& dilation, int64_t groups) {
  return convolution(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d");
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, const Dims& stride,
              const ConvPadding& padding, const Dims& dilation, int64_t groups) {
  return convolution(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d");
}

namespace {

const graph::OpDef kConv2dRelu("conv2d_relu");

/** Whether conv2d_relu may run as one kernel: nothing would record the composed ops' calls. */
bool fusable(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, const std::optional<Tensor>& r) {
  if (graph::detail::current_capture || autocast::active()) return false;
  for (const Tensor* t : {&x, &w, b ? &*b : nullptr, r ? &*r : nullptr}) {
    if (!t) continue;
    if (!t->defined() || t->dtype() != DType::Float32 || t->device().type != DeviceType::CPU || t->impl().batch() ||
        forward::has_tangent(*t) || (GradMode::is_enabled() && t->requires_grad()))
      return false;
  }
  return x.dim() == 4 && x.size(1) > 0;  // no channels: the backend writes the bias alone
}

}  // namespace

Tensor conv2d_relu(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                   const std::optional<Tensor>& residual, const Dims& stride, const Dims& padding, const Dims& dilation,
                   int64_t groups, bool residual_dies) {
  auto composed = [&] {
    const Tensor y = conv2d(input, weight, bias, stride, padding, dilation, groups);
    return relu(residual ? y + *residual : y);
  };
  if (!fusable(input, weight, bias, residual)) return composed();
  const char* op = "conv2d";
  Spec s = make_spec(2, stride, padding, dilation, groups, op);
  s.pad_right = {0, 0};
  check_shapes(input, weight, bias, s, 2, false, op);
  const Shape shape{input.size(0), weight.size(0),
                    conv_out_size(input.size(2), weight.size(2), s.p.stride[0], s.p.padding[0], s.p.dilation[0]),
                    conv_out_size(input.size(3), weight.size(3), s.p.stride[1], s.p.padding[1], s.p.dilation[1])};
  if (residual && residual->shape() != shape) return composed();  // broadcast by the add
  graph::OpCall call(kConv2dRelu);
  Tensor out = !residual                                    ? empty(shape, {.dtype = DType::Float32})
               : residual_dies && residual->is_contiguous() ? *residual
                                                            : residual->contiguous().clone();
  s.p.accumulate = residual.has_value();
  s.p.relu = true;
  const Tensor b = bias ? bias->contiguous() : Tensor();
  if (out.numel() > 0) backend_for(input.device()).conv2d(input.contiguous(), weight.contiguous(), b, s.p, out);
  call.finish({&input, &weight, &b}, {&out});
  return out;
}

Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        const Dims& stride, const Dims& padding, const Dims& output_padding, int64_t groups,
                        const Dims& dilation) {
  return transposed_convolution(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                                "conv_transpose1d");
}

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                        const Dims& stride, const Dims& padding, const Dims& output_padding, int64_t groups,
                        const Dims& dilation) {
  return transposed_convolution(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                                "conv_transpose2d");
}

}  // namespace ug
