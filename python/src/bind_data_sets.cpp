// ug.data's data sets: Dataset (subclassable: __len__ and __getitem__), TensorDataset,
// Subset, ConcatDataset, StackDataset and random_split.
#include <algorithm>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/vector.h>
#include <nanobind/trampoline.h>

#include "bindings.h"
#include "data_sets_python.h"
#include "ug/data/datasets.h"

namespace ugpy {

using namespace nb::literals;

namespace {

using ug::data::Dataset;
using ug::data::Example;

/** A Python subclass of ug.data.Dataset. */
struct PyDataset : Dataset, PythonSamples {
  NB_TRAMPOLINE(Dataset, 2);
  int64_t size() const override { NB_OVERRIDE_PURE_NAME("__len__", size); }
  Example get(int64_t index) const override { return fields(index); }
  nb::object sample(int64_t index) const override {
    nb::detail::ticket ticket(nb_trampoline, "__getitem__", true);
    return nb_trampoline.base().attr(ticket.key)(index);
  }
};

/** Any Python object with __len__ and __getitem__ (a list, a subclass that skipped
 *  super().__init__()). */
class DuckDataset : public Dataset, public PythonSamples {
 public:
  explicit DuckDataset(nb::object obj) : obj_(std::move(obj)) {}
  int64_t size() const override {
    nb::gil_scoped_acquire gil;
    return static_cast<int64_t>(nb::len(obj_.get()));
  }
  Example get(int64_t index) const override { return fields(index); }
  nb::object sample(int64_t index) const override { return obj_.get()[nb::int_(index)]; }

 private:
  PyRef obj_;
};

/** Python's index rules: negative counts from the end. */
int64_t normalize_index(int64_t index, int64_t size, const char* op) {
  if (index < 0 && index >= -size) index += size;
  ug::data::check_index(op, index, size);
  return index;
}

std::vector<double> lengths_from_python(nb::handle lengths) {
  std::vector<double> out;
  for (nb::handle l : lengths) {
    if (!PyLong_Check(l.ptr()) && !PyFloat_Check(l.ptr()))
      ug::fail<ug::TypeError>("[random_split] lengths must be ints or floats, got ",
                              nb::cast<std::string>(l.type().attr("__name__")));
    out.push_back(nb::cast<double>(l));
  }
  return out;
}

}  // namespace

std::shared_ptr<Dataset> dataset_from_python(nb::handle obj, const char* op) {
  if (nb::isinstance<Dataset>(obj) && nb::inst_ready(obj)) return nb::cast<std::shared_ptr<Dataset>>(obj);
  if (nb::hasattr(obj, "__len__") && nb::hasattr(obj, "__getitem__"))
    return std::make_shared<DuckDataset>(nb::borrow(obj));
  ug::fail<ug::TypeError>("[", op, "] expected a data set (with __len__ and __getitem__), got ",
                          nb::cast<std::string>(obj.type().attr("__name__")));
}

nb::object python_sample(const Dataset& d, int64_t index) {
  if (const auto* p = dynamic_cast<const PythonSamples*>(&d)) return p->sample(index);
  if (const auto* subset = dynamic_cast<const ug::data::Subset*>(&d)) {
    ug::data::check_index("Subset", index, subset->size());
    return python_sample(*subset->dataset(), subset->indices()[static_cast<size_t>(index)]);
  }
  if (const auto* concat = dynamic_cast<const ug::data::ConcatDataset*>(&d)) {
    const auto [part, local] = concat->locate(index);
    return python_sample(*concat->datasets()[part], local);
  }
  const auto* stack = dynamic_cast<const ug::data::StackDataset*>(&d);
  if (!stack) return example_to_element(d.get(index));
  ug::data::check_index("StackDataset", index, stack->size());
  const auto& datasets = stack->datasets();
  if (stack->keys().empty()) {
    nb::list samples;
    for (const auto& part : datasets) samples.append(python_sample(*part, index));
    return nb::tuple(samples);
  }
  nb::dict samples;
  for (size_t k = 0; k < datasets.size(); ++k) samples[stack->keys()[k].c_str()] = python_sample(*datasets[k], index);
  return samples;
}

bool has_python_samples(const Dataset& d) {
  if (const auto* subset = dynamic_cast<const ug::data::Subset*>(&d)) return has_python_samples(*subset->dataset());
  if (const auto* concat = dynamic_cast<const ug::data::ConcatDataset*>(&d))
    return std::ranges::any_of(concat->datasets(), [](const auto& part) { return has_python_samples(*part); });
  return dynamic_cast<const PythonSamples*>(&d) || dynamic_cast<const ug::data::StackDataset*>(&d);
}

void bind_data_sets(nb::module_& data) {
  nb::class_<Dataset, PyDataset>(data, "Dataset", nb::dynamic_attr(),
                                 "A map-style data set: subclass it with __len__ and __getitem__ (which may return "
                                 "a tuple of tensors, numbers or NumPy arrays).")
      .def(nb::init<>())
      .def("__len__", &Dataset::size)
      .def(
          "__getitem__",
          [](const Dataset& d, int64_t index) { return python_sample(d, normalize_index(index, d.size(), "Dataset")); },
          "index"_a, "Sample `index` as a tuple of tensors (a dict when its fields are named).")
      .def("__add__", [](nb::handle self, nb::handle other) {
        return std::make_shared<ug::data::ConcatDataset>(std::vector<std::shared_ptr<Dataset>>{
            dataset_from_python(self, "ConcatDataset"), dataset_from_python(other, "ConcatDataset")});
      });

  nb::class_<ug::data::TensorDataset, Dataset>(
      data, "TensorDataset", "Sample i is (t[i] for t in tensors); batches are one index_select per tensor.")
      .def("__init__",
           [](ug::data::TensorDataset* self, nb::args tensors) {
             std::vector<ug::Tensor> ts;
             for (nb::handle t : tensors) {
               if (!nb::isinstance<ug::Tensor>(t))
                 ug::fail<ug::TypeError>("[TensorDataset] expected tensors, got ",
                                         nb::cast<std::string>(t.type().attr("__name__")));
               ts.push_back(nb::cast<ug::Tensor>(t));
             }
             new (self) ug::data::TensorDataset(std::move(ts));
           })
      .def_prop_ro("tensors", [](const ug::data::TensorDataset& d) { return nb::tuple(nb::cast(d.tensors())); });

  nb::class_<ug::data::Subset, Dataset>(data, "Subset", "The samples of `dataset` at `indices`.")
      .def(
          "__init__",
          [](ug::data::Subset* self, nb::handle dataset, std::vector<int64_t> indices) {
            new (self) ug::data::Subset(dataset_from_python(dataset, "Subset"), std::move(indices));
          },
          "dataset"_a, "indices"_a)
      .def_prop_ro("dataset", [](const ug::data::Subset& s) { return s.dataset(); })
      .def_prop_ro("indices", [](const ug::data::Subset& s) { return s.indices(); });

  nb::class_<ug::data::ConcatDataset, Dataset>(data, "ConcatDataset", "The data sets one after the other.")
      .def(
          "__init__",
          [](ug::data::ConcatDataset* self, nb::iterable datasets) {
            std::vector<std::shared_ptr<Dataset>> ds;
            for (nb::handle d : datasets) ds.push_back(dataset_from_python(d, "ConcatDataset"));
            new (self) ug::data::ConcatDataset(std::move(ds));
          },
          "datasets"_a)
      .def_prop_ro("datasets", [](const ug::data::ConcatDataset& c) { return c.datasets(); })
      .def_prop_ro("cumulative_sizes", [](const ug::data::ConcatDataset& c) { return c.cumulative_sizes(); });

  nb::class_<ug::data::StackDataset, Dataset>(
      data, "StackDataset",
      "Sample i is (d[i] for d in args), or {k: d[i] for k, d in kwargs.items()}: data sets of one size side by side.")
      .def("__init__",
           [](ug::data::StackDataset* self, nb::args args, nb::kwargs kwargs) {
             if (args.size() && kwargs.size())
               ug::fail(
                   "[StackDataset] give the data sets either as arguments (tuple samples) or as keyword arguments "
                   "(dict samples), not both");
             std::vector<std::shared_ptr<Dataset>> datasets;
             std::vector<std::string> keys;
             for (nb::handle d : args) datasets.push_back(dataset_from_python(d, "StackDataset"));
             for (auto [key, d] : kwargs) {
               keys.push_back(nb::cast<std::string>(key));
               datasets.push_back(dataset_from_python(d, "StackDataset"));
             }
             new (self) ug::data::StackDataset(std::move(datasets), std::move(keys));
           })
      .def_prop_ro(
          "datasets",
          [](const ug::data::StackDataset& s) -> nb::object {
            if (s.keys().empty()) return nb::tuple(nb::cast(s.datasets()));
            nb::dict out;
            for (size_t k = 0; k < s.keys().size(); ++k) out[s.keys()[k].c_str()] = nb::cast(s.datasets()[k]);
            return out;
          },
          "The data sets: a tuple, or a dict by key.");

  data.def(
      "random_split",
      [](nb::handle dataset, nb::handle lengths, nb::handle generator, nb::handle seed) {
        return ug::data::random_split(dataset_from_python(dataset, "random_split"), lengths_from_python(lengths),
                                      seed_from_python(seed, generator));
      },
      "dataset"_a, "lengths"_a, "generator"_a.none() = nb::none(), nb::kw_only(), "seed"_a.none() = nb::none(),
      "Splits the data set at random into Subsets of the given lengths or fractions (summing to 1).");
}

}  // namespace ugpy
