// The data options `ug train`, `ug eval` and `ug predict` share: Fashion-MNIST by default, or
// image and label files given by path (IDX, gzip or not, NPY and CSV), read into memory.
#pragma once

#include <string>
#include <vector>

#include "cli.h"
#include "ug/core/tensor.h"

namespace ug::cli {

struct DataFlags {
  /** "fashion-mnist" (Debian's dataset-fashion-mnist, or $FASHION_MNIST_DIR) or a folder
   *  holding the four Fashion-MNIST / MNIST IDX files. */
  std::string data = "fashion-mnist";
  std::string train_images, train_labels, test_images, test_labels;
};

/** The usage lines of the data options, a literal so that each command's help is one constant. */
#define UG_DATA_USAGE                                                                          \
  "\n"                                                                                         \
  "data (default: Fashion-MNIST from Debian's dataset-fashion-mnist package):\n"               \
  "  --data D            fashion-mnist, or a folder with the four (Fashion-)MNIST IDX files\n" \
  "  --train-images F    training images: .idx/.idx.gz (IDX), .npy or .csv (a row each)\n"     \
  "  --train-labels F    training labels, same formats\n"                                      \
  "  --test-images F     test images\n"                                                        \
  "  --test-labels F     test labels\n"

/** Consumes args[i] (and its value) when it is a data option. */
bool parse_data_flag(const Args& args, size_t& i, DataFlags& flags);

struct Split {
  Tensor images;  // float32 in [0, 1]: (N, 1, 28, 28) for 28x28 images, else (N, features)
  Tensor labels;  // int64 (N)
};

/** Images from an IDX, NPY or CSV file as a Split holds them. */
Tensor load_images(const std::string& path);

/** The training or the test split the flags name; a missing file names itself and, for the
 *  default data set, the Debian package that provides it. */
Split load_split(const DataFlags& flags, bool train);

/** Class names for predictions: Fashion-MNIST's ten, or the label numbers. */
std::string class_name(int64_t label, const DataFlags& flags);

}  // namespace ug::cli
