// unigrad.Tensor: attributes, conversions, views, indexing and the method forms of the ops,
// with PyTorch's names and signatures. Every method forwards to the C++ Tensor.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "convert.h"
#include "ug/ops/bitcast.h"
#include "ug/ops/indexing.h"
#include "ug/ops/linalg.h"
#include "ug/ops/view.h"

namespace ugpy {

namespace {

using ug::Tensor;

std::optional<ug::Dims> opt_dims(nb::handle dim, const char* op) {
  if (dim.is_none()) return std::nullopt;
  return dims_from_sequence(dim, op);
}

/** A reduction's dims: dim's, or, for dim=None with keepdim, every dim (torch keeps them all as
 *  1s); none means the whole tensor to a 0-d result. */
std::optional<ug::Dims> reduced_dims(const Tensor& t, nb::handle dim, bool keepdim, const char* op) {
  if (!dim.is_none() || !keepdim) return opt_dims(dim, op);
  ug::Dims all;
  for (int64_t d = 0; d < t.dim(); ++d) all.push_back(d);
  return all;
}

nb::tuple shape_tuple(const ug::Shape& s) {
  nb::list l;
  for (int64_t d : s) l.append(d);
  return nb::tuple(l);
}

Tensor to_any(const Tensor& t, nb::args args, nb::kwargs kwargs) {
  Tensor out = t;
  bool copy = kwargs.contains("copy") && nb::cast<bool>(kwargs["copy"]);
  auto apply = [&](nb::handle h) {
    if (nb::isinstance<Tensor>(h)) {
      Tensor other = nb::cast<Tensor>(h);
      out = out.to(other.dtype(), copy).to(other.device());
    } else if (nb::isinstance<nb::str>(h) || nb::isinstance<PyDevice>(h)) {
      out = out.to(device_from_python(h), copy);
    } else {
      out = out.to(dtype_from_python(h), copy);
    }
  };
  for (nb::handle a : args) apply(a);
  if (kwargs.contains("device")) out = out.to(device_from_python(kwargs["device"]), copy);
  if (kwargs.contains("dtype")) out = out.to(dtype_from_python(kwargs["dtype"]), copy);
  return out;
}

nb::object values_indices(std::pair<Tensor, Tensor> p) { return values_indices_type()(p.first, p.second); }

/** An in-place view's method: runs op on self's tensor and returns self, the same Python object
 *  as torch does. */
template <class... A> auto returning_self(Tensor& (*op)(Tensor&, A...)) {
  return [op](nb::object self, A... args) {
    op(nb::cast<Tensor&>(self), args...);
    return self;
  };
}

}  // namespace

void bind_tensor(nb::module_& m, nb::class_<Tensor>& cls) {
  cls.def_prop_ro("shape", [](const Tensor& t) { return shape_tuple(shape_read(t).shape()); })
      .def(
          "size",
          [](const Tensor& t, std::optional<int64_t> d) -> nb::object {
            if (d) return nb::cast(shape_read(t).size(*d));
            return shape_tuple(shape_read(t).shape());
          },
          nb::arg("dim") = nb::none())
      .def(
          "stride",
          [](const Tensor& t, std::optional<int64_t> d) -> nb::object {
            if (d) return nb::cast(t.stride(*d));
            return shape_tuple(ug::Shape(t.strides().begin(), t.strides().end()));
          },
          nb::arg("dim") = nb::none())
      .def("dim", &Tensor::dim)
      .def_prop_ro("ndim", &Tensor::dim)
      .def("numel", [](const Tensor& t) { return shape_read(t).numel(); })
      .def_prop_ro("dtype", &Tensor::dtype)
      .def_prop_ro("device", &Tensor::device)
      .def_prop_ro("is_cuda", [](const Tensor& t) { return t.device().type == ug::DeviceType::CUDA; })
      .def("element_size", &Tensor::element_size)
      .def_prop_ro("itemsize", &Tensor::element_size)
      .def_prop_ro("nbytes", &Tensor::nbytes)
      .def("storage_offset", &Tensor::storage_offset)
      .def("is_contiguous", &Tensor::is_contiguous)
      .def(
          "dim_order",
          [](const Tensor& t, nb::handle ambiguity_check) {
            // torch also takes a list of memory formats, which unigrad does not have
            if (!nb::isinstance<bool>(ambiguity_check))
              ug::fail<ug::TypeError>("[dim_order] ambiguity_check must be a bool, got ",
                                      nb::inst_name(ambiguity_check).c_str());
            const ug::Dims order = t.dim_order(nb::cast<bool>(ambiguity_check));
            return shape_tuple(ug::Shape(order.begin(), order.end()));
          },
          nb::kw_only(), nb::arg("ambiguity_check") = false)
      .def("is_floating_point", &Tensor::is_floating_point)
      .def("data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.raw_data()); })
      .def("item", &item_to_python)
      .def("tolist", &to_list)
      .def("numpy", &to_numpy)
      .def(
          "__array__",
          [](const Tensor& t, nb::handle dtype, nb::handle) {
            nb::object a = to_numpy(t);
            return dtype.is_none() ? a : a.attr("astype")(dtype);
          },
          nb::arg("dtype") = nb::none(), nb::arg("copy") = nb::none())
      .def("__len__",
           [](const Tensor& t) {
             if (t.dim() == 0) ug::fail<ug::TypeError>("[len] len() of a 0-d tensor");
             return shape_read(t).size(0);
           })
      .def("__iter__",
           [](const Tensor& t) {
             if (t.dim() == 0) ug::fail<ug::TypeError>("[iter] iteration over a 0-d tensor");
             return nb::iter(nb::cast(t.unbind(0)));
           })
      .def("__bool__", [](const Tensor& t) { return concrete(t, "bool()").item().to_bool(); })
      .def("__float__", [](const Tensor& t) { return concrete(t, "float()").item().to_double(); })
      .def("__int__", [](const Tensor& t) { return concrete(t, "int()").item().to_int(); })
      .def("__index__",
           [](const Tensor& t) {
             concrete(t, "use as an index");
             if (ug::is_floating(t.dtype()))
               ug::fail<ug::TypeError>("[index] only integer tensors of a single element can be converted to an index");
             return t.item().to_int();
           })
      .def("__hash__", [](const Tensor& t) { return reinterpret_cast<intptr_t>(t.impl_ref().get()); })
      // conversion
      .def("to", &to_any)
      .def(
          "type",
          [](const Tensor& t, nb::handle dtype) -> nb::object {
            if (dtype.is_none()) return nb::str(("unigrad." + std::string(ug::dtype_name(t.dtype()))).c_str());
            return nb::cast(t.to(dtype_from_python(dtype)));
          },
          nb::arg("dtype") = nb::none())
      .def("float", [](const Tensor& t) { return t.to(ug::DType::Float32); })
      .def("double", [](const Tensor& t) { return t.to(ug::DType::Float64); })
      .def("half", [](const Tensor& t) { return t.to(ug::DType::Float16); })
      .def("bfloat16", [](const Tensor& t) { return t.to(ug::DType::BFloat16); })
      .def("int", [](const Tensor& t) { return t.to(ug::DType::Int32); })
      .def("long", [](const Tensor& t) { return t.to(ug::DType::Int64); })
      .def("bool", [](const Tensor& t) { return t.to(ug::DType::Bool); })
      .def("byte", [](const Tensor& t) { return t.to(ug::DType::UInt8); })
      .def("char", [](const Tensor& t) { return t.to(ug::DType::Int8); })
      .def("short", [](const Tensor& t) { return t.to(ug::DType::Int16); })
      .def("cpu", [](const Tensor& t) { return t.to(ug::Device()); })
      .def(
          "cuda", [](const Tensor& t, int index) { return t.to(ug::Device(ug::DeviceType::CUDA, index)); },
          nb::arg("device") = 0)
      .def("contiguous", &Tensor::contiguous)
      .def("clone", &Tensor::clone)
      .def(
          "is_deleted", [](const Tensor& t) { return !t.defined(); },
          "jax.Array.is_deleted: whether the tensor was donated to a jitted function (donate_argnums) and its "
          "buffer taken; any other use of it then raises.")
      .def("copy_", [](Tensor& t, const Tensor& src) { return t.copy_(src); })
      .def("fill_", [](Tensor& t, ug::Scalar v) { return t.fill_(v); })
      .def("zero_", [](Tensor& t) { return t.zero_(); })
      // views and shape
      .def(
          "view",
          [](const Tensor& t, nb::args a, nb::kwargs kw) {
            // torch's two views: view(*shape) and view(dtype), the bits read as another dtype.
            if (kw.contains("dtype") && a.size() == 0 && kw.size() == 1)
              return ug::view(t, dtype_from_python(kw["dtype"]));
            if (kw.size() != 0) ug::fail<ug::TypeError>("[view] takes a shape or a dtype (dtype=...)");
            // One argument that is neither a size nor a sequence of sizes: a dtype (ug's, torch's, NumPy's).
            if (a.size() == 1 && (nb::isinstance<nb::type_object>(a[0]) ||
                                  (!nb::hasattr(a[0], "__index__") && !nb::isinstance<nb::sequence>(a[0]))))
              return ug::view(t, dtype_from_python(a[0]));
            return t.view(dims_from_args(a, "view"));
          },
          "torch's Tensor.view: view(*shape) is the tensor in a new shape sharing its storage; view(dtype) "
          "reads the same storage as dtype (no copy, not differentiable).")
      .def("reshape", [](const Tensor& t, nb::args a) { return t.reshape(dims_from_args(a, "reshape")); })
      .def("view_as", [](const Tensor& t, const Tensor& o) { return t.view(o.shape()); })
      .def("reshape_as", [](const Tensor& t, const Tensor& o) { return t.reshape(o.shape()); })
      .def("transpose", &Tensor::transpose, nb::arg("dim0"), nb::arg("dim1"))
      .def("swapaxes", &Tensor::swapaxes, nb::arg("axis0"), nb::arg("axis1"))
      .def("swapdims", &Tensor::swapdims, nb::arg("dim0"), nb::arg("dim1"))
      .def("permute", [](const Tensor& t, nb::args a) { return t.permute(dims_from_args(a, "permute")); })
      .def("t", &Tensor::t)
      .def("movedim", &Tensor::movedim, nb::arg("source"), nb::arg("destination"))
      .def("moveaxis", &Tensor::movedim, nb::arg("source"), nb::arg("destination"))
      .def_prop_ro("T", &Tensor::T)
      .def_prop_ro("mT", &Tensor::mT)
      .def(
          "squeeze",
          [](const Tensor& t, nb::handle dim) {
            auto d = opt_dims(dim, "squeeze");
            return d ? t.squeeze(*d) : t.squeeze();
          },
          nb::arg("dim") = nb::none())
      .def("unsqueeze", &Tensor::unsqueeze, nb::arg("dim"))
      .def("flatten", &Tensor::flatten, nb::arg("start_dim") = 0, nb::arg("end_dim") = -1)
      .def(
          "unflatten",
          [](const Tensor& t, int64_t dim, nb::handle sizes) {
            return t.unflatten(dim, dims_from_sequence(sizes, "unflatten"));
          },
          nb::arg("dim"), nb::arg("sizes"))
      .def("expand", [](const Tensor& t, nb::args a) { return t.expand(dims_from_args(a, "expand")); })
      .def("expand_as", &Tensor::expand_as)
      .def("broadcast_to",
           [](const Tensor& t, nb::handle s) { return t.expand(dims_from_sequence(s, "broadcast_to")); })
      .def("narrow", &Tensor::narrow, nb::arg("dim"), nb::arg("start"), nb::arg("length"))
      .def("select", &Tensor::select, nb::arg("dim"), nb::arg("index"))
      .def("diagonal", &Tensor::diagonal, nb::arg("offset") = 0, nb::arg("dim1") = 0, nb::arg("dim2") = 1)
      .def("unfold", &ug::unfold, nb::arg("dimension"), nb::arg("size"), nb::arg("step"))
      .def(
          "as_strided",
          [](const Tensor& t, nb::handle size, nb::handle stride, std::optional<int64_t> offset) {
            // torch's default offset is the tensor's own: a view's elements, not its storage's first
            return t.as_strided(dims_from_sequence(size, "as_strided"), dims_from_sequence(stride, "as_strided"),
                                offset.value_or(t.storage_offset()));
          },
          nb::arg("size"), nb::arg("stride"), nb::arg("storage_offset") = nb::none())
      // in-place views
      .def("transpose_", returning_self(&ug::transpose_), nb::arg("dim0"), nb::arg("dim1"))
      .def("swapaxes_", returning_self(&ug::transpose_), nb::arg("axis0"), nb::arg("axis1"))
      .def("swapdims_", returning_self(&ug::transpose_), nb::arg("dim0"), nb::arg("dim1"))
      .def("t_", returning_self(&ug::t_))
      .def(
          "squeeze_",
          [](nb::object self, nb::handle dim) {
            Tensor& t = nb::cast<Tensor&>(self);
            if (auto d = opt_dims(dim, "squeeze_")) ug::squeeze_(t, *d);
            else ug::squeeze_(t);
            return self;
          },
          nb::arg("dim") = nb::none())
      .def("unsqueeze_", returning_self(&ug::unsqueeze_), nb::arg("dim"))
      .def(
          "as_strided_",
          [](nb::object self, nb::handle size, nb::handle stride, std::optional<int64_t> offset) {
            Tensor& t = nb::cast<Tensor&>(self);
            ug::as_strided_(t, dims_from_sequence(size, "as_strided_"), dims_from_sequence(stride, "as_strided_"),
                            offset.value_or(t.storage_offset()));
            return self;
          },
          nb::arg("size"), nb::arg("stride"), nb::arg("storage_offset") = nb::none())
      .def("resize_",
           [](nb::object self, nb::args sizes) {
             ug::resize_(nb::cast<Tensor&>(self), dims_from_args(sizes, "resize_"));
             return self;
           })
      .def("resize_as_", returning_self(&ug::resize_as_), nb::arg("other"))
      .def("unbind", &Tensor::unbind, nb::arg("dim") = 0)
      .def(
          "split",
          [](const Tensor& t, nb::handle s, int64_t dim) {
            if (PyLong_Check(s.ptr())) return t.split(nb::cast<int64_t>(s), dim);
            return t.split(dims_from_sequence(s, "split"), dim);
          },
          nb::arg("split_size_or_sections"), nb::arg("dim") = 0)
      .def("chunk", &Tensor::chunk, nb::arg("chunks"), nb::arg("dim") = 0)
      // indexing
      // x[None] is an index too (a new dim), so the index argument takes None.
      .def(
          "__getitem__", [](const Tensor& t, nb::handle idx) { return t.index(indices_from_python(idx)); },
          nb::arg("index").none())
      .def(
          "__setitem__",
          [](Tensor& t, nb::handle idx, nb::handle value) {
            ug::Scalar s;
            if (scalar_from_python(value, s)) t.index_put_(indices_from_python(idx), s);
            else if (nb::isinstance<Tensor>(value)) t.index_put_(indices_from_python(idx), nb::cast<Tensor>(value));
            else t.index_put_(indices_from_python(idx), tensor_from_data(value, t.dtype(), t.device()));
          },
          nb::arg("index").none(), nb::arg("value"))
      .def(
          "fill_diagonal_",
          [](nb::object self, ug::Scalar value, bool wrap) {
            nb::cast<Tensor&>(self).fill_diagonal_(value, wrap);
            return self;
          },
          nb::arg("fill_value"), nb::arg("wrap") = false)
      .def("gather", &Tensor::gather, nb::arg("dim"), nb::arg("index"))
      .def(
          "scatter",
          [](const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src,
             std::optional<std::string_view> reduce) {
            return reduce ? ug::scatter(t, dim, index, src, *reduce) : t.scatter(dim, index, src);
          },
          nb::arg("dim"), nb::arg("index"), nb::arg("src"), nb::kw_only(), nb::arg("reduce") = nb::none())
      .def(
          "scatter",
          [](const Tensor& t, int64_t dim, const Tensor& index, ug::Scalar value,
             std::optional<std::string_view> reduce) {
            return reduce ? ug::scatter(t, dim, index, value, *reduce) : ug::scatter(t, dim, index, value);
          },
          nb::arg("dim"), nb::arg("index"), nb::arg("value"), nb::kw_only(), nb::arg("reduce") = nb::none())
      .def("scatter_add", &Tensor::scatter_add, nb::arg("dim"), nb::arg("index"), nb::arg("src"))
      .def("index_select", &Tensor::index_select, nb::arg("dim"), nb::arg("index"))
      .def("masked_fill", &Tensor::masked_fill, nb::arg("mask"), nb::arg("value"))
      .def(
          "masked_fill_", [](Tensor& t, const Tensor& mask, ug::Scalar v) { return t.masked_fill_(mask, v); },
          nb::arg("mask"), nb::arg("value"))
      .def("masked_select", &Tensor::masked_select, nb::arg("mask"))
      .def("flip", [](const Tensor& t, nb::args a) { return t.flip(dims_from_args(a, "flip")); })
      .def("fliplr", &ug::fliplr)
      .def("flipud", &ug::flipud)
      .def(
          "roll",
          [](const Tensor& t, nb::handle shifts, nb::handle dims) {
            return t.roll(dims_from_sequence(shifts, "roll"),
                          dims.is_none() ? ug::Dims{} : dims_from_sequence(dims, "roll"));
          },
          nb::arg("shifts"), nb::arg("dims") = nb::none())
      .def("repeat", [](const Tensor& t, nb::args a) { return t.repeat(dims_from_args(a, "repeat")); })
      .def(
          "tile", [](const Tensor& t, nb::handle d) { return t.tile(dims_from_sequence(d, "tile")); }, nb::arg("dims"))
      .def(
          "nonzero",
          [](const Tensor& t, bool as_tuple) -> nb::object {
            return as_tuple ? nb::object(nb::tuple(nb::cast(ug::where(t)))) : nb::cast(t.nonzero());
          },
          nb::kw_only(), nb::arg("as_tuple") = false)
      .def(
          "count_nonzero",
          [](const Tensor& t, nb::handle dim) {
            return dim.is_none() ? ug::count_nonzero(t)
                                 : ug::count_nonzero(t, dims_from_sequence(dim, "count_nonzero"));
          },
          nb::arg("dim") = nb::none())
      // reductions
      .def(
          "sum",
          [](const Tensor& t, nb::handle dim, bool keepdim, std::optional<ug::DType> dtype) {
            auto d = reduced_dims(t, dim, keepdim, "sum");
            return d ? t.sum(*d, keepdim, dtype) : t.sum(dtype);
          },
          nb::arg("dim") = nb::none(), nb::arg("keepdim") = false, nb::arg("dtype") = nb::none())
      .def(
          "mean",
          [](const Tensor& t, nb::handle dim, bool keepdim, std::optional<ug::DType> dtype) {
            auto d = reduced_dims(t, dim, keepdim, "mean");
            return d ? t.mean(*d, keepdim, dtype) : t.mean(dtype);
          },
          nb::arg("dim") = nb::none(), nb::arg("keepdim") = false, nb::arg("dtype") = nb::none())
      .def(
          "prod",
          [](const Tensor& t, std::optional<int64_t> dim, bool keepdim, std::optional<ug::DType> dtype) {
            return dim ? t.prod(*dim, keepdim, dtype) : t.prod(dtype);
          },
          nb::arg("dim") = nb::none(), nb::arg("keepdim") = false, nb::arg("dtype") = nb::none())
      .def(
          "max",
          [](const Tensor& t, nb::handle dim, bool keepdim) -> nb::object {
            if (dim.is_none()) return nb::cast(t.max());
            if (nb::isinstance<Tensor>(dim)) return nb::cast(ug::maximum(t, nb::cast<Tensor>(dim)));
            return values_indices(t.max(nb::cast<int64_t>(dim), keepdim));
          },
          nb::arg("dim") = nb::none(), nb::arg("keepdim") = false)
      .def(
          "min",
          [](const Tensor& t, nb::handle dim, bool keepdim) -> nb::object {
            if (dim.is_none()) return nb::cast(t.min());
            if (nb::isinstance<Tensor>(dim)) return nb::cast(ug::minimum(t, nb::cast<Tensor>(dim)));
            return values_indices(t.min(nb::cast<int64_t>(dim), keepdim));
          },
          nb::arg("dim") = nb::none(), nb::arg("keepdim") = false)
      .def(
          "amax",
          [](const Tensor& t, nb::handle dim, bool keepdim) {
            return t.amax(opt_dims(dim, "amax").value_or(ug::Dims{}), keepdim);
          },
          nb::arg("dim") = nb::none(), nb::arg("keepdim") = false)
      .def(
          "amin",
          [](const Tensor& t, nb::handle dim, bool keepdim) {
            return t.amin(opt_dims(dim, "amin").value_or(ug::Dims{}), keepdim);
          },
          nb::arg("dim") = nb::none(), nb::arg("keepdim") = false)
      .def("argmax", &Tensor::argmax, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false)
      .def("argmin", &Tensor::argmin, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false)
      .def(
          "var",
          [](const Tensor& t, nb::handle dim, std::optional<bool> unbiased, std::optional<double> correction,
             bool keepdim) {
            double c = correction ? *correction : (unbiased.value_or(true) ? 1.0 : 0.0);
            return t.var(opt_dims(dim, "var"), c, keepdim);
          },
          nb::arg("dim") = nb::none(), nb::arg("unbiased") = nb::none(), nb::kw_only(),
          nb::arg("correction") = nb::none(), nb::arg("keepdim") = false)
      .def(
          "std",
          [](const Tensor& t, nb::handle dim, std::optional<bool> unbiased, std::optional<double> correction,
             bool keepdim) {
            double c = correction ? *correction : (unbiased.value_or(true) ? 1.0 : 0.0);
            return t.std(opt_dims(dim, "std"), c, keepdim);
          },
          nb::arg("dim") = nb::none(), nb::arg("unbiased") = nb::none(), nb::kw_only(),
          nb::arg("correction") = nb::none(), nb::arg("keepdim") = false)
      .def(
          "norm",
          [](const Tensor& t, nb::handle p, nb::handle dim, bool keepdim) {
            ug::Scalar ps = 2;
            if (nb::isinstance<nb::str>(p)) {
              const std::string ord = nb::cast<std::string>(p);
              if (ord == "nuc") {  // as torch.norm: a matrix norm over the dims given, else all
                ug::Dims all;
                for (int64_t d = 0; d < t.dim(); ++d) all.push_back(d);
                return ug::linalg::matrix_norm(t, "nuc", opt_dims(dim, "norm").value_or(all), keepdim);
              }
              if (ord != "fro") ug::fail("[norm] unsupported norm type ", ord);
            } else if (!p.is_none() && !scalar_from_python(p, ps)) {
              ug::fail<ug::TypeError>("[norm] p must be a number");
            }
            return t.norm(ps, opt_dims(dim, "norm"), keepdim);
          },
          nb::arg("p") = 2, nb::arg("dim") = nb::none(), nb::arg("keepdim") = false)
      .def(
          "logsumexp",
          [](const Tensor& t, nb::handle dim, bool keepdim) {
            return t.logsumexp(dims_from_sequence(dim, "logsumexp"), keepdim);
          },
          nb::arg("dim"), nb::arg("keepdim") = false)
      .def("softmax", &Tensor::softmax, nb::arg("dim"))
      .def("log_softmax", &Tensor::log_softmax, nb::arg("dim"))
      .def(
          "cumsum",
          [](const Tensor& t, int64_t dim, std::optional<ug::DType> dtype) { return ug::cumsum(t, dim, dtype); },
          nb::arg("dim"), nb::kw_only(), nb::arg("dtype") = nb::none())
      .def(
          "cumprod",
          [](const Tensor& t, int64_t dim, std::optional<ug::DType> dtype) { return ug::cumprod(t, dim, dtype); },
          nb::arg("dim"), nb::kw_only(), nb::arg("dtype") = nb::none())
      .def(
          "all",
          [](const Tensor& t, nb::handle dim, bool keepdim) {
            auto d = reduced_dims(t, dim, keepdim, "all");
            return d ? ug::all(t, *d, keepdim) : t.all();
          },
          nb::arg("dim") = nb::none(), nb::arg("keepdim") = false)
      .def(
          "any",
          [](const Tensor& t, nb::handle dim, bool keepdim) {
            auto d = reduced_dims(t, dim, keepdim, "any");
            return d ? ug::any(t, *d, keepdim) : t.any();
          },
          nb::arg("dim") = nb::none(), nb::arg("keepdim") = false)
      .def(
          "sort",
          [](const Tensor& t, int64_t dim, bool descending, bool stable) {
            return values_indices(t.sort(dim, descending, stable));
          },
          nb::arg("dim") = -1, nb::arg("descending") = false, nb::kw_only(), nb::arg("stable") = false)
      .def("argsort", &Tensor::argsort, nb::arg("dim") = -1, nb::arg("descending") = false, nb::kw_only(),
           nb::arg("stable") = false)
      .def(
          "topk",
          [](const Tensor& t, int64_t k, int64_t dim, bool largest, bool sorted) {
            return values_indices(t.topk(k, dim, largest, sorted));
          },
          nb::arg("k"), nb::arg("dim") = -1, nb::arg("largest") = true, nb::arg("sorted") = true)
      // linear algebra
      .def("matmul", &Tensor::matmul)
      .def("mm", &Tensor::mm)
      .def("bmm", &Tensor::bmm)
      .def("dot", &Tensor::dot)
      .def("outer", &Tensor::outer);
  bind_elementwise_methods(cls);
  m.def("bitcast_convert_type", &ug::bitcast_convert_type, nb::arg("operand"), nb::arg("new_dtype"),
        "jax.lax.bitcast_convert_type (tf.bitcast): operand's bytes as a new tensor of new_dtype; a smaller "
        "dtype adds a last dim, a larger one takes its last dim (of the size ratio) away.");
}

}  // namespace ugpy
