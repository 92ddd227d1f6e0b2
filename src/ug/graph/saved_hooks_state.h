// Whether saved-tensor hooks (SavedTensorHooksGuard, graph/node.h) are installed on this thread:
// autocast installs hooks of its own only where no others are (activation checkpointing's).
#pragma once

namespace ug {

bool saved_tensor_hooks_installed();

}  // namespace ug
