// ug.data.DataLoader (torch.utils.data.DataLoader) and ug.data.BatchSource. The loader runs
// on ug::data::BatchLoader: sampling, worker threads, ordering and seeding are C++; this file
// only adapts Python data sets, collate_fns, worker_init_fns and iterable data sets. Its batches
// are either tensors (the C++ collation) or Python values (PyBatch): a collate_fn's result, or
// Python samples collated as torch's default_collate does (they may nest or hold strings).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "data_samplers_python.h"
#include "data_sets_python.h"
#include "ug/data/data_loader.h"
#include "ug/data/seeding.h"
#include "ug/data/worker_info.h"

namespace ugpy {

using namespace nb::literals;

namespace {

using ug::data::BatchLoader;
using ug::data::BatchSource;
using ug::data::Example;
using Pass = ug::data::Prefetcher<PyBatch>;

struct LoaderArgs {
  int64_t batch_size = 1;
  bool auto_batch = true;  // false: torch's batch_size=None, each sample alone through collate_fn
  bool drop_last = false;
  ug::data::LoaderOptions options;
};

// The data set of the loader whose worker this thread is (borrowed: the loader outlives its
// passes' threads), for get_worker_info().dataset.
thread_local PyObject* worker_dataset = nullptr;

/** torch.utils.data.get_worker_info()'s answer. */
struct PyWorkerInfo {
  int id, num_workers;
  uint64_t seed;
  nb::object dataset;
};

/** What a worker thread runs first: it records its data set for get_worker_info(), then calls
 *  the user's worker_init_fn, if any, with its id. */
std::function<void(int)> python_worker_init(nb::handle dataset, nb::handle worker_init_fn) {
  if (!worker_init_fn.is_none() && !PyCallable_Check(worker_init_fn.ptr()))
    ug::fail<ug::TypeError>("[DataLoader] worker_init_fn must be callable, got ",
                            nb::cast<std::string>(worker_init_fn.type().attr("__name__")));
  return [dataset = dataset.ptr(), fn = PyRef(nb::borrow(worker_init_fn))](int id) {
    nb::gil_scoped_acquire gil;
    worker_dataset = dataset;
    if (!fn.get().is_none()) fn.get()(id);
  };
}

/** A sample of a loader without automatic batching (batch_size=None): collate_fn(sample), by
 *  default torch's default_convert. */
nb::object convert_sample(nb::handle collate_fn, nb::handle sample) {
  return collate_fn.is_none() ? default_convert(sample) : collate_fn(sample);
}

/** One pass of a DataLoader, as a Python iterator. Dropping it stops its workers. */
class LoaderIterator {
 public:
  LoaderIterator(std::unique_ptr<Pass> pass, nb::object loader) : pass_(std::move(pass)), loader_(std::move(loader)) {}
  ~LoaderIterator() {
    without_gil([&] { pass_.reset(); });
  }
  nb::object next() {
    std::optional<PyBatch> batch = without_gil([&] { return pass_->next(); });
    if (!batch) throw nb::stop_iteration();
    if (auto* e = std::get_if<Example>(&*batch)) return example_to_python(*e, false);
    return std::get<PyRef>(*batch).get();
  }

 private:
  std::unique_ptr<Pass> pass_;
  PyRef loader_;
  WorkerRegistration registration_{[p = pass_.get()] { p->stop(); }};
};

class PyDataLoader : public BatchSource {
 public:
  PyDataLoader(nb::handle dataset, LoaderArgs args, nb::handle sampler, nb::handle batch_sampler, nb::handle collate_fn,
               bool shuffle)
      : dataset_obj_(nb::borrow(dataset)), collate_(nb::borrow(collate_fn)), args_(args) {
    const bool map_style = nb::isinstance<ug::data::Dataset>(dataset) ||
                           (nb::hasattr(dataset, "__len__") && nb::hasattr(dataset, "__getitem__"));
    if (!map_style) {
      if (!nb::hasattr(dataset, "__iter__"))
        ug::fail<ug::TypeError>(
            "[DataLoader] expected a data set (__len__ and __getitem__) or an iterable one "
            "(__iter__), got ",
            nb::cast<std::string>(dataset.type().attr("__name__")));
      if (shuffle)
        ug::fail(
            "[DataLoader] DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle=True");
      if (!sampler.is_none())
        ug::fail("[DataLoader] DataLoader with IterableDataset: expected unspecified sampler option");
      if (!batch_sampler.is_none())
        ug::fail("[DataLoader] DataLoader with IterableDataset: expected unspecified batch_sampler option");
      ug::data::check_batch_size(args.batch_size);
      ug::data::queue_capacity(args.options);
      return;
    }
    dataset_ = dataset_from_python(dataset, "DataLoader");
    ug::data::DataLoaderOptions o;
    o.batch_size = args.auto_batch ? args.batch_size : 1;
    o.shuffle = shuffle;
    o.drop_last = args.drop_last;
    o.seed = args.options.seed;
    if (!sampler.is_none()) o.sampler = sampler_from_python(sampler);
    if (!batch_sampler.is_none()) o.batch_sampler = batch_sampler_from_python(batch_sampler);
    core_.emplace(ug::data::make_batch_sampler(dataset_->size(), o), load_function(), args.options);
  }
  ~PyDataLoader() override {
    without_gil([&] { pass_.reset(); });
  }

  /** A new pass for Python iteration (the loader's epoch moves on). */
  std::unique_ptr<Pass> begin_pass() {
    if (core_) return core_->begin_pass();
    return iterable_pass();
  }
  void set_epoch(int64_t epoch) {
    if (core_) core_->set_epoch(epoch);
    epoch_ = epoch;
  }
  void start_epoch(int64_t epoch) override {
    without_gil([&] { pass_.reset(); });
    set_epoch(epoch);
    pass_ = begin_pass();
  }
  /** A batch as tensors, for the training loop; a Python batch (a collate_fn's result, or
   *  Python samples collated) must be a tensor, or a tuple, list or dict of tensors. */
  std::optional<Example> next() override {
    if (!pass_) {
      nb::gil_scoped_acquire gil;
      pass_ = begin_pass();
    }
    std::optional<PyBatch> batch = without_gil([&] { return pass_->next(); });
    if (!batch) return std::nullopt;
    if (auto* e = std::get_if<Example>(&*batch)) return std::move(*e);
    nb::gil_scoped_acquire gil;
    return example_from_python(std::get<PyRef>(*batch).get(), "DataLoader: batch");
  }
  int64_t num_batches() const override {
    if (core_) return core_->num_batches();
    nb::gil_scoped_acquire gil;
    if (!nb::hasattr(dataset_obj_.get(), "__len__")) return -1;
    const int64_t n = static_cast<int64_t>(nb::len(dataset_obj_.get()));
    return args_.drop_last ? n / args_.batch_size : (n + args_.batch_size - 1) / args_.batch_size;
  }

  nb::object dataset() const { return dataset_obj_.get(); }
  std::optional<int64_t> batch_size() const {
    if (!args_.auto_batch || (core_ && !core_->batch_sampler()->sampler()))
      return std::nullopt;  // batch_size=None or a custom batch_sampler
    return args_.batch_size;
  }
  const LoaderArgs& args() const { return args_; }
  std::shared_ptr<ug::data::BatchSampler> batch_sampler() const { return core_ ? core_->batch_sampler() : nullptr; }

 private:
  BatchLoader<PyBatch>::Load load_function() const {
    if (!args_.auto_batch)
      return [d = dataset_obj_, collate = collate_](std::span<const int64_t> indices) {
        nb::gil_scoped_acquire gil;
        return PyBatch(PyRef(convert_sample(collate.get(), d.get()[nb::int_(indices[0])])));
      };
    if (collate_.get().is_none() && has_python_samples(*dataset_))
      return [d = dataset_](std::span<const int64_t> indices) {
        nb::gil_scoped_acquire gil;
        nb::list samples;
        for (int64_t i : indices) samples.append(python_sample(*d, i));
        return PyBatch(PyRef(collate_samples(samples, "DataLoader")));
      };
    if (collate_.get().is_none())
      return [d = dataset_](std::span<const int64_t> indices) { return PyBatch(d->get_batch(indices)); };
    return [d = dataset_obj_, collate = collate_](std::span<const int64_t> indices) {
      nb::gil_scoped_acquire gil;
      nb::list samples;
      for (int64_t i : indices) samples.append(d.get()[nb::int_(i)]);
      return PyBatch(PyRef(collate.get()(samples)));
    };
  }

  /** A pass over an iterable data set: one shared Python iterator, so at most one worker
   *  pulls from it (more could not keep the order); batches still load ahead of the consumer. */
  std::unique_ptr<Pass> iterable_pass() {
    const int64_t epoch = epoch_++;
    const uint64_t seed = ug::data::pass_seed(args_.options.seed, epoch);
    auto it = std::make_shared<PyRef>(nb::iter(dataset_obj_.get()));
    auto produce = [it, seed, collate = collate_, a = args_](int64_t i) -> std::optional<PyBatch> {
      ug::Generator g(ug::data::batch_seed(seed, i));
      ug::GeneratorScope scope(g);
      nb::gil_scoped_acquire gil;
      if (!a.auto_batch) {
        PyObject* item = PyIter_Next(it->get().ptr());
        if (!item) {
          if (PyErr_Occurred()) throw nb::python_error();
          return std::nullopt;
        }
        return PyBatch(PyRef(convert_sample(collate.get(), nb::steal(item))));
      }
      nb::list samples;
      while (static_cast<int64_t>(samples.size()) < a.batch_size) {
        PyObject* item = PyIter_Next(it->get().ptr());
        if (!item) {
          if (PyErr_Occurred()) throw nb::python_error();
          break;
        }
        samples.append(nb::steal(item));
      }
      if (samples.size() == 0 || (a.drop_last && static_cast<int64_t>(samples.size()) < a.batch_size))
        return std::nullopt;
      if (!collate.get().is_none()) return PyBatch(PyRef(collate.get()(samples)));
      return PyBatch(PyRef(collate_samples(samples, "DataLoader")));
    };
    // One thread pulls from the iterator, and its worker_info says so: a data set that shards
    // its stream by get_worker_info() (as torch's multi-process workers need) reads it whole.
    const ug::data::LoaderOptions& o = args_.options;
    const int workers = std::min(o.num_workers, 1);
    return std::make_unique<Pass>(std::move(produce), workers, ug::data::queue_capacity(o),
                                  ug::data::worker_start(o, seed, workers), o.timeout);
  }

  PyRef dataset_obj_;
  PyRef collate_;
  LoaderArgs args_;
  std::shared_ptr<ug::data::Dataset> dataset_;  // map-style data sets
  std::optional<BatchLoader<PyBatch>> core_;    // map-style data sets
  int64_t epoch_ = 0;                           // iterable data sets
  std::unique_ptr<Pass> pass_;                  // the pass of start_epoch / next
  WorkerRegistration registration_{[this] {
    if (pass_) pass_->stop();
  }};
};

}  // namespace

void bind_data_loader(nb::module_& data) {
  nb::class_<BatchSource>(data, "BatchSource",
                          "Batches one pass at a time: what the training loop consumes (DataLoader, Pipeline).")
      .def("start_epoch", &BatchSource::start_epoch, "epoch"_a)
      .def(
          "next",
          [](BatchSource& s) -> nb::object {
            std::optional<Example> batch = without_gil([&] { return s.next(); });
            return batch ? example_to_python(*batch, false) : nb::none();
          },
          "The next batch of the current pass (a list of tensors, or a dict when they are named), or None at its end.")
      .def("num_batches", &BatchSource::num_batches);

  nb::class_<LoaderIterator>(data, "_LoaderIterator")
      .def("__iter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__next__", &LoaderIterator::next);

  nb::class_<PyDataLoader, BatchSource>(
      data, "DataLoader",
      "Batches of a data set, loaded ahead by num_workers threads (not processes: no pickling, and C++ data sets "
      "load without the GIL). Each batch loads under a generator seeded from (seed, epoch, batch index), so random "
      "transforms give the same batches with any num_workers. pin_memory and persistent_workers are accepted and "
      "do nothing (CPU tensors; threads start cheaply), nor do multiprocessing_context, pin_memory_device and "
      "in_order (batches always come in order). worker_init_fn(id) runs first on each worker thread; timeout "
      "(seconds) bounds the wait for a batch from the workers. batch_size=None turns automatic batching off, as "
      "torch's: each sample comes alone, through collate_fn (default_convert by default).")
      .def(
          "__init__",
          [](PyDataLoader* self, nb::handle dataset, std::optional<int64_t> batch_size, std::optional<bool> shuffle,
             nb::handle sampler, nb::handle batch_sampler, int num_workers, nb::handle collate_fn, bool /*pin_memory*/,
             bool drop_last, double timeout, nb::handle worker_init_fn, nb::handle /*multiprocessing_context*/,
             nb::handle generator, std::optional<int> prefetch_factor, bool /*persistent_workers*/,
             const std::string& /*pin_memory_device*/, bool /*in_order*/, nb::handle seed) {
            if (!batch_size && !batch_sampler.is_none())
              ug::fail("[DataLoader] batch_sampler option is mutually exclusive with batch_size=None");
            if (!batch_size && drop_last)
              ug::fail(
                  "[DataLoader] batch_size=None option disables auto-batching and is mutually exclusive with "
                  "drop_last");
            LoaderArgs a;
            a.batch_size = batch_size.value_or(1);
            a.auto_batch = batch_size.has_value();
            a.drop_last = drop_last;
            a.options = {.num_workers = num_workers,
                         .prefetch_factor = prefetch_factor.value_or(2),
                         .seed = seed_from_python(seed, generator),
                         .worker_init_fn = python_worker_init(dataset, worker_init_fn),
                         .timeout = timeout};
            new (self) PyDataLoader(dataset, a, sampler, batch_sampler, collate_fn, shuffle.value_or(false));
          },
          // torch's signature, in its order, then unigrad's seed.
          "dataset"_a, "batch_size"_a.none() = 1, "shuffle"_a.none() = nb::none(), "sampler"_a.none() = nb::none(),
          "batch_sampler"_a.none() = nb::none(), "num_workers"_a = 0, "collate_fn"_a.none() = nb::none(),
          "pin_memory"_a = false, "drop_last"_a = false, "timeout"_a = 0.0, "worker_init_fn"_a.none() = nb::none(),
          "multiprocessing_context"_a.none() = nb::none(), "generator"_a.none() = nb::none(), nb::kw_only(),
          "prefetch_factor"_a.none() = nb::none(), "persistent_workers"_a = false, "pin_memory_device"_a = "",
          "in_order"_a = true, "seed"_a.none() = nb::none())
      .def("__iter__",
           [](nb::handle self) {
             PyDataLoader& l = nb::cast<PyDataLoader&>(self);
             return std::make_unique<LoaderIterator>(l.begin_pass(), nb::borrow(self));
           })
      .def("__len__",
           [](const PyDataLoader& l) {
             const int64_t n = l.num_batches();
             if (n < 0) throw nb::type_error("[DataLoader] the iterable data set has no len()");
             return n;
           })
      .def("set_epoch", &PyDataLoader::set_epoch, "epoch"_a,
           "The epoch of the next pass (passed on to the sampler): resumes the shuffle of epoch k.")
      .def_prop_ro("dataset", &PyDataLoader::dataset)
      .def_prop_ro("batch_size", &PyDataLoader::batch_size)
      .def_prop_ro("drop_last", [](const PyDataLoader& l) { return l.args().drop_last; })
      .def_prop_ro("num_workers", [](const PyDataLoader& l) { return l.args().options.num_workers; })
      .def_prop_ro("prefetch_factor", [](const PyDataLoader& l) { return l.args().options.prefetch_factor; })
      .def_prop_ro("timeout", [](const PyDataLoader& l) { return l.args().options.timeout; })
      .def_prop_ro("batch_sampler", &PyDataLoader::batch_sampler)
      .def_prop_ro("sampler", [](const PyDataLoader& l) {
        auto b = l.batch_sampler();
        return b ? b->sampler() : nullptr;
      });

  nb::class_<PyWorkerInfo>(data, "WorkerInfo", "Which DataLoader worker thread this is (get_worker_info()).")
      .def_ro("id", &PyWorkerInfo::id)
      .def_ro("num_workers", &PyWorkerInfo::num_workers)
      .def_ro("seed", &PyWorkerInfo::seed)
      .def_ro("dataset", &PyWorkerInfo::dataset)
      .def("__repr__", [](const PyWorkerInfo& w) {
        return "WorkerInfo(id=" + std::to_string(w.id) + ", num_workers=" + std::to_string(w.num_workers) +
               ", seed=" + std::to_string(w.seed) + ", dataset=" + nb::cast<std::string>(nb::repr(w.dataset)) + ")";
      });
  data.def(
      "get_worker_info",
      []() -> std::optional<PyWorkerInfo> {
        const ug::data::WorkerInfo* w = ug::data::worker_info();
        if (!w) return std::nullopt;
        return PyWorkerInfo{w->id, w->num_workers, w->seed, nb::borrow(worker_dataset ? worker_dataset : Py_None)};
      },
      "On a DataLoader worker thread, which one it is: id, num_workers, seed and dataset; None elsewhere "
      "(torch.utils.data.get_worker_info).");

  data.def("default_convert", &default_convert, "data"_a,
           "NumPy arrays (in dicts, lists, tuples) as tensors, the rest as it is "
           "(torch.utils.data.default_convert; what a DataLoader with batch_size=None gives each sample).");
  data.def(
      "default_collate", [](nb::handle batch) { return collate_samples(batch, "default_collate"); }, "batch"_a,
      "Samples stacked field by field, as torch.utils.data.default_collate: tensors, numbers and NumPy arrays into "
      "tensors, strings into a list, dicts key by key, tuples and lists into a list (namedtuples keep their type), "
      "at any depth.");

  nb::module_::import_("atexit").attr("register")(nb::cpp_function([] { WorkerRegistration::stop_all(); }));
}

}  // namespace ugpy
