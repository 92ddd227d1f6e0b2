#include "ug/nn/functional/pixel_shuffle.h"

#include <initializer_list>

#include "ug/core/error.h"

namespace ug::nn::functional {

namespace {

/** The input's leading (batch) dims, checked: at least [C, H, W] and a positive factor. */
Dims batch_dims(const char* op, const Tensor& input, int64_t factor) {
  if (input.dim() < 3)
    fail("[", op, "] expected an input of at least 3 dims [*, C, H, W], got shape ", input.shape(), " (", input.dtype(),
         ")");
  if (factor <= 0) fail("[", op, "] the factor must be positive, got ", factor);
  return Dims(input.shape().begin(), input.shape().end() - 3);
}

Dims joined(Dims head, std::initializer_list<int64_t> tail) {
  for (int64_t d : tail) head.push_back(d);
  return head;
}

/** The batch dims in place, then the last five dims in `tail`'s order (0 the first of them). */
Dims order_of(size_t batch, std::initializer_list<int64_t> tail) {
  Dims order;
  for (size_t i = 0; i < batch; ++i) order.push_back(static_cast<int64_t>(i));
  for (int64_t d : tail) order.push_back(static_cast<int64_t>(batch) + d);
  return order;
}

}  // namespace

Tensor pixel_shuffle(const Tensor& input, int64_t r) {
  const Dims batch = batch_dims("pixel_shuffle", input, r);
  const int64_t c = input.size(-3), h = input.size(-2), w = input.size(-1);
  if (c % (r * r) != 0)
    fail("[pixel_shuffle] the channel dim of shape ", input.shape(), " must be divisible by upscale_factor² = ", r * r);
  return input.reshape(joined(batch, {c / (r * r), r, r, h, w}))
      .permute(order_of(batch.size(), {0, 3, 1, 4, 2}))  // [C, H, r, W, r]
      .reshape(joined(batch, {c / (r * r), h * r, w * r}));
}

Tensor pixel_unshuffle(const Tensor& input, int64_t r) {
  const Dims batch = batch_dims("pixel_unshuffle", input, r);
  const int64_t c = input.size(-3), h = input.size(-2), w = input.size(-1);
  if (h % r != 0 || w % r != 0)
    fail("[pixel_unshuffle] the spatial dims of shape ", input.shape(), " must be divisible by downscale_factor ", r);
  return input.reshape(joined(batch, {c, h / r, r, w / r, r}))
      .permute(order_of(batch.size(), {0, 2, 4, 1, 3}))  // [C, r, r, H/r, W/r]
      .reshape(joined(batch, {c * r * r, h / r, w / r}));
}

}  // namespace ug::nn::functional
