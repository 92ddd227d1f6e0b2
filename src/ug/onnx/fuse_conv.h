// The importer's fusion of Conv -> Relu and Conv -> Add -> Relu into one node, UgConvRelu,
// whose convolution kernel adds the residual and applies relu as it writes its output.
#pragma once

#include "ug/onnx/graph.h"

namespace ug::onnx {

/** Rewrites g's Conv -> Relu and Conv -> Add -> Relu chains whose intermediates nothing else
 *  reads (no other node, subgraph or graph output) into UgConvRelu nodes at the Relu's place,
 *  and plans the liveness again. Only the graph run changes: the file and any export keep
 *  the three ops. */
void fuse_conv_relu(Graph& g);

}  // namespace ug::onnx
