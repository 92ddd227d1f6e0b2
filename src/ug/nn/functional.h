// ug::nn::functional, the layers and losses as functions (torch.nn.functional):
//   namespace F = ug::nn::functional;
//   Tensor loss = F::cross_entropy(F::linear(x, w, b), y, {.label_smoothing = 0.1});
#pragma once

#include "ug/nn/functional/activation.h"
#include "ug/nn/functional/attention.h"
#include "ug/nn/functional/bilinear.h"
#include "ug/nn/functional/ctc_loss.h"
#include "ug/nn/functional/dropout.h"
#include "ug/nn/functional/embedding.h"
#include "ug/nn/functional/embedding_bag.h"
#include "ug/nn/functional/fold.h"
#include "ug/nn/functional/grid_sample.h"
#include "ug/nn/functional/interpolate.h"
#include "ug/nn/functional/linear.h"
#include "ug/nn/functional/loss.h"
#include "ug/nn/functional/margin_loss.h"
#include "ug/nn/functional/normalization.h"
#include "ug/nn/functional/pixel_shuffle.h"
#include "ug/nn/functional/pooling.h"
