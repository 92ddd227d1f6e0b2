// DLPack in Python (the array API's protocol): Tensor.__dlpack__ / __dlpack_device__, so that
// torch.from_dlpack, jax.dlpack.from_dlpack and np.from_dlpack take a unigrad tensor without a
// copy, and ug.from_dlpack (also ug.utils.dlpack) for anything with __dlpack__ or a capsule.
// The conversions are ug::to_dlpack / ug::from_dlpack (ug/io/dlpack.h); here are the capsules.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>

#include "bindings.h"
#include "convert.h"
#include "ug/io/dlpack.h"

namespace ugpy {
namespace {

constexpr const char* kCapsule = "dltensor";           // a DLManagedTensor not consumed yet
constexpr const char* kUsedCapsule = "used_dltensor";  // renamed by the consumer that took it

/** A capsule's destructor: frees the tensor only if no consumer took it. */
void free_unconsumed(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kCapsule)) return;
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsule));
  if (m->deleter != nullptr) m->deleter(m);
}

/** DLPack's (device type, index) pair of a unigrad device. */
std::pair<int, int> dl_device(const ug::Device& d) {
  return {d.type == ug::DeviceType::CUDA ? kDLCUDA : kDLCPU, d.index};
}

nb::object to_capsule(const ug::Tensor& t, std::optional<bool> copy, nb::handle device) {
  concrete(t, "__dlpack__");
  if (t.requires_grad())
    ug::fail(
        "[__dlpack__] can't export a tensor that requires grad: the consumer would not see its graph; "
        "use tensor.detach()");
  if (!device.is_none() && nb::cast<std::pair<int, int>>(device) != dl_device(t.device()))
    ug::fail("[__dlpack__] can't export a ", t.device(), " tensor to DLPack device ",
             nb::cast<std::string>(nb::str(device)), " without a copy to that device");
  // copy=True asks for memory the consumer owns alone; copy=False and None share.
  DLManagedTensor* m = ug::to_dlpack(copy.value_or(false) ? t.clone() : t);
  PyObject* capsule = PyCapsule_New(m, kCapsule, free_unconsumed);
  if (capsule == nullptr) {
    m->deleter(m);
    throw nb::python_error();
  }
  return nb::steal(capsule);
}

ug::Tensor from_capsule(nb::handle capsule) {
  if (!PyCapsule_IsValid(capsule.ptr(), kCapsule))
    ug::fail<ug::TypeError>("[from_dlpack] expected an unconsumed \"dltensor\" capsule",
                            PyCapsule_IsValid(capsule.ptr(), kUsedCapsule) ? " (this one was consumed already)" : "");
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), kCapsule));
  ug::Tensor t = ug::from_dlpack(m);  // throws before taking m if it can't share it
  PyCapsule_SetName(capsule.ptr(), kUsedCapsule);
  return t;
}

ug::Tensor from_any(nb::handle obj) {
  if (PyCapsule_CheckExact(obj.ptr())) return from_capsule(obj);
  if (!nb::hasattr(obj, "__dlpack__"))
    ug::fail<ug::TypeError>(
        "[from_dlpack] expected an object with __dlpack__ (a torch, JAX or NumPy array, a "
        "unigrad tensor) or a DLPack capsule, got ",
        nb::cast<std::string>(nb::str(obj.type().attr("__name__"))));
  if (nb::hasattr(obj, "__dlpack_device__")) {
    auto [type, index] = nb::cast<std::pair<int, int>>(obj.attr("__dlpack_device__")());
    if (type != kDLCPU && type != kDLCUDAHost)
      ug::fail("[from_dlpack] only CPU memory can be shared, got an array on DLPack device (", type, ", ", index, ")",
               type == kDLCUDA ? ", a CUDA device" : "", "; copy it to the CPU first");
  }
  // No max_version: Debian's DLPack 0.6 knows the unversioned capsule only, which every
  // producer still gives when not asked for the versioned one.
  return from_capsule(obj.attr("__dlpack__")());
}

}  // namespace

void bind_dlpack(nb::module_& m, nb::class_<ug::Tensor>& tensor) {
  tensor
      .def(
          "__dlpack__",
          [](const ug::Tensor& t, nb::handle, nb::handle, nb::handle dl_device, std::optional<bool> copy) {
            return to_capsule(t, copy, dl_device);
          },
          nb::kw_only(), nb::arg("stream") = nb::none(), nb::arg("max_version") = nb::none(),
          nb::arg("dl_device") = nb::none(), nb::arg("copy") = nb::none(),
          "A DLPack capsule over this tensor's memory (no copy unless copy=True): the array API's protocol, "
          "what torch.from_dlpack, jax.dlpack.from_dlpack and np.from_dlpack call.")
      .def(
          "__dlpack_device__", [](const ug::Tensor& t) { return dl_device(t.device()); },
          "DLPack's (device type, index): (1, 0) for the CPU.");
  m.def("from_dlpack", &from_any, nb::arg("ext_tensor"),
        "A tensor sharing the memory of a torch, JAX or NumPy array (anything with __dlpack__) or of a DLPack "
        "capsule, without a copy: torch.from_dlpack.");
  m.def(
      "to_dlpack", [](const ug::Tensor& t) { return to_capsule(t, std::nullopt, nb::none()); }, nb::arg("tensor"),
      "A DLPack capsule over the tensor's memory: torch.utils.dlpack.to_dlpack.");
}

}  // namespace ugpy
