// Everything of ug::train: the Keras-style training loop and its callbacks.
#pragma once

#include "ug/train/callback.h"
#include "ug/train/callbacks.h"
#include "ug/train/keras_losses.h"
#include "ug/train/losses.h"
#include "ug/train/metrics.h"
#include "ug/train/progress.h"
#include "ug/train/strategy.h"
#include "ug/train/tensorboard_callback.h"
#include "ug/train/trainer.h"
