// Keras's model.compile / fit / evaluate / predict on every ug.nn.Module, and ug.callbacks.
// The loops are ug::train::Trainer's; this file adapts Python's side of them: arrays and
// iterables of (x, y) batches as batch sources, Python callables as losses, metrics and
// schedules, Python subclasses of Callback (logs as dicts), and printing to sys.stdout.
// model.compile keeps its Trainer in the model's __dict__ as "_trainer".
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>
#include <nanobind/trampoline.h>

#include <cstdint>
#include <limits>
#include <memory>

#include "bindings.h"
#include "ug/compiler/jit.h"
#include "convert.h"
#include "ug/distributed/process_group.h"
#include "ug/nn/functional_model.h"
#include "ug/ops/random.h"
#include "ug/train/train.h"

namespace ugpy {

using namespace nb::literals;

namespace {

using ug::Tensor;
using ug::nn::Module;
namespace train = ug::train;
using train::Callback;
using train::Logs;
using train::Trainer;

nb::dict logs_to_python(const Logs& logs) {
  nb::dict d;
  for (const auto& [k, v] : logs) d[k.c_str()] = v;
  return d;
}

/** Takes back what a Python hook put in the dict: numbers (others are Python's own business). */
void logs_from_python(nb::handle dict, Logs& logs) {
  for (auto [k, v] : nb::borrow<nb::dict>(dict))
    if (PyFloat_Check(v.ptr()) || (PyLong_Check(v.ptr()) && !PyBool_Check(v.ptr())))
      logs.insert(nb::cast<std::string>(k), nb::cast<double>(v));
}

Logs logs_from_dict(nb::handle logs) {
  Logs out;
  if (!logs.is_none()) logs_from_python(logs, out);
  return out;
}

/** A Python subclass of ug.callbacks.Callback: each hook it defines is called with a logs dict
 *  whose number entries flow back (a callback may add metrics for the ones after it). */
struct PyCallback : Callback {
  NB_TRAMPOLINE(Callback, 7);
  bool chief_only() const override { NB_OVERRIDE(chief_only); }
  void on_train_begin(Logs& logs) override { dispatch("on_train_begin", logs); }
  void on_train_end(Logs& logs) override { dispatch("on_train_end", logs); }
  void on_epoch_begin(int64_t epoch, Logs& logs) override { dispatch("on_epoch_begin", logs, epoch); }
  void on_epoch_end(int64_t epoch, Logs& logs) override { dispatch("on_epoch_end", logs, epoch); }
  void on_train_batch_begin(int64_t batch, Logs& logs) override { dispatch("on_train_batch_begin", logs, batch); }
  void on_train_batch_end(int64_t batch, Logs& logs) override { dispatch("on_train_batch_end", logs, batch); }

 private:
  template <class... Index> void dispatch(const char* name, Logs& logs, Index... index) {
    nb::detail::ticket ticket(nb_trampoline, name, false);
    if (!ticket.key.is_valid()) return;  // not overridden: the base hook does nothing
    nb::dict d = logs_to_python(logs);
    nb_trampoline.base().attr(ticket.key)(index..., d);
    logs_from_python(d, logs);
  }
};

/** sys.stdout at the time of each write, so redirection (pytest, Jupyter) is followed. */
train::Output python_stdout() {
  nb::object out = nb::module_::import_("sys").attr("stdout");
  bool terminal = false;
  if (nb::hasattr(out, "isatty")) {
    try {
      terminal = nb::cast<bool>(out.attr("isatty")());
    } catch (const nb::python_error&) {  // a closed or exotic stream: not a terminal
    }
  }
  return {[](std::string_view s) {
            nb::object stream = nb::module_::import_("sys").attr("stdout");
            stream.attr("write")(nb::str(s.data(), s.size()));
            if (nb::hasattr(stream, "flush")) stream.attr("flush")();
          },
          terminal};
}

int verbose_from_python(nb::handle v, const char* who) {
  if (PyUnicode_Check(v.ptr())) {
    if (nb::cast<std::string>(v) == "auto") return 1;
  } else if (PyLong_Check(v.ptr())) {
    const int64_t n = nb::cast<int64_t>(v);
    if (n >= 0 && n <= 2) return static_cast<int>(n);
  }
  ug::fail<ug::ValueError>("[", who, "] verbose must be \"auto\", 0, 1 or 2, got ", nb::cast<std::string>(nb::repr(v)));
}

bool is_array(nb::handle h) {
  return nb::isinstance<Tensor>(h) || nb::hasattr(h, "__array_interface__") || nb::hasattr(h, "__array__");
}

Tensor as_tensor(nb::handle h) {
  return nb::isinstance<Tensor>(h) ? nb::cast<Tensor>(h) : tensor_from_data(h, std::nullopt, std::nullopt);
}

/** The float dtype of the model's parameters (the default dtype when it has none yet): the
 *  dtype floating inputs are cast to, as Keras casts them to its floatx. */
ug::DType model_float_dtype(nb::handle self) {
  for (const Tensor& p : nb::cast<Module&>(self).parameters())
    if (p.is_floating_point()) return p.dtype();
  return ug::get_default_dtype();
}

/** An input, target or weight array as a tensor, floating ones cast to `float_dtype` (NumPy's
 *  float64 into a float32 model); integer labels stay integers. */
Tensor as_input(nb::handle h, ug::DType float_dtype) {
  Tensor t = as_tensor(h);
  return t.is_floating_point() && t.dtype() != float_dtype ? t.to(float_dtype) : t;
}

/** Any Python iterable of batches, re-iterated each epoch: (x, y) pairs (or x alone, for
 *  predict) of tensors or arrays, or dicts of them read in order. A DataLoader is one; so is
 *  a list of pairs. */
class PyBatches : public ug::data::BatchSource {
 public:
  PyBatches(nb::handle iterable, ug::DType float_dtype, const char* who)
      : iterable_(nb::borrow(iterable)), float_dtype_(float_dtype) {
    if (!nb::hasattr(iterable, "__iter__"))
      ug::fail<ug::TypeError>("[", who, "] x must be an array, a Tensor or an iterable of (x, y) batches, got ",
                              nb::inst_name(iterable).c_str());
  }
  void start_epoch(int64_t epoch) override {
    // A ug.data.DataLoader passes the epoch on to its sampler: a DistributedSampler then
    // reshuffles its shard per epoch, as torch's loops do with sampler.set_epoch(epoch).
    if (nb::hasattr(iterable_, "set_epoch")) iterable_.attr("set_epoch")(epoch);
    it_ = nb::steal(PyObject_GetIter(iterable_.ptr()));
    check(it_);
  }
  std::optional<ug::data::Example> next() override {
    if (!it_.is_valid()) start_epoch(0);
    nb::object item = nb::steal(PyIter_Next(it_.ptr()));
    if (!item.is_valid()) {
      if (PyErr_Occurred()) throw nb::python_error();
      return std::nullopt;
    }
    ug::data::Example batch;
    if (PyDict_Check(item.ptr())) {
      // A dict batch (a pipeline from a dict): its fields in order, as MindSpore feeds a data
      // set's columns ("data", "label") to the network and the loss.
      for (auto [name, field] : nb::borrow<nb::dict>(item)) batch.push_back(as_input(field, float_dtype_));
      return batch;
    }
    if (!PyTuple_Check(item.ptr()) && !PyList_Check(item.ptr())) return ug::data::Example{as_input(item, float_dtype_)};
    for (nb::handle field : item) batch.push_back(as_input(field, float_dtype_));
    return batch;
  }
  int64_t num_batches() const override {
    if (!nb::hasattr(iterable_, "__len__")) return -1;
    const Py_ssize_t n = PyObject_Length(iterable_.ptr());
    if (n < 0) {
      PyErr_Clear();
      return -1;
    }
    return n;
  }

 private:
  static void check(const nb::object& o) {
    if (!o.is_valid()) throw nb::python_error();
  }
  nb::object iterable_, it_;
  ug::DType float_dtype_;
};

/** The batches fit, evaluate and predict read: arrays (x, y) batched here, or an iterable of
 *  batches; floating fields cast to float_dtype. */
std::unique_ptr<ug::data::BatchSource> batches_from_python(nb::handle x, nb::handle y,
                                                           std::optional<int64_t> batch_size, bool shuffle, bool need_y,
                                                           ug::DType float_dtype, const char* who) {
  if (x.is_none()) ug::fail<ug::ValueError>("[", who, "] x is required");
  if (!is_array(x)) {
    if (!y.is_none())
      ug::fail<ug::ValueError>("[", who, "] y must not be given when x yields batches (it gives the (x, y) pairs)");
    if (batch_size)
      ug::fail<ug::ValueError>("[", who,
                               "] batch_size must not be given when x yields batches (they are batched already)");
    return std::make_unique<PyBatches>(x, float_dtype, who);
  }
  if (need_y && y.is_none()) ug::fail<ug::ValueError>("[", who, "] y is required when x is an array");
  std::vector<Tensor> fields = {as_input(x, float_dtype)};
  if (!y.is_none()) fields.push_back(as_input(y, float_dtype));
  // Shuffled passes draw their seeds from the global generator: ug.manual_seed fixes them.
  return std::make_unique<ug::data::DataLoader>(
      std::make_shared<ug::data::TensorDataset>(std::move(fields)),
      ug::data::DataLoaderOptions{.batch_size = batch_size.value_or(32), .shuffle = shuffle});
}

/** The name a metric object reports under: its .name, its __name__, or its class's name. */
std::string metric_name(nb::handle fn) {
  for (const char* attr : {"name", "__name__"})
    if (nb::hasattr(fn, attr) && PyUnicode_Check(fn.attr(attr).ptr())) return nb::cast<std::string>(fn.attr(attr));
  return nb::cast<std::string>(nb::handle(Py_TYPE(fn.ptr())).attr("__name__"));
}

/** A Python callable f(output, target) -> Tensor as a loss or metric function. */
std::function<Tensor(const Tensor&, const Tensor&)> python_fn(nb::handle fn, const char* what) {
  return [fn = nb::borrow(fn), what](const Tensor& out, const Tensor& y) {
    nb::object r = fn(out, y);
    if (!nb::isinstance<Tensor>(r))
      ug::fail<ug::TypeError>("[", what, "] must return a Tensor, got ", nb::inst_name(r).c_str());
    return nb::cast<Tensor>(r);
  };
}

/** The instance __dict__ entry "_trainer", or null. */
nb::object trainer_object(nb::handle self) {
  nb::dict dict = nb::steal<nb::dict>(PyObject_GenericGetDict(self.ptr(), nullptr));
  return dict.contains("_trainer") ? nb::borrow(dict["_trainer"]) : nb::object();
}

Trainer& compiled_trainer(nb::handle self, const char* who) {
  nb::object t = trainer_object(self);
  if (!t.is_valid() || !nb::cast<Trainer&>(t).compiled())
    ug::fail<ug::RuntimeError>("[", who, "] the model must be compiled before ", who,
                               ": call model.compile(optimizer=..., loss=...) first");
  return nb::cast<Trainer&>(t);
}

/** A trainer for the Python object `self`: it refers to the module without owning it (it
 *  lives in the module's own __dict__, so the module outlives it). */
std::unique_ptr<Trainer> trainer_for(nb::handle self) {
  Module& m = nb::cast<Module&>(self);
  return std::make_unique<Trainer>(std::shared_ptr<Module>(std::shared_ptr<Module>(), &m));
}

/** The model when it is Keras's functional Model of several inputs or outputs (its fit,
 *  evaluate and predict take lists or dicts of arrays), else null. */
const ug::nn::FunctionalImpl* multi_io(nb::handle self) {
  const auto* f = dynamic_cast<const ug::nn::FunctionalImpl*>(&nb::cast<Module&>(self));
  return f && (f->num_inputs() > 1 || f->outputs().size() > 1) ? f : nullptr;
}

std::string quoted(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

/** The repr of the first key of d that is not one of names ("" when every key is). */
std::string unknown_key(const nb::dict& d, const std::vector<std::string>& names) {
  for (auto [key, value] : d)
    if (!PyUnicode_Check(key.ptr()) || std::find(names.begin(), names.end(), nb::cast<std::string>(key)) == names.end())
      return nb::cast<std::string>(nb::repr(key));
  return "";
}

/** Keras's x (what = "input") or y ("output") for a model of several: a list or tuple in the
 *  model's order, a dict by name, or one array where there is one. */
std::vector<Tensor> structured(nb::handle data, const std::vector<std::string>& names, const std::string& model,
                               const char* what, const char* who, ug::DType float_dtype) {
  std::vector<Tensor> out;
  if (PyDict_Check(data.ptr())) {
    nb::dict d = nb::borrow<nb::dict>(data);
    if (const std::string key = unknown_key(d, names); !key.empty())
      ug::fail<ug::ValueError>("[", who, "] model '", model, "' has no ", what, " named ", key, "; its ", what,
                               "s are ", quoted(names));
    for (const std::string& name : names) {
      if (!d.contains(name.c_str()))
        ug::fail<ug::ValueError>("[", who, "] model '", model, "' is missing data for its ", what, " '", name,
                                 "': the dict's keys must be ", quoted(names));
      out.push_back(as_input(d[name.c_str()], float_dtype));
    }
    return out;
  }
  if (PyList_Check(data.ptr()) || PyTuple_Check(data.ptr())) {
    if (nb::len(data) != names.size())
      ug::fail<ug::ValueError>("[", who, "] model '", model, "' has ", names.size(), " ", what, "s (", quoted(names),
                               "), got a list of ", nb::len(data));
    for (nb::handle a : data) out.push_back(as_input(a, float_dtype));
    return out;
  }
  if (names.size() == 1 && is_array(data)) return {as_input(data, float_dtype)};
  ug::fail<ug::ValueError>("[", who, "] model '", model, "' has ", names.size(), " ", what, "s (", quoted(names),
                           "): give a list of as many arrays or a dict by name, got ", nb::inst_name(data).c_str());
}

/** compile's loss, loss_weights or metrics for a model of several outputs: a list in output
 *  order or a dict by output name (an output it does not name gets `missing`). */
template <class T, class Convert>
std::vector<T> per_output(nb::handle given, const std::vector<std::string>& names, const char* what, T missing,
                          Convert convert) {
  std::vector<T> out;
  if (PyDict_Check(given.ptr())) {
    nb::dict d = nb::borrow<nb::dict>(given);
    if (const std::string key = unknown_key(d, names); !key.empty())
      ug::fail<ug::ValueError>("[compile] ", what, " names ", key,
                               ", which is not an output of the model; its outputs are ", quoted(names));
    for (const std::string& name : names) out.push_back(d.contains(name.c_str()) ? convert(d[name.c_str()]) : missing);
    return out;
  }
  for (nb::handle v : given) out.push_back(convert(v));
  return out;
}

void compile(nb::handle self, nb::handle optimizer, nb::handle loss, nb::handle metrics,
             std::optional<double> learning_rate, std::optional<bool> from_logits, std::optional<double> clipnorm,
             std::optional<double> clipvalue, std::optional<double> global_clipnorm,
             int64_t gradient_accumulation_steps, bool jit_compile, nb::handle loss_weights) {
  nb::object t = trainer_object(self);
  if (!t.is_valid()) {
    t = nb::cast(trainer_for(self).release(), nb::rv_policy::take_ownership);
    nb::setattr(self, "_trainer", t);
  }
  const std::vector<std::string>& outputs = nb::cast<Trainer&>(t).output_names();
  train::CompileOptions o;
  if (PyUnicode_Check(optimizer.ptr())) o.optimizer = nb::cast<std::string>(optimizer);
  else if (nb::isinstance<ug::optim::Optimizer>(optimizer))
    o.optimizer = nb::cast<std::shared_ptr<ug::optim::Optimizer>>(optimizer);
  else
    ug::fail<ug::TypeError>(
        "[compile] optimizer must be a name such as \"adam\" or a ug.optimizers or ug.optim "
        "optimizer, got ",
        nb::inst_name(optimizer).c_str());
  if (loss.is_none())
    ug::fail<ug::ValueError>(
        "[compile] loss is required: a name such as \"sparse_categorical_crossentropy\" or a "
        "function loss(output, target) (this is Keras's compile; for torch's Module.compile(), which "
        "compiles the forward, write model = ug.compile(model))");
  auto one_loss = [](nb::handle l) -> train::LossSpec {
    if (l.is_none()) return std::string();  // an output without a loss
    if (PyUnicode_Check(l.ptr())) return nb::cast<std::string>(l);
    if (nb::isinstance<train::KerasLoss>(l)) return nb::cast<const train::KerasLoss&>(l);
    if (PyCallable_Check(l.ptr())) return python_fn(l, "loss");
    ug::fail<ug::TypeError>("[compile] loss must be a name or a callable loss(output, target), got ",
                            nb::inst_name(l).c_str());
  };
  const bool several = outputs.size() > 1;
  if (several && (PyList_Check(loss.ptr()) || PyTuple_Check(loss.ptr()) || PyDict_Check(loss.ptr())))
    o.losses = per_output(loss, outputs, "loss", train::LossSpec(std::string()), one_loss);
  else o.loss = one_loss(loss);
  if (!loss_weights.is_none())
    o.loss_weights =
        per_output(loss_weights, outputs, "loss_weights", 1.0, [](nb::handle w) { return nb::cast<double>(w); });
  auto metric_list = [](nb::handle ms) {
    std::vector<train::Metric> out;
    if (ms.is_none()) return out;
    if (PyUnicode_Check(ms.ptr()) || !nb::hasattr(ms, "__iter__")) {
      if (!PyUnicode_Check(ms.ptr()) && !PyCallable_Check(ms.ptr()))
        ug::fail<ug::TypeError>("[compile] metrics must be a list, such as [\"accuracy\"]");
      ms = nb::make_tuple(ms);  // one output's single metric
    }
    for (nb::handle m : ms) {
      if (PyUnicode_Check(m.ptr())) out.emplace_back(nb::cast<std::string>(m));
      else if (PyCallable_Check(m.ptr())) out.emplace_back(metric_name(m), python_fn(m, "metric"));
      else
        ug::fail<ug::TypeError>("[compile] a metric must be a name or a callable metric(output, target), got ",
                                nb::inst_name(m).c_str());
    }
    return out;
  };
  if (!metrics.is_none()) {
    if (PyUnicode_Check(metrics.ptr()))
      ug::fail<ug::TypeError>("[compile] metrics must be a list, such as [\"accuracy\"]");
    // Several outputs: a dict by output name, or a list of lists (one per output).
    const bool nested =
        PyDict_Check(metrics.ptr()) ||
        (several && nb::len(metrics) > 0 && (PyList_Check(metrics[0].ptr()) || PyTuple_Check(metrics[0].ptr())));
    if (nested && several)
      o.output_metrics = per_output(metrics, outputs, "metrics", std::vector<train::Metric>{}, metric_list);
    else if (nested)
      ug::fail<ug::TypeError>("[compile] the model has one output: metrics must be a list, such as [\"accuracy\"]");
    else o.metrics = metric_list(metrics);
  }
  o.learning_rate = learning_rate;
  o.from_logits = from_logits;
  o.clipnorm = clipnorm;
  o.clipvalue = clipvalue;
  o.global_clipnorm = global_clipnorm;
  o.gradient_accumulation_steps = gradient_accumulation_steps;
  if (jit_compile) o.jit_compile = ug::jit_step_compiler();
  nb::cast<Trainer&>(t).compile(std::move(o));
}

std::vector<std::shared_ptr<Callback>> callbacks_from_python(nb::handle self, nb::handle callbacks) {
  std::vector<std::shared_ptr<Callback>> out;
  if (callbacks.is_none()) return out;
  for (nb::handle cb : callbacks) {
    if (!nb::isinstance<Callback>(cb))
      ug::fail<ug::TypeError>("[fit] callbacks must be ug.callbacks.Callback objects, got ", nb::inst_name(cb).c_str());
    cb.attr("set_model")(self);
    out.push_back(nb::cast<std::shared_ptr<Callback>>(cb));
  }
  return out;
}

/** Keras's sample_weight: one array weighing every output's loss, or for a model of several
 *  outputs a list (in output order) or dict (by output name) of one array per output. */
std::vector<Tensor> sample_weights(nb::handle w, const ug::nn::FunctionalImpl* graph, const Trainer& trainer,
                                   ug::DType float_dtype, const char* who) {
  if (w.is_none()) return {};
  bool per_output = graph && trainer.num_outputs() > 1 && PyDict_Check(w.ptr());
  if (graph && trainer.num_outputs() > 1 && (PyList_Check(w.ptr()) || PyTuple_Check(w.ptr())) && nb::len(w) > 0) {
    nb::handle first = w[0];  // a list of arrays, not one list of numbers
    per_output = is_array(first) || PyList_Check(first.ptr()) || PyTuple_Check(first.ptr());
  }
  if (per_output) return structured(w, trainer.output_names(), graph->name(), "output", who, float_dtype);
  return {as_input(w, float_dtype)};
}

nb::object fit(nb::handle self, nb::handle x, nb::handle y, std::optional<int64_t> batch_size, int64_t epochs,
               nb::handle verbose, nb::handle callbacks, double validation_split, nb::handle validation_data,
               bool shuffle, std::optional<std::map<int64_t, double>> class_weight, nb::handle sample_weight,
               int64_t initial_epoch, std::optional<int64_t> steps_per_epoch, int64_t validation_freq) {
  Trainer& trainer = compiled_trainer(self, "fit");
  train::FitOptions o;
  o.epochs = epochs;
  o.initial_epoch = initial_epoch;
  o.verbose = verbose_from_python(verbose, "fit");
  o.steps_per_epoch = steps_per_epoch.value_or(-1);
  o.validation_split = validation_split;
  o.validation_freq = validation_freq;
  if (class_weight) o.class_weight = std::move(*class_weight);
  const ug::DType float_dtype = model_float_dtype(self);
  // Arrays are batched (and split, and shuffled) by the C++ fit; other data comes batched.
  // A model of several inputs or outputs takes them as lists or dicts, as Keras.
  const ug::nn::FunctionalImpl* graph = multi_io(self);
  const bool arrays = (is_array(x) || graph) && !y.is_none();
  std::vector<Tensor> tx, ty;
  std::unique_ptr<ug::data::BatchSource> data, validation;
  o.sample_weight = sample_weights(sample_weight, graph, trainer, float_dtype, "fit");
  if (arrays) {
    tx = graph ? structured(x, graph->input_names(), graph->name(), "input", "fit", float_dtype)
               : std::vector<Tensor>{as_input(x, float_dtype)};
    ty = graph ? structured(y, trainer.output_names(), graph->name(), "output", "fit", float_dtype)
               : std::vector<Tensor>{as_input(y, float_dtype)};
    o.batch_size = batch_size;
    o.shuffle = shuffle;
  } else {
    data = batches_from_python(x, y, batch_size, shuffle, true, float_dtype, "fit");
  }
  if (!validation_data.is_none()) {
    // (x_val, y_val) or (x_val, y_val, sample_weight_val) arrays, or an iterable of batches.
    const bool tuple = (PyTuple_Check(validation_data.ptr()) || PyList_Check(validation_data.ptr())) &&
                       (nb::len(validation_data) == 2 || nb::len(validation_data) == 3);
    bool arrays_given = tuple;
    if (tuple && !graph)
      for (nb::handle a : validation_data) arrays_given = arrays_given && is_array(a);
    const std::vector<Tensor> weight_val = tuple && nb::len(validation_data) == 3
                                               ? sample_weights(validation_data[2], graph, trainer, float_dtype, "fit")
                                               : std::vector<Tensor>{};
    if (graph && arrays_given)
      validation = trainer.evaluation_batches(
          structured(validation_data[0], graph->input_names(), graph->name(), "input", "fit", float_dtype),
          structured(validation_data[1], trainer.output_names(), graph->name(), "output", "fit", float_dtype),
          batch_size.value_or(32), weight_val);
    else
      validation =
          arrays_given
              ? trainer.evaluation_batches(as_input(validation_data[0], float_dtype),
                                           as_input(validation_data[1], float_dtype), batch_size.value_or(32),
                                           weight_val.empty() ? Tensor() : weight_val[0])
              : batches_from_python(validation_data, nb::none(), std::nullopt, false, true, float_dtype, "fit");
  }
  o.validation_data = validation.get();
  o.callbacks = callbacks_from_python(self, callbacks);
  trainer.set_output(python_stdout());
  std::shared_ptr<train::History> history =
      arrays ? trainer.fit(tx, ty, std::move(o)) : trainer.fit(*data, std::move(o));
  nb::object h = nb::cast(history);
  h.attr("set_model")(self);
  return h;
}

nb::object evaluate(nb::handle self, nb::handle x, nb::handle y, std::optional<int64_t> batch_size, nb::handle verbose,
                    nb::handle sample_weight, bool return_dict) {
  Trainer& trainer = compiled_trainer(self, "evaluate");
  trainer.set_output(python_stdout());
  const int v = verbose_from_python(verbose, "evaluate");
  const ug::DType float_dtype = model_float_dtype(self);
  Logs logs;
  const ug::nn::FunctionalImpl* graph = multi_io(self);
  const std::vector<Tensor> weights = sample_weights(sample_weight, graph, trainer, float_dtype, "evaluate");
  if (graph && !y.is_none()) {
    logs = trainer.evaluate(structured(x, graph->input_names(), graph->name(), "input", "evaluate", float_dtype),
                            structured(y, trainer.output_names(), graph->name(), "output", "evaluate", float_dtype),
                            batch_size.value_or(32), v, weights);
  } else if (is_array(x) && !y.is_none()) {
    logs = trainer.evaluate(as_input(x, float_dtype), as_input(y, float_dtype), batch_size.value_or(32), v,
                            weights.empty() ? Tensor() : weights[0]);
  } else {
    if (!sample_weight.is_none())
      ug::fail<ug::ValueError>(
          "[evaluate] sample_weight needs array x and y; batches carry their weights as (x, y, sample_weight)");
    auto data = batches_from_python(x, y, batch_size, false, true, float_dtype, "evaluate");
    logs = trainer.evaluate(*data, v);
  }
  if (return_dict) return logs_to_python(logs);
  if (logs.size() == 1) return nb::float_(logs.at("loss"));
  nb::list out;  // Keras: [loss, metric1, ...]
  std::vector<std::pair<std::string, double>> metrics;
  for (const auto& [k, v] : logs) {
    // Several outputs: Keras lists the losses in output order, then the metrics sorted by name.
    if (graph && trainer.num_outputs() > 1 && !k.ends_with("_loss") && k != "loss") metrics.emplace_back(k, v);
    else out.append(v);
  }
  std::sort(metrics.begin(), metrics.end());
  for (const auto& [k, v] : metrics) out.append(v);
  return out;
}

nb::object predict(nb::handle self, nb::handle x, std::optional<int64_t> batch_size, nb::handle verbose) {
  nb::object t = trainer_object(self);
  std::unique_ptr<Trainer> own;
  Trainer* trainer = t.is_valid() ? &nb::cast<Trainer&>(t) : (own = trainer_for(self)).get();
  trainer->set_output(python_stdout());
  const int v = verbose_from_python(verbose, "predict");
  const ug::DType float_dtype = model_float_dtype(self);
  const ug::nn::FunctionalImpl* graph = multi_io(self);
  if (!graph) {
    auto data = batches_from_python(x, nb::none(), batch_size, false, false, float_dtype, "predict");
    return nb::cast(trainer->predict(*data, v));
  }
  // Keras's structure: a list of the outputs, or a dict for a model whose outputs are one.
  const bool structured_x = PyList_Check(x.ptr()) || PyTuple_Check(x.ptr()) || PyDict_Check(x.ptr()) || is_array(x);
  std::vector<Tensor> outs =
      structured_x
          ? trainer->predict_all(structured(x, graph->input_names(), graph->name(), "input", "predict", float_dtype),
                                 batch_size.value_or(32), v)
          : trainer->predict_all(*batches_from_python(x, nb::none(), batch_size, false, false, float_dtype, "predict"),
                                 v);
  if (outs.size() == 1) return nb::cast(outs[0]);
  if (!graph->dict_outputs()) return nb::cast(outs);
  nb::dict d;
  for (size_t i = 0; i < outs.size(); ++i) d[graph->output_names()[i].c_str()] = nb::cast(outs[i]);
  return d;
}

/** Binds the hooks so Python can call them (super().on_epoch_end(...) or by hand): T's own
 *  implementation, called non-virtually so a Python override calling super() ends there. */
template <class T, class Class> void bind_hooks(Class& cls) {
  cls.def(
         "on_train_begin",
         [](T& c, nb::handle logs) {
           Logs l = logs_from_dict(logs);
           c.T::on_train_begin(l);
         },
         "logs"_a = nb::none())
      .def(
          "on_train_end",
          [](T& c, nb::handle logs) {
            Logs l = logs_from_dict(logs);
            c.T::on_train_end(l);
          },
          "logs"_a = nb::none())
      .def(
          "on_epoch_begin",
          [](T& c, int64_t epoch, nb::handle logs) {
            Logs l = logs_from_dict(logs);
            c.T::on_epoch_begin(epoch, l);
          },
          "epoch"_a, "logs"_a = nb::none())
      .def(
          "on_epoch_end",
          [](T& c, int64_t epoch, nb::handle logs) {
            Logs l = logs_from_dict(logs);
            c.T::on_epoch_end(epoch, l);
          },
          "epoch"_a, "logs"_a = nb::none())
      .def(
          "on_train_batch_begin",
          [](T& c, int64_t batch, nb::handle logs) {
            Logs l = logs_from_dict(logs);
            c.T::on_train_batch_begin(batch, l);
          },
          "batch"_a, "logs"_a = nb::none())
      .def(
          "on_train_batch_end",
          [](T& c, int64_t batch, nb::handle logs) {
            Logs l = logs_from_dict(logs);
            c.T::on_train_batch_end(batch, l);
          },
          "batch"_a, "logs"_a = nb::none());
}

nb::object optional_float(std::optional<double> v) { return v ? nb::object(nb::float_(*v)) : nb::none(); }

}  // namespace

void bind_train(nb::module_& m) {
  nb::class_<Trainer>(m, "_Trainer", "The state model.compile sets up and the loops of fit, evaluate and predict.");

  // ---- ug.keras.losses (each class there is a Python subclass naming its kind) -------------
  nb::class_<train::KerasLoss>(m, "KerasLoss",
                               "A Keras loss object: loss(y_true, y_pred, sample_weight=None), reduced as "
                               "`reduction` says; compile(loss=...) takes it.")
      .def(
          "__init__",
          [](train::KerasLoss* self, const std::string& kind, bool from_logits, const std::string& reduction,
             const std::string& name, double delta) {
            new (self) train::KerasLoss(kind, {from_logits, reduction, name, delta});
          },
          "kind"_a, "from_logits"_a = false, "reduction"_a = "sum_over_batch_size", "name"_a = "", "delta"_a = 1.0)
      .def(
          "__call__",
          [](const train::KerasLoss& loss, const Tensor& y_true, const Tensor& y_pred,
             std::optional<Tensor> sample_weight) { return loss(y_true, y_pred, sample_weight.value_or(Tensor())); },
          "y_true"_a, "y_pred"_a, "sample_weight"_a = nb::none())
      .def_prop_ro("name", &train::KerasLoss::name)
      .def_prop_ro("reduction", [](const train::KerasLoss& l) { return l.options().reduction; })
      .def_prop_ro("from_logits", [](const train::KerasLoss& l) { return l.options().from_logits; })
      .def("get_config", [](const train::KerasLoss& l) {
        nb::dict c;
        c["name"] = l.name();
        c["reduction"] = l.options().reduction;
        if (l.kind() == "huber") c["delta"] = l.options().delta;
        else if (l.kind() != "mse" && l.kind() != "mae" && l.kind() != "kl_divergence")
          c["from_logits"] = l.options().from_logits;
        return c;
      });
  m.def("keras_loss", &train::keras_loss, "kind"_a, "y_true"_a, "y_pred"_a, "from_logits"_a = false, "delta"_a = 1.0,
        "keras.losses.<kind>(y_true, y_pred): the unreduced loss of each sample.");

  // ---- ug.callbacks ----------------------------------------------------------------------
  nb::module_ cbm = m.def_submodule("callbacks", "Keras's training callbacks (keras.callbacks)");
  auto cb = nb::class_<Callback, PyCallback>(
      cbm, "Callback", nb::dynamic_attr(),
      "Base of the callbacks: override any of on_train_begin/end(logs), on_epoch_begin/end(epoch, logs), "
      "on_train_batch_begin/end(batch, logs), and chief_only() to run on rank 0 alone in data-parallel fit. "
      "self.model is the model being trained; set self.model.stop_training = True to stop.");
  cb.def(nb::init<>())
      .def(
          "set_model", [](nb::handle self, nb::handle model) { nb::setattr(self, "model", model); }, "model"_a)
      .def("chief_only", &Callback::chief_only,
           "Whether, in data-parallel fit, only rank 0 runs this callback (a callback that only writes "
           "or prints); False unless overridden.")
      .def_prop_ro("params", [](const Callback& c) {
        nb::dict d;
        if (c.has_trainer()) {
          d["epochs"] = c.trainer().params().epochs;
          d["steps"] = c.trainer().params().steps < 0 ? nb::none() : nb::int_(c.trainer().params().steps);
          d["verbose"] = c.trainer().params().verbose;
        }
        return d;
      });
  bind_hooks<Callback>(cb);

  auto history = nb::class_<train::History, Callback>(cbm, "History", nb::dynamic_attr(),
                                                      "What fit returns: history.history[name] is the list of that "
                                                      "metric's values per epoch; history.epoch the epochs run.");
  history.def(nb::init<>())
      .def_prop_ro("history",
                   [](const train::History& h) {
                     nb::dict d;
                     for (const auto& [k, v] : h.history) d[k.c_str()] = nb::cast(v);
                     return d;
                   })
      .def_prop_ro("epoch", [](const train::History& h) { return h.epoch; });
  bind_hooks<train::History>(history);

  auto early = nb::class_<train::EarlyStopping, Callback>(
      cbm, "EarlyStopping", nb::dynamic_attr(), "Stops training when a monitored metric has stopped improving.");
  early
      .def(
          "__init__",
          [](train::EarlyStopping* self, std::string monitor, double min_delta, int64_t patience, int verbose,
             std::string mode, std::optional<double> baseline, bool restore_best_weights) {
            new (self) train::EarlyStopping(
                {std::move(monitor), min_delta, patience, verbose, std::move(mode), baseline, restore_best_weights});
          },
          "monitor"_a = "val_loss", "min_delta"_a = 0.0, "patience"_a = 0, "verbose"_a = 0, "mode"_a = "auto",
          "baseline"_a = nb::none(), "restore_best_weights"_a = false)
      .def_prop_ro("stopped_epoch", &train::EarlyStopping::stopped_epoch)
      .def_prop_ro("best_epoch", &train::EarlyStopping::best_epoch)
      .def_prop_ro("wait", &train::EarlyStopping::wait)
      .def_prop_ro("best", [](const train::EarlyStopping& e) { return optional_float(e.best()); });
  bind_hooks<train::EarlyStopping>(early);

  auto checkpoint = nb::class_<train::ModelCheckpoint, Callback>(
      cbm, "ModelCheckpoint", nb::dynamic_attr(),
      "Saves the model's weights (safetensors) after each epoch, or only when the monitored metric improves; "
      "filepath may name {epoch:02d} and any metric, e.g. {val_loss:.2f}.");
  checkpoint
      .def(
          "__init__",
          [](train::ModelCheckpoint* self, const std::filesystem::path& filepath, std::string monitor, int verbose,
             bool save_best_only, bool save_weights_only, std::string mode,
             std::optional<double> initial_value_threshold) {
            new (self) train::ModelCheckpoint(
                filepath.string(), {std::move(monitor), verbose, save_best_only, save_weights_only, std::move(mode),
                                    initial_value_threshold, nullptr});
          },
          "filepath"_a, "monitor"_a = "val_loss", "verbose"_a = 0, "save_best_only"_a = false,
          "save_weights_only"_a = true, "mode"_a = "auto", "initial_value_threshold"_a = nb::none())
      .def_prop_ro("best", [](const train::ModelCheckpoint& c) { return optional_float(c.best()); });
  bind_hooks<train::ModelCheckpoint>(checkpoint);

  auto scheduler = nb::class_<train::LearningRateScheduler, Callback>(
      cbm, "LearningRateScheduler", nb::dynamic_attr(),
      "Sets the learning rate at the start of each epoch to schedule(epoch, lr) (or schedule(epoch)).");
  scheduler.def(
      "__init__",
      [](train::LearningRateScheduler* self, nb::object schedule, int verbose) {
        if (!PyCallable_Check(schedule.ptr()))
          ug::fail<ug::TypeError>("[LearningRateScheduler] schedule must be callable, got ",
                                  nb::inst_name(schedule).c_str());
        new (self) train::LearningRateScheduler(
            [schedule](int64_t epoch, double lr) {
              nb::object r;
              try {
                r = schedule(epoch, lr);
              } catch (nb::python_error& e) {  // Keras also takes schedule(epoch)
                if (!e.matches(PyExc_TypeError)) throw;
                r = schedule(epoch);
              }
              return nb::cast<double>(nb::float_(r));
            },
            verbose);
      },
      "schedule"_a, "verbose"_a = 0);
  bind_hooks<train::LearningRateScheduler>(scheduler);

  auto plateau = nb::class_<train::ReduceLROnPlateau, Callback>(
      cbm, "ReduceLROnPlateau", nb::dynamic_attr(), "Cuts the learning rate by factor when a metric stops improving.");
  plateau.def(
      "__init__",
      [](train::ReduceLROnPlateau* self, std::string monitor, double factor, int64_t patience, int verbose,
         std::string mode, double min_delta, int64_t cooldown, double min_lr) {
        new (self) train::ReduceLROnPlateau(
            {std::move(monitor), factor, patience, verbose, std::move(mode), min_delta, cooldown, min_lr});
      },
      "monitor"_a = "val_loss", "factor"_a = 0.1, "patience"_a = 10, "verbose"_a = 0, "mode"_a = "auto",
      "min_delta"_a = 1e-4, "cooldown"_a = 0, "min_lr"_a = 0.0);
  bind_hooks<train::ReduceLROnPlateau>(plateau);

  auto csv = nb::class_<train::CSVLogger, Callback>(cbm, "CSVLogger", nb::dynamic_attr(),
                                                    "Writes each epoch's logs as a row of a CSV file.");
  csv.def(
      "__init__",
      [](train::CSVLogger* self, const std::filesystem::path& filename, std::string separator, bool append) {
        new (self) train::CSVLogger(filename.string(), std::move(separator), append);
      },
      "filename"_a, "separator"_a = ",", "append"_a = false);
  bind_hooks<train::CSVLogger>(csv);

  auto tensorboard = nb::class_<train::TensorBoard, Callback>(
      cbm, "TensorBoard", nb::dynamic_attr(),
      "Writes each epoch's logs as TensorBoard scalars in log_dir/train and log_dir/validation.");
  tensorboard.def(
      "__init__",
      [](train::TensorBoard* self, const std::filesystem::path& log_dir) {
        new (self) train::TensorBoard(log_dir.string());
      },
      "log_dir"_a = "logs");
  bind_hooks<train::TensorBoard>(tensorboard);

  // ---- Module.compile / fit / evaluate / predict ------------------------------------------
  nb::handle module_cls = nb::type<Module>();
  nb::cpp_function_def(
      &compile, nb::scope(module_cls), nb::name("compile"), nb::is_method(), "optimizer"_a = "rmsprop",
      "loss"_a = nb::none(), "metrics"_a = nb::none(), nb::kw_only(), "learning_rate"_a = nb::none(),
      "from_logits"_a = nb::none(), "clipnorm"_a = nb::none(), "clipvalue"_a = nb::none(),
      "global_clipnorm"_a = nb::none(), "gradient_accumulation_steps"_a = 1, "jit_compile"_a = false,
      "loss_weights"_a = nb::none(),
      "Keras's compile: optimizer (a name such as \"adam\", Keras's optimizer of that name, or a "
      "ug.optimizers / ug.optim optimizer), loss (a name or loss(output, target)), metrics (names or "
      "metric(output, target)). A model of several outputs takes loss, loss_weights and metrics per output, as "
      "a list or a dict by output name. Named losses take logits unless the "
      "model ends in a Softmax/Sigmoid; from_logits overrides that. jit_compile=True runs fit's training "
      "step as a compiled program (ug.jit) from the second step on.");
  nb::cpp_function_def(
      &fit, nb::scope(module_cls), nb::name("fit"), nb::is_method(), "x"_a = nb::none(), "y"_a = nb::none(),
      "batch_size"_a = nb::none(), "epochs"_a = 1, "verbose"_a = "auto", "callbacks"_a = nb::none(),
      "validation_split"_a = 0.0, "validation_data"_a = nb::none(), "shuffle"_a = true, "class_weight"_a = nb::none(),
      "sample_weight"_a = nb::none(), "initial_epoch"_a = 0, "steps_per_epoch"_a = nb::none(), "validation_freq"_a = 1,
      "Keras's fit: x, y arrays (batched here, batch_size 32, reshuffled each epoch; floating "
      "ones cast to the model's float dtype) or x an iterable of (x, y) or (x, y, sample_weight) "
      "batches such as a DataLoader. sample_weight (one per sample; for several outputs one array for all or a list or "
      "dict of one per output) and class_weight ({class: "
      "weight}) weigh each sample's loss: sum(weight * loss) / batch size. validation_freq=n validates "
      "after every n-th epoch only. Returns a History.");
  nb::cpp_function_def(&evaluate, nb::scope(module_cls), nb::name("evaluate"), nb::is_method(), "x"_a = nb::none(),
                       "y"_a = nb::none(), "batch_size"_a = nb::none(), "verbose"_a = "auto",
                       "sample_weight"_a = nb::none(), "return_dict"_a = false,
                       "The loss (and metrics: [loss, metric, ...], or a dict with return_dict) over the data; "
                       "sample_weight weighs each sample's loss, as in fit.");
  nb::cpp_function_def(
      &predict, nb::scope(module_cls), nb::name("predict"), nb::is_method(), "x"_a, "batch_size"_a = nb::none(),
      "verbose"_a = "auto",
      "The model's outputs for x (an array, or an iterable of batches), batch by batch, concatenated.");
  nb::object property = nb::module_::import_("builtins").attr("property");
  nb::setattr(module_cls, "stop_training",
              property(nb::cpp_function([](nb::handle self) {
                         nb::object t = trainer_object(self);
                         return t.is_valid() && nb::cast<Trainer&>(t).stop_training;
                       }),
                       nb::cpp_function([](nb::handle self, bool stop) {
                         nb::object t = trainer_object(self);
                         if (!t.is_valid())
                           ug::fail<ug::RuntimeError>("[stop_training] only a compiled model trains with fit");
                         nb::cast<Trainer&>(t).stop_training = stop;
                       }),
                       nb::none(), "Set to True (from a callback) to end fit after the current batch."));
  nb::setattr(module_cls, "loss_scaler",
              property(nb::cpp_function([](nb::handle self) -> nb::object {
                         nb::object t = trainer_object(self);
                         ug::amp::GradScaler* s = t.is_valid() ? nb::cast<Trainer&>(t).loss_scaler() : nullptr;
                         return s ? nb::cast(s, nb::rv_policy::reference) : nb::none();
                       }),
                       nb::none(), nb::none(),
                       "The loss scaling compile() set up under the mixed_float16 policy (Keras's "
                       "LossScaleOptimizer), else None."));

  // ---- ug.distribute's strategies (python/unigrad/distribute.py wraps these) -------------
  nb::module_ tm = get_or_create_submodule(m, "train", "training: checkpoints and loops (ug::train)");
  using train::MirroredStrategy;
  nb::class_<MirroredStrategy::Scope>(tm, "_StrategyScope", "An open strategy scope: closed when freed");
  nb::class_<MirroredStrategy>(tm, "_MirroredStrategy", "ug::train::MirroredStrategy")
      .def_static(
          "make",
          [](ug::distributed::ProcessGroupPtr group) {
            nb::gil_scoped_release release;  // init_process_group may wait for the other ranks
            return MirroredStrategy::make(std::move(group));
          },
          "group"_a.none() = nb::none())
      .def_prop_ro("num_replicas_in_sync", &MirroredStrategy::num_replicas_in_sync)
      .def_prop_ro("group", &MirroredStrategy::group)
      .def("scope", &MirroredStrategy::scope, "Opens the scope; it closes when the returned object is freed.")
      .def("replica_context", &MirroredStrategy::replica_context,
           "strategy.run's context: apply_gradients sums over the replicas while the returned object lives.")
      .def(
          "reduce",
          [](const MirroredStrategy& s, const std::string& op, const ug::Tensor& value, std::optional<int64_t> axis) {
            nb::gil_scoped_release release;  // waits for the other replicas
            return s.reduce(op, value, axis);
          },
          "op"_a, "value"_a, "axis"_a.none() = nb::none())
      .def(
          "gather",
          [](const MirroredStrategy& s, const ug::Tensor& value, int64_t axis) {
            nb::gil_scoped_release release;  // waits for the other replicas
            return s.gather(value, axis);
          },
          "value"_a, "axis"_a)
      .def("local_part", &MirroredStrategy::local_part, "global_batch"_a);
  nb::class_<MirroredStrategy::ReplicaContext>(tm, "_ReplicaContext", "An open replica context: closed when freed");
  tm.def("compute_average_loss", &train::compute_average_loss, "per_example_loss"_a,
         "global_batch_size"_a.none() = nb::none(), "sample_weight"_a.none() = nb::none(),
         "tf.nn.compute_average_loss: the losses summed over the global batch size.");
}

}  // namespace ugpy
