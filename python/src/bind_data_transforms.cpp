// ug.data.transforms: the image transforms of ug::data::transforms, with torchvision's names
// and signatures. A Python callable may stand anywhere a transform goes (Compose's list,
// FashionMNIST's transform): it is wrapped in a Lambda.
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "convert.h"
#include "data_python.h"
#include "data_transforms_python.h"

namespace ugpy {

using namespace nb::literals;
namespace tf = ug::data::transforms;

namespace {

/** What a Lambda made from a Python callable calls. `implicit`: the Lambda wraps a callable
 *  given where a transform goes, so Python sees the callable again rather than the wrapper. */
struct PyCall {
  std::shared_ptr<PyRef> fn;  // shared: copies of the Lambda take no GIL
  bool implicit;
  ug::Tensor operator()(const ug::Tensor& x) const {
    nb::gil_scoped_acquire gil;
    nb::object out = fn->get()(x);
    if (nb::isinstance<ug::Tensor>(out)) return nb::cast<ug::Tensor>(out);
    return tensor_from_data(out, std::nullopt, std::nullopt);
  }
};

PyCall py_call(nb::handle fn, bool implicit) { return PyCall{std::make_shared<PyRef>(nb::borrow(fn)), implicit}; }

/** One number or a sequence of them (anything with __float__: floats, ints, NumPy scalars, 0-d tensors). */
std::vector<double> doubles_from_python(nb::handle h, const char* op, const char* what) {
  if (nb::hasattr(h, "__float__") && !nb::hasattr(h, "__len__")) return {nb::cast<double>(h.attr("__float__")())};
  std::vector<double> out;
  for (nb::handle v : nb::iter(h)) {
    if (!nb::hasattr(v, "__float__"))
      ug::fail<ug::TypeError>("[", op, "] ", what, " must be numbers, got ", nb::cast<std::string>(nb::repr(v)));
    out.push_back(nb::cast<double>(v.attr("__float__")()));
  }
  return out;
}

/** torchvision's int-or-sequence arguments (size, padding); None is empty. */
std::vector<int64_t> ints_from_python(nb::handle h, const char* op, const char* what) {
  if (h.is_none()) return {};
  if (PyLong_Check(h.ptr())) return {nb::cast<int64_t>(h)};
  std::vector<int64_t> out;
  for (nb::handle v : nb::iter(h)) {
    if (!PyLong_Check(v.ptr()))
      ug::fail<ug::TypeError>("[", op, "] ", what, " must be ints, got ", nb::cast<std::string>(nb::repr(v)));
    out.push_back(nb::cast<int64_t>(v));
  }
  return out;
}

}  // namespace

std::shared_ptr<tf::Transform> transform_from_python(nb::handle obj, const char* op) {
  if (obj.is_none()) return nullptr;
  if (nb::isinstance<tf::Transform>(obj)) return nb::cast<std::shared_ptr<tf::Transform>>(obj);
  if (!PyCallable_Check(obj.ptr()))
    ug::fail<ug::TypeError>("[", op, "] a transform must be callable, got ",
                            nb::cast<std::string>(obj.type().attr("__name__")));
  return std::make_shared<tf::Lambda>(py_call(obj, true));
}

nb::object transform_to_python(const std::shared_ptr<tf::Transform>& t) {
  if (!t) return nb::none();
  if (const auto* lambda = dynamic_cast<const tf::Lambda*>(t.get()))
    if (const auto* call = lambda->function().target<PyCall>(); call && call->implicit) return call->fn->get();
  return nb::cast(t);
}

void bind_data_transforms(nb::module_& data) {
  nb::module_ m = data.def_submodule("transforms", "image transforms with torchvision.transforms' names");

  nb::class_<tf::Transform>(m, "Transform",
                            "An image transform: call it on one image (C, H, W) or a batch (N, C, H, W).")
      .def(
          "__call__",
          [](const tf::Transform& t, nb::handle image) {
            // ToTensor's input is often a NumPy array; the others take it too.
            ug::Tensor x = nb::isinstance<ug::Tensor>(image) ? nb::cast<ug::Tensor>(image)
                                                             : tensor_from_data(image, std::nullopt, std::nullopt);
            nb::gil_scoped_release release;
            return t(x);
          },
          "img"_a)
      .def("__repr__", &tf::Transform::repr);

  nb::class_<tf::Normalize, tf::Transform>(
      m, "Normalize", "(x - mean[c]) / std[c] for each channel c of a float image; one value stands for all.")
      .def(
          "__init__",
          [](tf::Normalize* self, nb::handle mean, nb::handle std, bool inplace) {
            new (self) tf::Normalize(doubles_from_python(mean, "Normalize", "mean"),
                                     doubles_from_python(std, "Normalize", "std"), inplace);
          },
          "mean"_a, "std"_a, "inplace"_a = false)
      .def_prop_ro("mean", &tf::Normalize::mean)
      .def_prop_ro("std", &tf::Normalize::std);

  nb::class_<tf::RandomCrop, tf::Transform>(
      m, "RandomCrop",
      "A size (h, w) crop at a random place of the image padded by padding (int, (left/right, top/bottom) or\n"
      "(left, top, right, bottom)); padding_mode 'constant' (with fill), 'edge', 'reflect' or 'symmetric'.")
      .def(
          "__init__",
          [](tf::RandomCrop* self, nb::handle size, nb::handle padding, bool pad_if_needed, double fill,
             const std::string& padding_mode) {
            new (self) tf::RandomCrop(ints_from_python(size, "RandomCrop", "size"),
                                      ints_from_python(padding, "RandomCrop", "padding"), pad_if_needed, fill,
                                      tf::padding_mode_from_name(padding_mode));
          },
          "size"_a, "padding"_a = nb::none(), "pad_if_needed"_a = false, "fill"_a = 0, "padding_mode"_a = "constant");

  nb::class_<tf::RandomHorizontalFlip, tf::Transform>(m, "RandomHorizontalFlip",
                                                      "Mirrors each image left-right with probability p.")
      .def(nb::init<double>(), "p"_a = 0.5);

  nb::class_<tf::ToTensor, tf::Transform>(
      m, "ToTensor",
      "uint8 images (H, W), (H, W, C) or (N, H, W, C), tensors or NumPy arrays, to float32 (C, H, W) or\n"
      "(N, C, H, W) in [0, 1]; float tensors pass unchanged.")
      .def(nb::init<>());

  nb::class_<tf::Compose, tf::Transform>(m, "Compose", "The transforms (or any callables) one after another.")
      .def(
          "__init__",
          [](tf::Compose* self, nb::iterable transforms) {
            std::vector<std::shared_ptr<tf::Transform>> ts;
            for (nb::handle t : transforms) {
              if (t.is_none()) ug::fail<ug::TypeError>("[Compose] a transform is None");
              ts.push_back(transform_from_python(t, "Compose"));
            }
            new (self) tf::Compose(std::move(ts));
          },
          "transforms"_a)
      .def_prop_ro("transforms", [](const tf::Compose& c) {
        nb::list out;
        for (const auto& t : c.transforms()) out.append(transform_to_python(t));
        return out;
      });

  nb::class_<tf::Lambda, tf::Transform>(m, "Lambda", "A Python function as a transform.")
      .def(
          "__init__",
          [](tf::Lambda* self, nb::handle lambd) {
            if (!PyCallable_Check(lambd.ptr()))
              ug::fail<ug::TypeError>("[Lambda] expected a callable, got ",
                                      nb::cast<std::string>(lambd.type().attr("__name__")));
            new (self) tf::Lambda(py_call(lambd, false));
          },
          "lambd"_a)
      .def_prop_ro("lambd", [](const tf::Lambda& l) -> nb::object {
        if (const auto* call = l.function().target<PyCall>()) return call->fn->get();
        return nb::none();
      });
}

}  // namespace ugpy
