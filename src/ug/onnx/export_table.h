// The export table: each traced op name's ONNX emitter, and the ops rejected on purpose.
#pragma once

#include <string>
#include <vector>

#include "ug/onnx/graph_builder.h"

namespace ug::onnx {

/** Appends the ONNX nodes of one traced call. Raises ValueError for an op without an emitter. */
void emit(GraphBuilder& g, const CapturedCall& call);
/** Whether the table has an emitter for the op. */
bool exports(const std::string& op);

}  // namespace ug::onnx
