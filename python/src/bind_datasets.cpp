// ug.datasets: ready-made data sets, with torchvision.datasets' names.
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include "data_python.h"
#include "data_transforms_python.h"
#include "ug/data/fashion_mnist.h"

namespace ugpy {

using namespace nb::literals;
using ug::data::FashionMNIST;

namespace {

/** Indices as a sequence of ints or an integer tensor. */
std::vector<int64_t> indices_from_python(nb::handle h) {
  if (nb::isinstance<ug::Tensor>(h)) {
    const ug::Tensor t = nb::cast<ug::Tensor>(h);
    if (!ug::is_integral(t.dtype()))
      ug::fail<ug::TypeError>("[FashionMNIST.get_batch] indices must be integers, got ", t.dtype());
    const ug::Tensor flat = t.reshape({-1}).to(ug::DType::Int64).contiguous();
    const int64_t* p = flat.data_ptr<int64_t>();
    return {p, p + flat.numel()};
  }
  std::vector<int64_t> out;
  for (nb::handle i : nb::iter(h)) out.push_back(nb::cast<int64_t>(nb::int_(i)));
  return out;
}

}  // namespace

void bind_datasets(nb::module_& datasets) {
  nb::class_<FashionMNIST, ug::data::Dataset> cls(
      datasets, "FashionMNIST",
      "Fashion-MNIST as torchvision.datasets.FashionMNIST: ds[i] is (image (1, 28, 28) float32 in [0, 1],\n"
      "label int64), get_batch(indices) the whole batch ((N, 1, 28, 28), (N,)) in one gather. transform\n"
      "gets the float image (or batch), target_transform the label(s); ug.data.transforms or any callable.\n"
      "root defaults to $FASHION_MNIST_DIR, else /usr/share/datasets/fashion-mnist, where Debian's package\n"
      "puts the files (sudo apt-get install dataset-fashion-mnist); a missing file raises FileNotFoundError.\n"
      "download is accepted for torchvision's signature: nothing is downloaded.");
  cls.def(
         "__init__",
         [](FashionMNIST* self, const std::optional<std::filesystem::path>& root, bool train, nb::handle transform,
            nb::handle target_transform, bool /*download*/) {
           auto t = transform_from_python(transform, "FashionMNIST");
           auto tt = transform_from_python(target_transform, "FashionMNIST");
           const std::string dir = root ? root->string() : "";
           nb::gil_scoped_release release;  // reading the files takes a while
           new (self) FashionMNIST(dir, train, std::move(t), std::move(tt));
         },
         "root"_a = nb::none(), "train"_a = true, "transform"_a = nb::none(), "target_transform"_a = nb::none(),
         "download"_a = false)
      .def("__len__", &FashionMNIST::size)
      .def(
          "__getitem__",
          [](const FashionMNIST& d, int64_t index) {
            ug::data::Example e;
            {
              nb::gil_scoped_release release;
              e = d.get(index);
            }
            return example_to_element(e);
          },
          "index"_a)
      .def(
          "get_batch",
          [](const FashionMNIST& d, nb::handle indices) {
            const std::vector<int64_t> idx = indices_from_python(indices);
            ug::data::Example e;
            {
              nb::gil_scoped_release release;
              e = d.get_batch(idx);
            }
            return example_to_element(e);
          },
          "indices"_a, "(images (N, 1, 28, 28), labels (N,)) for the samples at indices, each transform run once.")
      .def_prop_ro("data", &FashionMNIST::data, "The images as stored: (N, 28, 28) uint8.")
      .def_prop_ro("targets", &FashionMNIST::targets, "The labels: (N,) int64.")
      .def_prop_ro("root", &FashionMNIST::root)
      .def_prop_ro("train", &FashionMNIST::train)
      .def_prop_ro("transform", [](const FashionMNIST& d) { return transform_to_python(d.transform()); })
      .def_prop_ro("target_transform", [](const FashionMNIST& d) { return transform_to_python(d.target_transform()); })
      .def("__repr__", [](const FashionMNIST& d) {
        std::string out = "Dataset FashionMNIST\n    Number of datapoints: " + std::to_string(d.size()) +
                          "\n    Root location: " + d.root() + "\n    Split: " + (d.train() ? "Train" : "Test");
        if (d.transform()) out += "\n    Transform: " + d.transform()->repr();
        if (d.target_transform()) out += "\n    Target transform: " + d.target_transform()->repr();
        return out;
      });
  nb::list classes;
  nb::dict class_to_idx;
  for (size_t i = 0; i < FashionMNIST::classes().size(); ++i) {
    const std::string_view name = FashionMNIST::classes()[i];
    classes.append(nb::str(name.data(), name.size()));
    class_to_idx[nb::str(name.data(), name.size())] = i;
  }
  cls.attr("classes") = classes;
  cls.attr("class_to_idx") = class_to_idx;

  datasets.def(
      "fashion_mnist",
      [](bool train) {
        nb::gil_scoped_release release;
        return FashionMNIST("", train);
      },
      "train"_a = true,
      "The Fashion-MNIST training (60000 images) or test (10000) split from the default folder, without\n"
      "transforms: ug.datasets.FashionMNIST(train=train).");
}

}  // namespace ugpy
