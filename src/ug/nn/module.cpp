#include "ug/nn/module.h"
#include "ug/nn/functional_model.h"
#include "ug/nn/layers/keras_conv.h"
#include "ug/nn/layers/linear.h"

#include <algorithm>
#include <sstream>
#include <typeinfo>

#include "ug/autograd/grad_trace.h"
#include "ug/graph/grad_mode.h"
#include "ug/core/random.h"

namespace ug::nn {

namespace {

std::string join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

std::string join_keys(const std::vector<std::string>& keys) {
  std::string out;
  for (const std::string& k : keys) out += (out.empty() ? "\"" : ", \"") + k + "\"";
  return out;
}

}  // namespace

std::string tuple_repr(const Dims& dims) {
  std::ostringstream s;
  s << "(";
  for (size_t i = 0; i < dims.size(); ++i) s << (i ? ", " : "") << dims[i];
  s << (dims.size() == 1 ? ",)" : ")");
  return s.str();
}

std::string size_repr(const Dims& dims) { return dims.size() == 1 ? std::to_string(dims[0]) : tuple_repr(dims); }

Module::Module(std::string type_name) : type_name_(std::move(type_name)) {}

// ---- registration ---------------------------------------------------------------------

Tensor& Module::register_parameter(const std::string& name, Tensor t, bool requires_grad) {
  if (name.empty() || name.find('.') != std::string::npos)
    fail("[register_parameter] a parameter name must be non-empty and have no dots, got \"", name, "\"");
  if (buffers_.contains(name) || children_.contains(name))
    fail("[register_parameter] \"", name, "\" is already a ", buffers_.contains(name) ? "buffer" : "submodule", " of ",
         type_name_);
  if (t.defined()) {
    if (requires_grad && !t.is_floating_point())
      fail<TypeError>("[register_parameter] parameter \"", name, "\" must have a floating dtype, got ", t.dtype());
    if (!t.is_leaf()) t = t.detach();
    t.requires_grad_(requires_grad);
    t.impl().set_is_parameter(true);
  }
  return parameters_.insert(name, std::move(t));
}

Tensor& Module::register_buffer(const std::string& name, Tensor t, bool persistent) {
  if (name.empty() || name.find('.') != std::string::npos)
    fail("[register_buffer] a buffer name must be non-empty and have no dots, got \"", name, "\"");
  if (parameters_.contains(name) || children_.contains(name))
    fail("[register_buffer] \"", name, "\" is already a ", parameters_.contains(name) ? "parameter" : "submodule",
         " of ", type_name_);
  return buffers_.insert(name, Entry{std::move(t), persistent}).value;
}

std::shared_ptr<Module> Module::register_module(const std::string& name, std::shared_ptr<Module> m) {
  if (name.empty() || name.find('.') != std::string::npos)
    fail("[register_module] a submodule name must be non-empty and have no dots, got \"", name, "\"");
  if (parameters_.contains(name) || buffers_.contains(name))
    fail("[register_module] \"", name, "\" is already a ", parameters_.contains(name) ? "parameter" : "buffer", " of ",
         type_name_);
  if (const std::shared_ptr<Module>* held = children_.find(name); held && *held && m && *held != m) {
    CloneMemo memo;
    memo.substitute(**held, m);
    rebind(memo);
  }
  return children_.insert(name, std::move(m));
}

Tensor& Module::parameter(const std::string& name) {
  if (Tensor* t = parameters_.find(name)) return *t;
  fail<IndexError>("[", type_name_, "] has no parameter \"", name, "\"");
}

Tensor& Module::buffer(const std::string& name) {
  if (Entry* e = buffers_.find(name)) return e->value;
  fail<IndexError>("[", type_name_, "] has no buffer \"", name, "\"");
}

std::shared_ptr<Module> Module::child(const std::string& name) const {
  if (const auto* m = children_.find(name)) return *m;
  fail<IndexError>("[", type_name_, "] has no submodule \"", name, "\"");
}

void Module::unregister(const std::string& name) {
  parameters_.erase(name) || buffers_.erase(name) || children_.erase(name);
}

// ---- walking the tree -----------------------------------------------------------------

void Module::collect_parameters(const std::string& prefix, bool recurse,
                                std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [name, t] : parameters_)
    if (t.defined() &&
        std::none_of(out.begin(), out.end(), [&t = t](const auto& p) { return p.second.impl_ref() == t.impl_ref(); }))
      out.emplace_back(join(prefix, name), t);
  if (recurse)
    for (const auto& [name, m] : children_)
      if (m) m->collect_parameters(join(prefix, name), true, out);
}

void Module::collect_buffers(const std::string& prefix, bool recurse, bool persistent_only,
                             std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const auto& [name, e] : buffers_)
    if (e.value.defined() && (e.persistent || !persistent_only)) out.emplace_back(join(prefix, name), e.value);
  if (recurse)
    for (const auto& [name, m] : children_)
      if (m) m->collect_buffers(join(prefix, name), true, persistent_only, out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect_parameters("", recurse, out);
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers(bool recurse) const {
  std::vector<std::pair<std::string, Tensor>> out;
  collect_buffers("", recurse, false, out);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_buffers(recurse)) out.push_back(t);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const {
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> out;
  for (const auto& [name, m] : children_)
    if (m) out.emplace_back(name, m);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (auto& [name, m] : named_children()) out.push_back(m);
  return out;
}

void Module::collect_modules(const std::string& prefix,
                             std::vector<std::pair<std::string, std::shared_ptr<Module>>>& out,
                             std::vector<const Module*>& seen) {
  for (const auto& [name, m] : children_) {
    if (!m || std::find(seen.begin(), seen.end(), m.get()) != seen.end()) continue;
    seen.push_back(m.get());
    out.emplace_back(join(prefix, name), m);
    m->collect_modules(join(prefix, name), out, seen);
  }
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_modules() {
  // A module not owned by a shared_ptr (a stack object in C++) still lists itself.
  std::shared_ptr<Module> self = weak_from_this().lock();
  if (!self) self = std::shared_ptr<Module>(std::shared_ptr<Module>(), this);
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> out{{"", self}};
  std::vector<const Module*> seen{this};
  collect_modules("", out, seen);
  return out;
}

std::vector<std::shared_ptr<Module>> Module::modules() {
  std::vector<std::shared_ptr<Module>> out;
  for (auto& [name, m] : named_modules()) out.push_back(m);
  return out;
}

std::shared_ptr<Module> Module::get_submodule(const std::string& path) {
  std::shared_ptr<Module> m = weak_from_this().lock();
  if (!m) m = std::shared_ptr<Module>(std::shared_ptr<Module>(), this);
  std::stringstream in(path);
  for (std::string part; std::getline(in, part, '.');) m = m->child(part);
  return m;
}

Tensor* Module::find_tensor(const std::string& path) {
  size_t dot = path.find('.');
  if (dot == std::string::npos) {
    if (Tensor* t = parameters_.find(path)) return t;
    if (Entry* e = buffers_.find(path)) return &e->value;
    return nullptr;
  }
  auto* m = children_.find(path.substr(0, dot));
  return m && *m ? (*m)->find_tensor(path.substr(dot + 1)) : nullptr;
}

// ---- state ------------------------------------------------------------------------------

TensorDict Module::state_dict() const {
  std::vector<std::pair<std::string, Tensor>> items;
  // Tied parameters appear under every name, as in PyTorch's state dicts.
  std::function<void(const Module&, const std::string&)> walk = [&](const Module& m, const std::string& prefix) {
    for (const auto& [name, t] : m.parameters_)
      if (t.defined()) items.emplace_back(join(prefix, name), t);
    for (const auto& [name, e] : m.buffers_)
      if (e.value.defined() && e.persistent) items.emplace_back(join(prefix, name), e.value);
    for (const auto& [name, c] : m.children_)
      if (c) walk(*c, join(prefix, name));
  };
  walk(*this, "");
  TensorDict out;
  for (auto& [k, v] : items) out.insert(k, v.detach());
  return out;
}

std::pair<std::vector<std::string>, std::vector<std::string>> Module::load_state_dict(const TensorDict& state,
                                                                                      bool strict) {
  for (const auto& [name, m] : named_modules()) m->load_lazy_shapes(state, name.empty() ? name : name + ".");
  TensorDict own = state_dict();
  std::vector<std::string> missing, unexpected, mismatched;
  for (const auto& [name, t] : own) {
    const Tensor* v = state.find(name);
    if (!v) {
      missing.push_back(name);
    } else if (!(v->shape() == t.shape())) {
      std::ostringstream msg;
      msg << "\"" << name << "\": expected shape " << t.shape() << ", got " << v->shape();
      mismatched.push_back(msg.str());
    }
  }
  for (const auto& [name, v] : state)
    if (!own.contains(name)) unexpected.push_back(name);
  if (!mismatched.empty() || (strict && (!missing.empty() || !unexpected.empty()))) {
    std::ostringstream msg;
    msg << "[load_state_dict] error(s) loading the state dict of " << type_name_ << ":";
    if (strict && !missing.empty()) msg << " missing keys: " << join_keys(missing) << ".";
    if (strict && !unexpected.empty()) msg << " unexpected keys: " << join_keys(unexpected) << ".";
    for (const std::string& m : mismatched) msg << " size mismatch for " << m << ".";
    fail(msg.str());
  }
  NoGradGuard no_grad;
  for (const auto& [name, t] : own)
    if (const Tensor* v = state.find(name)) {
      Tensor target = *find_tensor(name);
      target.copy_(*v);
    }
  return {missing, unexpected};
}

void Module::train(bool on) {
  training_ = on;
  for (const auto& [name, m] : children_)
    if (m) m->train(on);
}

void Module::zero_grad(bool set_to_none) {
  autograd::GradTrace* trace = autograd::GradTrace::current();
  for (Tensor& p : parameters()) {
    if (trace) trace->cleared(p);
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      // In place, as torch: a gradient that is a view (DDP's gradient_as_bucket_view) stays one.
      NoGradGuard no_grad;
      Tensor zeroed = g.detach();
      zeroed.zero_();
      p.set_grad(zeroed);
    }
  }
}

void Module::requires_grad_(bool on) {
  for (Tensor& p : parameters()) p.requires_grad_(on);
}

void Module::to(DType dtype) {
  if (!is_floating(dtype)) fail<TypeError>("[Module.to] modules only convert to floating dtypes, got ", dtype);
  NoGradGuard no_grad;
  auto convert = [&](const Tensor& t) {
    if (t.defined() && t.is_floating_point() && t.dtype() != dtype) t.set_data(t.to(dtype));
  };
  for (Tensor& p : parameters()) convert(p);
  for (Tensor& b : buffers()) convert(b);
}

void Module::to(Device device) {
  NoGradGuard no_grad;
  auto move = [&](const Tensor& t) {
    if (t.defined() && t.device() != device) t.set_data(t.to(device));
  };
  for (Tensor& p : parameters()) move(p);
  for (Tensor& b : buffers()) move(b);
}

void Module::apply(const std::function<void(Module&)>& fn) {
  for (const auto& [name, m] : children_)
    if (m) m->apply(fn);
  fn(*this);
}

int64_t Module::num_parameters(bool trainable_only) const {
  int64_t n = 0;
  for (const Tensor& p : parameters())
    if (!trainable_only || p.requires_grad()) n += p.numel();
  return n;
}

// ---- copying ------------------------------------------------------------------------------

std::shared_ptr<Module> Module::clone() const {
  CloneMemo memo;
  return memo.module(*this);
}

std::shared_ptr<Module> Module::copy_self() const { return std::shared_ptr<Module>(new Module(*this)); }

std::shared_ptr<Module> Module::clone_into(CloneMemo& memo) const {
  std::shared_ptr<Module> copy = copy_self();
  // A layer without UG_CLONEABLE inherits its base's copy_self, which would cut it down.
  const Module& made = *copy;
  if (typeid(made) != typeid(*this))
    fail<TypeError>("[clone] ", type_name_, " cannot be copied: its class does not say how (UG_CLONEABLE)");
  copy->copy_entries(memo);
  copy->rebind(memo);
  return copy;
}

void Module::copy_entries(CloneMemo& memo) {
  for (auto& [name, t] : parameters_) t = memo.tensor(t);
  for (auto& [name, e] : buffers_) e.value = memo.tensor(e.value);
  for (auto& [name, m] : children_)
    if (m) m = memo.module(*m);
}

// ---- forward ------------------------------------------------------------------------------

Tensor Module::forward(const Tensor&) {
  fail<RuntimeError>("[", type_name_, "] has no one-tensor forward; call its forward(...) with its own arguments");
}

Tensor Module::operator()(const Tensor& x) {
  if (pre_hooks_.empty() && hooks_.empty()) return forward(x);
  Tensor input = x;
  for (auto& h : pre_hooks_)
    if (h.on_tensor)
      if (std::optional<Tensor> r = h.on_tensor(*this, input)) input = *r;
  Tensor out = forward(input);
  for (auto& h : hooks_)
    if (h.on_tensor)
      if (std::optional<Tensor> r = h.on_tensor(*this, input, out)) out = *r;
  return out;
}

std::any Module::call(std::any inputs, const std::function<std::any(const std::any&)>& run) {
  for (auto& h : pre_hooks_)
    if (h.on_any)
      if (std::optional<std::any> r = h.on_any(*this, inputs)) inputs = std::move(*r);
  std::any out = run(inputs);
  for (auto& h : hooks_)
    if (h.on_any)
      if (std::optional<std::any> r = h.on_any(*this, inputs, out)) out = std::move(*r);
  return out;
}

std::vector<Tensor> Module::call(std::vector<Tensor> inputs,
                                 const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& run) {
  std::any out = call(std::any(std::move(inputs)),
                      [&](const std::any& in) { return std::any(run(std::any_cast<const std::vector<Tensor>&>(in))); });
  return std::any_cast<std::vector<Tensor>>(std::move(out));
}

size_t Module::register_forward_pre_hook(ForwardPreHook hook, AnyForwardPreHook any_hook) {
  pre_hooks_.push_back({next_hook_id_, std::move(hook), std::move(any_hook)});
  return next_hook_id_++;
}

size_t Module::register_forward_hook(ForwardHook hook, AnyForwardHook any_hook) {
  hooks_.push_back({next_hook_id_, std::move(hook), std::move(any_hook)});
  return next_hook_id_++;
}

void Module::remove_hook(size_t id) {
  std::erase_if(pre_hooks_, [&](const auto& h) { return h.id == id; });
  std::erase_if(hooks_, [&](const auto& h) { return h.id == id; });
}

std::vector<size_t> Module::hook_ids() const {
  std::vector<size_t> ids;
  for (const auto& h : pre_hooks_) ids.push_back(h.id);
  for (const auto& h : hooks_) ids.push_back(h.id);
  return ids;
}

// ---- printing -----------------------------------------------------------------------------

void Module::print(std::string& out, int indent) const {
  // As torch's __repr__: one line of extra_repr and no children stays inline; otherwise each
  // line of extra_repr, then each child, on a line of its own.
  const std::string extra = extra_repr();
  out += type_name_ + "(";
  if (extra.find('\n') == std::string::npos && children_.empty()) {
    out += extra + ")";
    return;
  }
  const std::string pad(indent + 2, ' ');
  size_t start = 0;
  while (!extra.empty() && start <= extra.size()) {
    const size_t end = std::min(extra.find('\n', start), extra.size());
    out += "\n" + pad + extra.substr(start, end - start);
    start = end + 1;
  }
  for (const auto& [name, m] : children_) {
    if (!m) continue;
    out += "\n" + pad + "(" + name + "): ";
    m->print(out, indent + 2);
  }
  out += "\n" + std::string(indent, ' ') + ")";
}

std::string Module::to_string() const {
  std::string out;
  print(out, 0);
  return out;
}

namespace {
/** Keras's layer.name for Keras's layer classes ("dense_1"), "" for the others. */
std::string keras_name(const Module& m) {
  if (const auto* l = dynamic_cast<const DenseImpl*>(&m)) return l->name();
  if (const auto* l = dynamic_cast<const KerasConvImpl*>(&m)) return l->name();
  if (const auto* l = dynamic_cast<const KerasPoolImpl*>(&m)) return l->name();
  if (const auto* l = dynamic_cast<const KerasGlobalPoolImpl*>(&m)) return l->name();
  if (const auto* l = dynamic_cast<const BatchNormalizationImpl*>(&m)) return l->name();
  if (const auto* l = dynamic_cast<const MergeImpl*>(&m)) return l->name();
  if (const auto* l = dynamic_cast<const KerasActivationImpl*>(&m)) return l->name();
  if (const auto* l = dynamic_cast<const FunctionalImpl*>(&m)) return l->name();
  return "";
}
}  // namespace

std::string Module::summary(const Shape& input_shape, std::optional<DType> dtype) {
  using Row = detail::SummaryRow;
  std::vector<Row> rows;
  std::vector<std::pair<std::shared_ptr<Module>, size_t>> hooked;
  // Hook the layers: the direct children (Keras lists a model's layers, not their insides),
  // looking through ModuleList / ModuleDict, which hold layers but are never called. A model
  // without children is one row.
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> layers;
  std::function<void(const std::string&, const Module&)> collect = [&](const std::string& prefix,
                                                                       const Module& parent) {
    for (auto& [name, m] : parent.named_children()) {
      if (m->type_name() == "ModuleList" || m->type_name() == "ModuleDict") collect(prefix + name + ".", *m);
      else layers.emplace_back(prefix + name, m);
    }
  };
  collect("", *this);
  for (auto& [child, m] : layers) {
    // A row shows the layer's Keras name where it has one (as Keras's summary), else its attribute name.
    const std::string keras = keras_name(*m);
    size_t id = m->register_forward_hook(
        [&rows, name = keras.empty() ? child : keras](Module& mod, const Tensor&, const Tensor& out) {
          rows.push_back({name, mod.type_name(), out.shape(), mod.num_parameters()});
          return std::optional<Tensor>();
        });
    hooked.emplace_back(m, id);
  }
  Tensor out;
  {
    NoGradGuard no_grad;
    bool was_training = training_;
    eval();
    try {
      out = forward(zeros(Dims(input_shape.begin(), input_shape.end()), {.dtype = dtype, .device = {}}));
    } catch (...) {
      train(was_training);
      for (auto& [m, id] : hooked) m->remove_hook(id);
      throw;
    }
    train(was_training);
  }
  for (auto& [m, id] : hooked) m->remove_hook(id);
  if (layers.empty()) rows.push_back({"", type_name_, out.shape(), num_parameters()});

  return detail::summary_table(type_name_, rows, num_parameters(), num_parameters(true));
}

std::string detail::summary_table(const std::string& model, const std::vector<detail::SummaryRow>& rows, int64_t total,
                                  int64_t trainable) {
  using Row = detail::SummaryRow;
  auto shape_text = [](const Shape& s) {
    std::string t = "(None";
    for (size_t i = 1; i < s.size(); ++i) t += ", " + std::to_string(s[i]);
    return t + (s.size() == 1 ? ",)" : ")");
  };
  std::vector<std::array<std::string, 3>> cells;
  for (const Row& r : rows)
    cells.push_back(
        {r.name.empty() ? r.type : r.name + " (" + r.type + ")", shape_text(r.shape), std::to_string(r.params)});
  size_t w0 = 12, w1 = 12, w2 = 7;
  for (auto& c : cells) {
    w0 = std::max(w0, c[0].size());
    w1 = std::max(w1, c[1].size());
    w2 = std::max(w2, c[2].size());
  }
  auto pad = [](const std::string& s, size_t w) { return s + std::string(w - std::min(w, s.size()), ' '); };
  const size_t width = w0 + w1 + w2 + 6;
  std::ostringstream t;
  t << "Model: \"" << model << "\"\n" << std::string(width, '=') << "\n";
  t << pad("Layer (type)", w0) << "   " << pad("Output Shape", w1) << "   "
    << "Param #\n";
  t << std::string(width, '=') << "\n";
  for (auto& c : cells) t << pad(c[0], w0) << "   " << pad(c[1], w1) << "   " << c[2] << "\n";
  t << std::string(width, '=') << "\n";
  t << "Total params: " << total << "\nTrainable params: " << trainable
    << "\nNon-trainable params: " << total - trainable << "\n";
  return t.str();
}

// ---- functional use ---------------------------------------------------------------------

TensorDict Module::init(const Tensor& key) {
  if (key.numel() != 2 || key.dtype() != DType::Int64)
    fail<TypeError>("[Module.init] expected a key from ug::random::key (2 int64 words), got shape ", key.shape(),
                    " and dtype ", key.dtype());
  const Tensor words = key.contiguous();
  const int64_t* w = words.data_ptr<int64_t>();
  Generator gen((static_cast<uint64_t>(w[0]) << 32) | static_cast<uint32_t>(w[1]));
  // Draw fresh values into copies: the module's own parameters stay as they were.
  TensorDict saved = state_dict();
  TensorDict fresh;
  {
    ParameterSwap swap(*this, [&] {
      TensorDict copies;
      for (const auto& [name, t] : saved) copies.insert(name, t.clone());
      return copies;
    }());
    GeneratorScope scope(gen);
    NoGradGuard no_grad;
    apply([](Module& m) { m.reset_parameters(); });
    for (const auto& [name, t] : named_parameters()) fresh.insert(name, t);
  }
  return fresh;
}

Tensor Module::apply(const TensorDict& params, const Tensor& x) {
  return functional_call(params, [&] { return forward(x); });
}

ParameterSwap::ParameterSwap(Module& root, const TensorDict& values) {
  for (const auto& [name, t] : values) {
    Tensor* slot = root.find_tensor(name);
    if (!slot) fail<IndexError>("[functional_call] ", root.type_name(), " has no parameter or buffer \"", name, "\"");
    if (!(slot->shape() == t.shape()))
      fail("[functional_call] \"", name, "\" has shape ", slot->shape(), " but was given shape ", t.shape());
    saved_.emplace_back(slot, *slot);
    *slot = t;
  }
}

ParameterSwap::~ParameterSwap() {
  for (auto& [slot, original] : saved_) *slot = std::move(original);
}

}  // namespace ug::nn
