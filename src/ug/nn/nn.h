// Everything of ug::nn: Module, containers, layers and initialisers.
#pragma once

#include "ug/nn/containers.h"
#include "ug/nn/init.h"
#include "ug/nn/functional.h"
#include "ug/nn/layers/activation.h"
#include "ug/nn/layers/attention.h"
#include "ug/nn/layers/conv.h"
#include "ug/nn/layers/dropout.h"
#include "ug/nn/layers/linear.h"
#include "ug/nn/layers/loss.h"
#include "ug/nn/layers/normalization.h"
#include "ug/nn/layers/padding.h"
#include "ug/nn/layers/pixel_shuffle.h"
#include "ug/nn/layers/recurrent.h"
#include "ug/nn/layers/transformer.h"
#include "ug/nn/mixed_precision.h"
#include "ug/nn/module.h"
