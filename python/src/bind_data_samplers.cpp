// ug.data's samplers: Sampler (subclassable: __iter__ and __len__), SequentialSampler,
// RandomSampler, SubsetRandomSampler, WeightedRandomSampler, DistributedSampler and BatchSampler.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nanobind/trampoline.h>

#include "bindings.h"
#include "data_samplers_python.h"
#include "ug/distributed/distributed.h"

namespace ugpy {

using namespace nb::literals;

namespace {

using ug::data::BatchSampler;
using ug::data::Sampler;

std::vector<int64_t> indices_from_iterable(nb::handle iterable) {
  std::vector<int64_t> out;
  for (nb::handle i : nb::iter(iterable)) out.push_back(nb::cast<int64_t>(i));
  return out;
}

/** A Python subclass of ug.data.Sampler. */
struct PySampler : Sampler {
  NB_TRAMPOLINE(Sampler, 3);
  int64_t size() const override { NB_OVERRIDE_PURE_NAME("__len__", size); }
  std::vector<int64_t> indices() override {
    nb::detail::ticket ticket(nb_trampoline, "__iter__", true);  // holds the GIL
    return indices_from_iterable(nb_trampoline.base().attr(ticket.key)());
  }
  void set_epoch(int64_t epoch) override { NB_OVERRIDE(set_epoch, epoch); }
};

/** Any iterable of indices with __len__ (a list, a range). */
class IterableSampler : public Sampler {
 public:
  explicit IterableSampler(nb::object obj) : obj_(std::move(obj)) {}
  int64_t size() const override {
    nb::gil_scoped_acquire gil;
    return static_cast<int64_t>(nb::len(obj_.get()));
  }
  std::vector<int64_t> indices() override {
    nb::gil_scoped_acquire gil;
    return indices_from_iterable(obj_.get());
  }
  void set_epoch(int64_t epoch) override {
    nb::gil_scoped_acquire gil;
    if (nb::hasattr(obj_.get(), "set_epoch")) obj_.get().attr("set_epoch")(epoch);
  }

 private:
  PyRef obj_;
};

/** Any iterable of batches of indices with __len__. */
class IterableBatchSampler : public BatchSampler {
 public:
  explicit IterableBatchSampler(nb::object obj) : obj_(std::move(obj)) {}
  int64_t size() const override {
    nb::gil_scoped_acquire gil;
    return static_cast<int64_t>(nb::len(obj_.get()));
  }
  std::vector<std::vector<int64_t>> batches() override {
    nb::gil_scoped_acquire gil;
    std::vector<std::vector<int64_t>> out;
    for (nb::handle b : nb::iter(obj_.get())) out.push_back(indices_from_iterable(b));
    return out;
  }
  void set_epoch(int64_t epoch) override {
    nb::gil_scoped_acquire gil;
    if (nb::hasattr(obj_.get(), "set_epoch")) obj_.get().attr("set_epoch")(epoch);
  }

 private:
  PyRef obj_;
};

int64_t size_of(nb::handle data_source) {
  if (PyLong_Check(data_source.ptr())) return nb::cast<int64_t>(data_source);
  return static_cast<int64_t>(nb::len(data_source));
}

nb::object iterate(const std::vector<int64_t>& v) { return nb::iter(nb::cast(v)); }

}  // namespace

std::shared_ptr<Sampler> sampler_from_python(nb::handle obj) {
  if (nb::isinstance<Sampler>(obj) && nb::inst_ready(obj)) return nb::cast<std::shared_ptr<Sampler>>(obj);
  return std::make_shared<IterableSampler>(nb::borrow(obj));
}

std::shared_ptr<BatchSampler> batch_sampler_from_python(nb::handle obj) {
  if (nb::isinstance<BatchSampler>(obj)) return nb::cast<std::shared_ptr<BatchSampler>>(obj);
  return std::make_shared<IterableBatchSampler>(nb::borrow(obj));
}

void bind_data_samplers(nb::module_& data) {
  nb::class_<Sampler, PySampler>(data, "Sampler", nb::dynamic_attr(),
                                 "The order of a data set's indices: subclass it with __iter__ and __len__.")
      .def(nb::init<>())
      .def("__len__", &Sampler::size)
      .def(
          "__iter__", [](Sampler& s) { return iterate(s.indices()); }, "The indices of the next pass.")
      .def("set_epoch", &Sampler::set_epoch, "epoch"_a, "The epoch of the next pass (its shuffle depends on it).")
      .def_prop_ro("epoch", &Sampler::epoch);

  nb::class_<ug::data::SequentialSampler, Sampler>(data, "SequentialSampler", "0, 1, ..., len(data_source) - 1.")
      .def(
          "__init__",
          [](ug::data::SequentialSampler* self, nb::handle data_source) {
            new (self) ug::data::SequentialSampler(size_of(data_source));
          },
          "data_source"_a);

  nb::class_<ug::data::RandomSampler, Sampler>(
      data, "RandomSampler",
      "A random permutation per pass (or num_samples draws). Seeded, pass k depends on (seed, k) only.")
      .def(
          "__init__",
          [](ug::data::RandomSampler* self, nb::handle data_source, bool replacement,
             std::optional<int64_t> num_samples, nb::handle generator, nb::handle seed) {
            new (self) ug::data::RandomSampler(size_of(data_source), replacement, num_samples,
                                               seed_from_python(seed, generator));
          },
          "data_source"_a, "replacement"_a = false, "num_samples"_a.none() = nb::none(),
          "generator"_a.none() = nb::none(), nb::kw_only(), "seed"_a.none() = nb::none());

  nb::class_<ug::data::SubsetRandomSampler, Sampler>(
      data, "SubsetRandomSampler",
      "The given indices in a random order per pass. Seeded, pass k depends on (seed, k) only.")
      .def(
          "__init__",
          [](ug::data::SubsetRandomSampler* self, nb::handle indices, nb::handle generator, nb::handle seed) {
            nb::object values = nb::isinstance<ug::Tensor>(indices) ? indices.attr("tolist")() : nb::borrow(indices);
            std::vector<int64_t> subset;
            for (nb::handle i : nb::iter(values)) {
              if (!PyIndex_Check(i.ptr()))
                ug::fail<ug::TypeError>("[SubsetRandomSampler] indices must be integers, got a ",
                                        nb::cast<std::string>(i.type().attr("__name__")));
              subset.push_back(nb::cast<int64_t>(nb::steal(PyNumber_Index(i.ptr()))));
            }
            new (self) ug::data::SubsetRandomSampler(std::move(subset), seed_from_python(seed, generator));
          },
          "indices"_a, "generator"_a.none() = nb::none(), nb::kw_only(), "seed"_a.none() = nb::none())
      .def_prop_ro("indices", &ug::data::SubsetRandomSampler::subset);

  nb::class_<ug::data::WeightedRandomSampler, Sampler>(data, "WeightedRandomSampler",
                                                       "num_samples indices drawn in proportion to `weights`.")
      .def(
          "__init__",
          [](ug::data::WeightedRandomSampler* self, nb::handle weights, int64_t num_samples, bool replacement,
             nb::handle generator, nb::handle seed) {
            std::vector<double> w;
            nb::object values = nb::isinstance<ug::Tensor>(weights) ? weights.attr("tolist")() : nb::borrow(weights);
            for (nb::handle x : nb::iter(values)) w.push_back(nb::cast<double>(x));
            new (self) ug::data::WeightedRandomSampler(std::move(w), num_samples, replacement,
                                                       seed_from_python(seed, generator));
          },
          "weights"_a, "num_samples"_a, "replacement"_a = true, "generator"_a.none() = nb::none(), nb::kw_only(),
          "seed"_a.none() = nb::none());

  nb::class_<ug::data::DistributedSampler, Sampler>(
      data, "DistributedSampler",
      "Rank `rank`'s share of the data set split over num_replicas processes (torch's padding and interleaving). "
      "num_replicas and rank default, as torch's, to the default process group's size and this process's rank "
      "(1 and 0 where no group was joined).")
      .def(
          "__init__",
          [](ug::data::DistributedSampler* self, nb::handle dataset, std::optional<int64_t> num_replicas,
             std::optional<int64_t> rank, bool shuffle, int64_t seed, bool drop_last) {
            const bool joined = ug::distributed::is_initialized();
            const int64_t replicas = num_replicas ? *num_replicas : joined ? ug::distributed::get_world_size() : 1;
            const int64_t me = rank ? *rank : joined ? ug::distributed::get_rank() : 0;
            new (self) ug::data::DistributedSampler(size_of(dataset), replicas, me, shuffle,
                                                    static_cast<uint64_t>(seed), drop_last);
          },
          "dataset"_a, "num_replicas"_a.none() = nb::none(), "rank"_a.none() = nb::none(), "shuffle"_a = true,
          "seed"_a = 0, "drop_last"_a = false)
      .def_prop_ro("num_samples", &ug::data::DistributedSampler::size)
      .def_prop_ro("total_size", &ug::data::DistributedSampler::total_size);

  nb::class_<BatchSampler>(data, "BatchSampler", "A sampler's indices in batches of batch_size.")
      .def(
          "__init__",
          [](BatchSampler* self, nb::handle sampler, int64_t batch_size, bool drop_last) {
            new (self) BatchSampler(sampler_from_python(sampler), batch_size, drop_last);
          },
          "sampler"_a, "batch_size"_a, "drop_last"_a)
      .def("__len__", &BatchSampler::size)
      .def("__iter__", [](BatchSampler& b) { return nb::iter(nb::cast(b.batches())); })
      .def("set_epoch", &BatchSampler::set_epoch, "epoch"_a)
      .def_prop_ro("sampler", &BatchSampler::sampler)
      .def_prop_ro("batch_size", &BatchSampler::batch_size)
      .def_prop_ro("drop_last", &BatchSampler::drop_last);
}

}  // namespace ugpy
