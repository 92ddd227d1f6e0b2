// Everything in ug::optim: the optimizers (torch's, and Keras's in optim::keras), their
// functional form, learning-rate schedulers and gradient clipping.
#pragma once

#include "ug/optim/adadelta.h"
#include "ug/optim/adafactor.h"
#include "ug/optim/adagrad.h"
#include "ug/optim/adam.h"
#include "ug/optim/adamax.h"
#include "ug/optim/asgd.h"
#include "ug/optim/clip_grad.h"
#include "ug/optim/functional.h"
#include "ug/optim/grad_scaler.h"
#include "ug/optim/keras.h"
#include "ug/optim/lbfgs.h"
#include "ug/optim/loss_scale_optimizer.h"
#include "ug/optim/lr_scheduler.h"
#include "ug/optim/nadam.h"
#include "ug/optim/optimizer.h"
#include "ug/optim/radam.h"
#include "ug/optim/rmsprop.h"
#include "ug/optim/rprop.h"
#include "ug/optim/sgd.h"
