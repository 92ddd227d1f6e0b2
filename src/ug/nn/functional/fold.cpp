#include "ug/nn/functional/fold.h"

#include "ug/core/error.h"
#include "ug/ops/indexing.h"
#include "ug/ops/join.h"

namespace ug::nn::functional {

namespace {

/** The geometry of the blocks: the padded image's sizes and the block count along each dim. */
struct Blocks {
  Dims padded, counts;
  int64_t kernel = 1, count = 1, padded_size = 1;
};

Blocks blocks_of(const char* op, const Dims& image, const Dims& block, const Dims& dilation, const Dims& stride,
                 const Dims& pads) {
  const size_t r = block.size();
  if (r == 0 || image.size() != r || dilation.size() != r || stride.size() != r || pads.size() != 2 * r)
    fail("[", op, "] needs one image size, block size, dilation and stride per spatial dim and two pads, got ",
         image.size(), ", ", block.size(), ", ", dilation.size(), ", ", stride.size(), " and ", pads.size(), " values");
  Blocks b;
  for (size_t i = 0; i < r; ++i) {
    if (block[i] < 1 || dilation[i] < 1 || stride[i] < 1 || pads[i] < 0 || pads[r + i] < 0 || image[i] < 0)
      fail("[", op, "] dim ", i, ": kernel size ", block[i], ", dilation ", dilation[i], " and stride ", stride[i],
           " must be positive, pads ", pads[i], " and ", pads[r + i], " and size ", image[i], " non-negative");
    const int64_t padded = image[i] + pads[i] + pads[r + i], span = dilation[i] * (block[i] - 1) + 1;
    b.padded.push_back(padded);
    b.counts.push_back(padded >= span ? (padded - span) / stride[i] + 1 : 0);
    b.kernel *= block[i];
    b.count *= b.counts.back();
    b.padded_size *= padded;
  }
  return b;
}

/** The padded image's flat position of each (block offset, block) pair, offset major: [K * L]. */
Tensor block_index(const Blocks& b, const Dims& block, const Dims& dilation, const Dims& stride) {
  const size_t r = block.size();
  Tensor index = empty({b.kernel * b.count}, {.dtype = DType::Int64});
  int64_t* ip = index.data_ptr<int64_t>();
  for (int64_t k = 0; k < b.kernel; ++k)
    for (int64_t l = 0; l < b.count; ++l) {
      // The digits of k over the block sizes and of l over the block counts, dim 0 slowest.
      int64_t flat = 0, kk = k, ll = l, scale = 1;
      for (size_t i = r; i-- > 0;) {
        flat += (ll % b.counts[i] * stride[i] + kk % block[i] * dilation[i]) * scale;
        kk /= block[i];
        ll /= b.counts[i];
        scale *= b.padded[i];
      }
      ip[k * b.count + l] = flat;
    }
  return index;
}

void require_floating(const char* op, const Tensor& x) {
  if (!is_floating(x.dtype()))
    fail<TypeError>("[", op, "] expected a floating-point input, got ", x.dtype(), " (shape ", x.shape(), ")");
}

/** torch's int-or-pair argument: one size for both spatial dims, or two. */
Dims pair(const char* op, const char* what, const Dims& d) {
  if (d.size() == 1) return {d[0], d[0]};
  if (d.size() != 2) fail("[", op, "] ", what, " must be an int or a pair of ints, got ", d.size(), " values");
  return d;
}

/** Torch's symmetric padding as im2col's begins then ends. */
Dims both_ends(const Dims& p) { return {p[0], p[1], p[0], p[1]}; }

}  // namespace

Tensor im2col(const Tensor& input, const Dims& block, const Dims& dilation, const Dims& stride, const Dims& pads) {
  const size_t r = block.size();
  if (input.dim() != static_cast<int64_t>(r) + 2)
    fail("[im2col] expected an input [N, C, *spatial] with ", r, " spatial dims, got shape ", input.shape());
  const Dims image(input.shape().begin() + 2, input.shape().end());
  const Blocks b = blocks_of("im2col", image, block, dilation, stride, pads);
  for (size_t i = 0; i < r; ++i)
    if (b.counts[i] < 1)
      fail("[im2col] input of shape ", input.shape(), " with kernel size ", block[i], ", dilation ", dilation[i],
           " and pads ", pads[i], " and ", pads[r + i], " along spatial dim ", i, " holds no block");
  Dims torch_pads;  // pad's order: (begin, end) pairs from the last dim
  for (size_t i = r; i-- > 0;) {
    torch_pads.push_back(pads[i]);
    torch_pads.push_back(pads[r + i]);
  }
  const int64_t n = input.size(0), c = input.size(1), kl = b.kernel * b.count;
  const Tensor flat = pad(input, torch_pads).reshape({n, c, b.padded_size});
  const Tensor index = block_index(b, block, dilation, stride).reshape({1, 1, kl}).expand({n, c, kl});
  return gather(flat, 2, index).reshape({n, c * b.kernel, b.count});
}

Tensor col2im(const Tensor& input, const Dims& image, const Dims& block, const Dims& dilation, const Dims& stride,
              const Dims& pads) {
  const Blocks b = blocks_of("col2im", image, block, dilation, stride, pads);
  if (input.dim() != 3 || input.size(1) % b.kernel != 0 || input.size(2) != b.count)
    fail("[col2im] input of shape ", input.shape(), " is not [N, C * ", b.kernel, ", ", b.count, "]: blocks of ",
         b.kernel, " values at ", b.count, " positions");
  const int64_t n = input.size(0), c = input.size(1) / b.kernel, kl = b.kernel * b.count;
  const Tensor index = block_index(b, block, dilation, stride).reshape({1, 1, kl}).expand({n, c, kl});
  Tensor out = scatter_add(zeros({n, c, b.padded_size}, {.dtype = input.dtype()}), 2, index, input.reshape({n, c, kl}));
  Dims shape{n, c};
  for (int64_t p : b.padded) shape.push_back(p);
  out = out.reshape(shape);
  for (size_t i = 0; i < block.size(); ++i) out = out.narrow(static_cast<int64_t>(2 + i), pads[i], image[i]);
  return out;
}

Tensor unfold(const Tensor& input, const Dims& kernel_size, const Dims& dilation, const Dims& padding,
              const Dims& stride) {
  if (input.dim() != 3 && input.dim() != 4)
    fail("[unfold] expected a 3-D or 4-D input [(N,) C, H, W], got shape ", input.shape(), " (", input.dtype(), ")");
  require_floating("unfold", input);
  const bool batched = input.dim() == 4;
  const Tensor out = im2col(batched ? input : input.unsqueeze(0), pair("unfold", "kernel_size", kernel_size),
                            pair("unfold", "dilation", dilation), pair("unfold", "stride", stride),
                            both_ends(pair("unfold", "padding", padding)));
  return batched ? out : out.squeeze({0});
}

Tensor fold(const Tensor& input, const Dims& output_size, const Dims& kernel_size, const Dims& dilation,
            const Dims& padding, const Dims& stride) {
  if (input.dim() != 2 && input.dim() != 3)
    fail("[fold] expected a 2-D or 3-D input [(N,) C * kh * kw, L], got shape ", input.shape(), " (", input.dtype(),
         ")");
  require_floating("fold", input);
  const bool batched = input.dim() == 3;
  const Tensor out = col2im(batched ? input : input.unsqueeze(0), pair("fold", "output_size", output_size),
                            pair("fold", "kernel_size", kernel_size), pair("fold", "dilation", dilation),
                            pair("fold", "stride", stride), both_ends(pair("fold", "padding", padding)));
  return batched ? out : out.squeeze({0});
}

}  // namespace ug::nn::functional
