// Everything of ug::nn: Module, containers, layers and initialisers.
#pragma once

#include "ug/nn/containers.h"
#include "ug/nn/init.h"
#include "ug/nn/layers/activation.h"
#include "ug/nn/layers/linear.h"
#include "ug/nn/layers/recurrent.h"
#include "ug/nn/module.h"
