// Saving and loading trees (tree.h) in safetensors files: ug.save / ug.load. A plain dict of
// name -> tensor is an ordinary safetensors file; any other tree keeps its tensors in the
// tensor table, where every safetensors reader finds them, and its shape as JSON in the
// "__metadata__" entry "ug.tree". Loading parses data only: no code runs, as with pickle.
//
// The "ug.tree" entry is the text of {"version": 1, "root": NODE}, where NODE is one of
//   null | true | false                       None, True, False
//   an integer (no '.' or exponent)           int (64-bit)
//   any other number                          float (written to round-trip exactly)
//   {"float": "nan" | "inf" | "-inf"}         a float JSON cannot spell
//   a string                                  str
//   [NODE, ...]                               list
//   {"tuple": [NODE, ...]}                    tuple
//   {"dict": [[KEY, NODE], ...]}              dict, in order; KEY is a string (str key) or an
//                                             integer (int key), so {0: ..} and {"0": ..} differ
//   {"tensor": NAME}                          the tensor called NAME in the tensor table
// A tensor's NAME is its path of keys and list indices joined by "." ("model.fc1.weight",
// "optimizer.state.0.exp_avg"), for people and other tools; the skeleton, not the name, says
// where it belongs, so keys with dots, int keys and "" round-trip. Paths that would name two
// tensors (or "__metadata__") all get "#k" appended, k the smallest unused number from 1.
// A file's tensors are each referenced exactly once; nesting is limited to kMaxTreeDepth.
#pragma once

#include <string>
#include <string_view>

#include "ug/io/safetensors.h"
#include "ug/io/tree.h"

namespace ug::io {

/** The "__metadata__" entry that holds a tree's skeleton. */
inline constexpr const char* kTreeMetadataKey = "ug.tree";
/** Containers nested deeper than this are refused on saving and loading. */
inline constexpr int kMaxTreeDepth = 200;

/** Writes atomically, as save_file. metadata: more "__metadata__" entries ("ug.tree" is reserved). */
void save(const Tree& tree, const std::string& path, const Metadata& metadata = {});
/** The whole file in memory: what save writes. */
std::string save_tree_bytes(const Tree& tree, const Metadata& metadata = {});

/** The tree saved in a file; a file without "ug.tree" loads as its dict of name -> tensor
 *  (ordered by name). Malformed files raise ValueError. */
Tree load(const std::string& path);
Tree load_tree_bytes(std::string_view data);

}  // namespace ug::io
