// Col2Im: the adjoint of unfolding an image into blocks (nn::functional::col2im, torch's fold),
// with ONNX's checks of its attributes.
#include "ug/nn/functional/fold.h"
#include "ug/onnx/op_table.h"

namespace ug::onnx {
namespace {

using Outputs = std::vector<Tensor>;

Outputs col2im_op(const OpContext& c) {
  const Tensor& x = c.input(0);
  const std::vector<int64_t> image = *c.ints_input(1), block = *c.ints_input(2);
  const size_t r = image.size();
  if (r == 0 || block.size() != r)
    c.fail("image_shape and block_shape must have the same number (> 0) of dims, got ", image.size(), " and ",
           block.size());
  auto per_dim = [&](std::string_view name, size_t count, int64_t fallback) {
    std::vector<int64_t> v = c.attr_ints(name).value_or(std::vector<int64_t>(count, fallback));
    if (v.size() != count) c.fail("attribute '", name, "' has ", v.size(), " values; it needs ", count);
    return v;
  };
  const std::vector<int64_t> dilations = per_dim("dilations", r, 1), strides = per_dim("strides", r, 1);
  const std::vector<int64_t> pads = per_dim("pads", 2 * r, 0);
  if (x.dim() != 3) c.fail("input must have shape [N, C * prod(block_shape), L], got ", x.shape());
  int64_t kernel = 1, blocks = 1, padded_size = 1;
  std::vector<int64_t> padded(r), counts(r);
  for (size_t i = 0; i < r; ++i) {
    if (block[i] < 1 || dilations[i] < 1 || strides[i] < 1 || pads[i] < 0 || pads[r + i] < 0 || image[i] < 0)
      c.fail("dim ", i, ": block ", block[i], ", dilation ", dilations[i], ", stride ", strides[i], ", pads ", pads[i],
             " and ", pads[r + i], " must be positive (pads and image size non-negative)");
    padded[i] = image[i] + pads[i] + pads[r + i];
    const int64_t span = dilations[i] * (block[i] - 1) + 1;
    counts[i] = padded[i] >= span ? (padded[i] - span) / strides[i] + 1 : 0;
    kernel *= block[i];
    blocks *= counts[i];
    padded_size *= padded[i];
  }
  if (padded_size > c.max_elements())
    c.fail("asks for an image of ", padded_size, " elements, over LoadLimits::max_elements");
  if (x.size(1) % kernel != 0 || x.size(2) != blocks)
    c.fail("input of shape ", x.shape(), " does not hold blocks of ", kernel, " values at ", blocks,
           " positions (as image_shape, block_shape, pads, dilations and strides give)");
  auto dims = [](const std::vector<int64_t>& v) { return Dims(v.begin(), v.end()); };
  return {nn::functional::col2im(x, dims(image), dims(block), dims(dilations), dims(strides), dims(pads))};
}

}  // namespace

void add_col2im_ops(std::vector<OpSpec>& ops) { ops.push_back({"Col2Im", col2im_op, 3, 3, 1, 18, {}}); }

}  // namespace ug::onnx
