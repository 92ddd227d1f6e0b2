#include "ug/ops/random.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "ug/backend/backend.h"
#include "ug/core/batching.h"
#include "ug/core/type_info.h"
#include "ug/graph/capture.h"
#include "ug/graph/op_call.h"
#include "ug/ops/complex.h"
#include "ug/ops/draw_replay.h"
#include "ug/ops/binary.h"
#include "ug/ops/value_checks.h"

namespace ug {

namespace {

/** Every draw is the op `random`. A program's trace records how to draw again: from the global
 *  generator (a fresh block at each run, as eager code would take) or from the key it is given. */
const graph::OpDef kRandom("random");

/** Each element may use two words of a 4-word block: reserve enough for any kernel layout. */
RandomStream reserve_for(int64_t n) { return default_generator().reserve(4 * static_cast<uint64_t>((n + 1) / 2)); }

DType float_dtype(const Options& opts, const char* op) {
  DType d = opts.dtype.value_or(get_default_dtype());
  if (!is_floating(d)) fail<TypeError>("[", op, "] expects a floating dtype, got ", d);
  return d;
}

void check_key(const Tensor& key) {
  if (key.dtype() != DType::Int64 || key.dim() != 1 || key.size(0) != 2)
    fail<TypeError>(
        "[random] expected a key (an int64 tensor of shape [2], from ug.random.key), "
        "got dtype ",
        key.dtype(), " and shape ", key.shape());
}

std::array<uint32_t, 2> key_words(const Tensor& key) {
  check_key(key);
  Tensor k = key.contiguous();
  const int64_t* p = static_cast<const int64_t*>(k.raw_data());
  return {static_cast<uint32_t>(p[0]), static_cast<uint32_t>(p[1])};
}

Tensor make_key(uint32_t a, uint32_t b) {
  Tensor k = empty({2}, {.dtype = DType::Int64});
  int64_t* p = static_cast<int64_t*>(k.raw_data());
  p[0] = a;
  p[1] = b;
  return k;
}

RandomStream stream(const Tensor& key) { return {key_words(key), 0}; }

/** `num` keys derived from `key`, as a [num, 2] tensor. Counter word 2 set to all ones keeps
 *  key derivation apart from data streams (word 2 = 0). */
Tensor split_key(const Tensor& key, int64_t num) {
  auto k = key_words(key);
  Tensor out = empty({num, 2}, {.dtype = DType::Int64});
  int64_t* p = static_cast<int64_t*>(out.raw_data());
  for (int64_t i = 0; i < num; ++i) {
    auto w = philox4x32(k, {static_cast<uint32_t>(i), static_cast<uint32_t>(i >> 32), 0xffffffffu, 0});
    p[2 * i] = w[0];
    p[2 * i + 1] = w[1];
  }
  return out;
}

/** Counter word 3 = 1 keeps fold_in's keys apart from split's. */
std::array<uint32_t, 4> fold_words(std::array<uint32_t, 2> key, uint64_t data) {
  return philox4x32(key, {static_cast<uint32_t>(data), static_cast<uint32_t>(data >> 32), 0xffffffffu, 1});
}

Tensor fold_key(const Tensor& key, uint64_t data) {
  auto w = fold_words(key_words(key), data);
  return make_key(w[0], w[1]);
}

/** fold_key for each of a batch: keys [*S, 2] and integer data [*S] give keys [*S, 2]. */
Tensor fold_keys(const Tensor& keys, const Tensor& data) {
  const Tensor k = keys.to(Device{}).contiguous(), d = data.to(Device{}).to(DType::Int64).contiguous();
  Dims shape(d.shape().begin(), d.shape().end());
  shape.push_back(2);
  Tensor out = empty(shape, {.dtype = DType::Int64});
  const int64_t* kp = k.data_ptr<int64_t>();
  const int64_t* dp = d.data_ptr<int64_t>();
  int64_t* p = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < d.numel(); ++i) {
    auto w = fold_words({static_cast<uint32_t>(kp[2 * i]), static_cast<uint32_t>(kp[2 * i + 1])},
                        static_cast<uint64_t>(dp[i]));
    p[2 * i] = w[0];
    p[2 * i + 1] = w[1];
  }
  return out;
}

/** A key derived from a key (split, fold_in): an op, so that a program derives it from the key
 *  it is given at each run. */
template <class Derive> Tensor derive_key(const graph::OpDef& def, const Tensor& key, Derive derive) {
  graph::OpCall call(def);
  Tensor out = derive(key);
  if (call.capturing()) call.set_replay([derive](const graph::Tensors& in) { return graph::Tensors{derive(in[0])}; });
  call.finish({&key}, {&out});
  return out;
}

const graph::OpDef kSplit("random_split"), kFoldIn("random_fold_in");

/** t's physical tensor at level lvl, t repeated n times along a new dim 0 where it is not batched there. */
Tensor physical_at(const Tensor& t, int lvl, int64_t n) {
  if (batching::level(t) == lvl) return batching::physical(t, lvl);
  Dims shape{n};
  for (int64_t s : t.shape()) shape.push_back(s);
  return t.unsqueeze(0).expand(shape);
}

/** fold_in with a tensor of data: keys [*S, 2] and data [*S] (S empty but inside vmap). The
 *  batching rule folds each example's data into its key. */
Tensor fold_in_op(const Tensor& key, const Tensor& data) {
  graph::OpCall call(kFoldIn);
  Tensor out;
  if (int lvl = batching::max_level({&key, &data})) {
    const Tensor& batched = batching::level(key) == lvl ? key : data;
    const int64_t n = batching::physical(batched, lvl).size(0);
    out = batching::wrap(fold_in_op(physical_at(key, lvl, n), physical_at(data, lvl, n)), lvl);
  } else {
    out = fold_keys(key, data);
  }
  if (call.capturing())
    call.set_replay([](const graph::Tensors& in) { return graph::Tensors{fold_in_op(in[0], in[1])}; },
                    graph::ReplaySizes::None);
  call.finish({&key, &data}, {&out});
  return out;
}

int64_t numel_of_dims(const Dims& shape) { return numel_of(Shape(shape.begin(), shape.end())); }

enum class Law { Uniform, Normal, Integers, Permutation };

/** What one draw makes: `shape` values of `law` with parameters a, b (low and high, mean and
 *  std), or a permutation of [0, a). */
struct Draw {
  Law law;
  Dims shape;
  double a = 0, b = 0;
  DType dtype = DType::Float32;
  Device device{};
  int64_t low = 0, high = 0;  // Integers' bounds: a double rounds those past 2^53 (and 2^63 - 1 overflowed)
};

/** A permutation of [0, n): indices sorted by 64-bit random keys drawn from the stream. */
Tensor permutation_of(const RandomStream& s, int64_t n) {
  std::vector<std::pair<uint64_t, int64_t>> keyed(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    uint64_t b = s.offset + static_cast<uint64_t>(i) / 2;
    auto w = philox4x32(s.key, {static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32), 0, 0});
    int k = static_cast<int>(i % 2) * 2;
    keyed[static_cast<size_t>(i)] = {(static_cast<uint64_t>(w[k]) << 32) | w[k + 1], i};
  }
  std::sort(keyed.begin(), keyed.end());
  Tensor out = empty({n}, {.dtype = DType::Int64});
  int64_t* p = static_cast<int64_t*>(out.raw_data());
  for (int64_t i = 0; i < n; ++i) p[i] = keyed[static_cast<size_t>(i)].second;
  return out;
}

Tensor fill(const Draw& d, const RandomStream& s) {
  if (d.law == Law::Permutation) return permutation_of(s, static_cast<int64_t>(d.a));
  Tensor out = empty(d.shape, {.dtype = d.dtype, .device = d.device});
  Backend& backend = backend_for(d.device);
  if (d.law == Law::Uniform) backend.uniform(out, s, d.a, d.b);
  else if (d.law == Law::Normal) backend.normal(out, s, d.a, d.b);
  else backend.randint(out, s, d.low, d.high);
  return out;
}

int64_t count(const Draw& d) { return d.law == Law::Permutation ? static_cast<int64_t>(d.a) : numel_of_dims(d.shape); }

/** What a draw from the global generator does inside the vmaps open from the `first` on:
 *  the levels and sizes of those that draw for each example (randomness Different), outermost
 *  first. Fails, naming `op`, when any open vmap refuses draws. */
struct DrawApart {
  std::vector<int> levels;
  Dims sizes;
};
DrawApart draw_apart(const char* op, size_t first) {
  DrawApart apart;
  const auto& vmaps = batching::open_vmaps();
  for (size_t i = 0; i < vmaps.size(); ++i) {
    const batching::VmapFrame& f = vmaps[i];
    if (f.randomness == Randomness::Error)
      fail<RuntimeError>("[", op,
                         "] draws from the global generator inside vmap, whose randomness is 'error': give vmap "
                         "randomness='different' (a draw for each example) or 'same' (one draw for all), draw "
                         "outside vmap, or draw from a key (ug.random.normal(key, shape))");
    if (f.randomness == Randomness::Different && f.level > 0 && i >= first) {
      apart.levels.push_back(f.level);
      apart.sizes.push_back(f.size);
    }
  }
  return apart;
}

/** d from the global generator, drawn for each of `batch` examples: [*batch, *d.shape]. */
Tensor fill_global(const Draw& d, const Dims& batch) {
  if (d.law != Law::Permutation || batch.empty()) {
    Draw all = d;
    all.shape = batch;
    for (int64_t s : d.shape) all.shape.push_back(s);
    return fill(all, reserve_for(count(all)));
  }
  const int64_t n = static_cast<int64_t>(d.a), examples = numel_of_dims(batch);
  Dims shape = batch;
  shape.push_back(n);
  Tensor out = empty(shape, {.dtype = DType::Int64});
  for (int64_t i = 0; i < examples; ++i)
    std::copy_n(fill(d, reserve_for(n)).data_ptr<int64_t>(), n, out.data_ptr<int64_t>() + i * n);
  return out;
}

Tensor batched_at(Tensor physical, const std::vector<int>& levels) {
  for (int lvl : levels) physical = batching::wrap(physical, lvl);  // outermost first
  return physical;
}

/** One draw from `key`, or from the global generator (`op` names it in errors). Inside vmap a
 *  draw from the global generator follows the vmaps' randomness (core/batching.h). Under a
 *  capture, the vmaps opened inside the trace batch the draw now, in the physical values its
 *  graph holds; those around it batch each run of the program, which draws again. */
Tensor draw(const Draw& d, const Tensor* key = nullptr, const char* op = "random") {
  ops::DrawReplay* replay = key ? nullptr : ops::DrawReplay::current();
  if (replay && replay->replaying()) return replay->next(Shape(d.shape.begin(), d.shape.end()), d.dtype);
  graph::OpCall call(kRandom);
  const auto* capture = graph::detail::current_capture;
  const bool vmapped = !key && !batching::open_vmaps().empty();
  const DrawApart apart = vmapped ? draw_apart(op, capture ? capture->vmaps_outside() : 0) : DrawApart{};
  Tensor out = key ? fill(d, stream(*key)) : fill_global(d, apart.sizes);
  if (call.capturing()) {
    // A draw from the global generator advances it, so a program keeps it though unread.
    if (!key) call.set_attrs({{"effect", int64_t(1)}});
    call.set_replay([d, sizes = apart.sizes, keyed = key != nullptr](const graph::Tensors& in) {
      if (keyed) return graph::Tensors{fill(d, stream(in[0]))};
      if (batching::open_vmaps().empty()) return graph::Tensors{fill_global(d, sizes)};
      const DrawApart around = draw_apart("random", 0);  // at a run, every open vmap is around the program
      Dims all = around.sizes;
      for (int64_t s : sizes) all.push_back(s);
      return graph::Tensors{batched_at(fill_global(d, all), around.levels)};
    });
  }
  if (key) call.finish({key}, {&out});
  else call.finish({}, {&out});
  Tensor drawn = batched_at(std::move(out), apart.levels);
  if (replay) replay->record(drawn);
  return drawn;
}

Draw uniform_draw(const Dims& shape, double low, double high, DType dtype, Device device) {
  return {Law::Uniform, shape, low, high, dtype, device};
}
Draw normal_draw(const Dims& shape, double mean, double std, DType dtype, Device device) {
  if (std < 0) fail("[normal] std must be non-negative, got ", std);
  return {Law::Normal, shape, mean, std, dtype, device};
}
Draw integers_draw(const Dims& shape, int64_t low, int64_t high, DType dtype, Device device) {
  if (low >= high) fail("[randint] expects low < high, got low=", low, " high=", high);
  return {Law::Integers, shape, static_cast<double>(low), static_cast<double>(high), dtype, device, low, high};
}
Draw permutation_draw(int64_t n) {
  if (n < 0) fail("[permutation] n must be non-negative, got ", n);
  return {Law::Permutation, {n}, static_cast<double>(n), 0, DType::Int64, {}};
}

}  // namespace

namespace {

/** A complex dtype's draw: its parts drawn as a real [..., 2] tensor, viewed as complex. */
Tensor complex_draw(Tensor (*f)(const Dims&, Options), const Dims& shape, Options opts) {
  Dims parts = shape;
  parts.push_back(2);
  opts.dtype = to_real(*opts.dtype);
  return view_as_complex(f(parts, opts));
}

}  // namespace

Tensor rand(const Dims& shape, Options opts) {
  if (opts.dtype && is_complex(*opts.dtype)) return complex_draw(rand, shape, opts);  // each part in [0, 1)
  return draw(uniform_draw(shape, 0, 1, float_dtype(opts, "rand"), opts.device), nullptr, "rand");
}
Tensor randn(const Dims& shape, Options opts) {
  // torch's complex normal: E|z|^2 = 1, so each part has variance 1/2
  if (opts.dtype && is_complex(*opts.dtype)) return complex_draw(randn, shape, opts) * std::sqrt(0.5);
  return draw(normal_draw(shape, 0, 1, float_dtype(opts, "randn"), opts.device), nullptr, "randn");
}
Tensor normal(double mean, double std, const Dims& shape, Options opts) {
  return draw(normal_draw(shape, mean, std, float_dtype(opts, "normal"), opts.device), nullptr, "normal");
}
Tensor randint(int64_t low, int64_t high, const Dims& shape, Options opts) {
  return draw(integers_draw(shape, low, high, opts.dtype.value_or(DType::Int64), opts.device), nullptr, "randint");
}
Tensor randperm(int64_t n, Options opts) {
  Tensor p = draw(permutation_draw(n), nullptr, "randperm");
  return p.to(opts.dtype.value_or(DType::Int64)).to(opts.device);
}

Tensor get_rng_state() {
  auto s = default_generator().get_state();
  Tensor out = empty({2}, {.dtype = DType::Int64});
  out.data_ptr<int64_t>()[0] = static_cast<int64_t>(s[0]);
  out.data_ptr<int64_t>()[1] = static_cast<int64_t>(s[1]);
  return out;
}

void set_rng_state(const Tensor& state) {
  if (!state.defined() || state.numel() != 2 || state.dtype() != DType::Int64)
    fail<ValueError>("[set_rng_state] expected the int64 tensor of 2 elements from get_rng_state()",
                     state.defined() ? detail::cat(", got ", state.dtype(), " of shape ", state.shape()) : "");
  Tensor s = state.to(Device{}).contiguous();
  const int64_t* p = s.data_ptr<int64_t>();
  default_generator().set_state({static_cast<uint64_t>(p[0]), static_cast<uint64_t>(p[1])});
}
Tensor rand_like(const Tensor& t) { return rand(t.shape(), {.dtype = t.dtype(), .device = t.device()}); }
Tensor randn_like(const Tensor& t) { return randn(t.shape(), {.dtype = t.dtype(), .device = t.device()}); }

Tensor& uniform_(Tensor& t, double low, double high) {
  return t.copy_(draw(uniform_draw(Dims(t.shape().begin(), t.shape().end()), low, high, t.dtype(), t.device()), nullptr,
                      "uniform_"));
}
Tensor& normal_(Tensor& t, double mean, double std) {
  return t.copy_(draw(normal_draw(Dims(t.shape().begin(), t.shape().end()), mean, std, t.dtype(), t.device()), nullptr,
                      "normal_"));
}

Tensor bernoulli(const Tensor& p) {
  if (!p.is_floating_point()) fail<TypeError>("[bernoulli] expects floating probabilities, got ", p.dtype());
  return (rand_like(p) < p).to(p.dtype());
}

Tensor& bernoulli_(Tensor& t, double p) {
  if (p < 0 || p > 1) fail("[bernoulli_] p must be in [0, 1], got ", p);
  return t.copy_(rand(Dims(t.shape().begin(), t.shape().end()), {.device = t.device()}) < p);
}

Tensor& random_(Tensor& t, int64_t from, std::optional<int64_t> to) {
  const DType dtype = t.dtype();
  if (is_complex(dtype)) fail<TypeError>("[random_] is not supported for complex tensors (dtype ", dtype, ")");
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  int64_t largest;  // the default top of the range, capped at int64's largest
  if (is_floating(dtype)) {
    largest = int64_t{1} << (1 - std::ilogb(finfo(dtype).eps));  // 2^digits, with every integer below it exact
  } else {
    const IntInfo info = dtype == DType::Bool ? IntInfo{1, 0, 1} : iinfo(dtype);
    largest = info.max > uint64_t{kMax} ? kMax : static_cast<int64_t>(info.max);
    auto check = [&](const char* name, int64_t v) {
      if (v < info.min || v > largest)
        fail<RuntimeError>("[random_] ", name, " is out of bounds for ", dtype, ": ", v, " is outside [", info.min,
                           ", ", info.max, "]");
    };
    check("from", from);
    if (to && *to != kMin) check("to - 1", *to - 1);
  }
  if (to && from >= *to)
    fail<RuntimeError>("[random_] expects 'from' to be less than 'to', but got from=", from, " >= to=", *to);
  const Dims shape(t.shape().begin(), t.shape().end());
  const Options opts{.device = t.device()};
  Tensor draw;
  if (to || largest < kMax) draw = randint(from, to ? *to : largest + 1, shape, opts);
  else if (from > kMin) draw = randint(from - 1, kMax, shape, opts) + 1;  // [from - 1, 2^63 - 1) shifted up
  else draw = randint(from, kMax, shape, opts);  // every int64: randint's exclusive high leaves out the largest
  return t.copy_(draw);
}

Tensor& random_(Tensor& t, int64_t to) { return random_(t, 0, to); }

Tensor& random_(Tensor& t) { return random_(t, 0, std::nullopt); }

Tensor multinomial(const Tensor& weights, int64_t num_samples, bool replacement) {
  if (!weights.is_floating_point() || weights.dim() < 1 || weights.dim() > 2)
    fail<RuntimeError>("[multinomial] expects 1-d or 2-d floating weights, got ", weights.dtype(), " ",
                       weights.shape());
  const int64_t n = weights.size(-1);
  if (num_samples <= 0) fail<RuntimeError>("[multinomial] num_samples must be positive, got ", num_samples);
  if (n == 0) fail<RuntimeError>("[multinomial] needs at least one category");
  const Tensor w = weights.detach().to(DType::Float64);
  if (!ops::all_true((w >= 0.0).logical_and(w.isfinite())))
    fail<RuntimeError>("[multinomial] weights must be finite and non-negative");
  const Tensor positive = (w > 0.0).sum(Dims{-1});
  if (!ops::all_true(positive > 0)) fail<RuntimeError>("[multinomial] every row's weights must sum to more than 0");
  if (!replacement && num_samples > n)
    fail<RuntimeError>("[multinomial] cannot draw ", num_samples, " samples without replacement from ", n,
                       " categories");
  // Gumbel-max: the argmax of log w + Gumbel noise is a draw with probability w / sum(w); the
  // top num_samples of one noise draw are a draw without replacement (Gumbel-top-k), in which
  // categories of weight 0 (log -inf) come last, as torch draws them once the others are out.
  auto gumbel = [&](const Dims& shape) {
    const Tensor u = rand(shape, {.dtype = DType::Float64, .device = w.device()});
    return -(-(1.0 - u).log()).log();
  };
  const Tensor logits = w.log();
  if (!replacement) {
    Dims shape(w.shape().begin(), w.shape().end());
    return (logits + gumbel(shape)).topk(num_samples, -1).second;
  }
  Dims shape(w.shape().begin(), w.shape().end() - 1);
  shape.push_back(num_samples);
  shape.push_back(n);
  return (logits.unsqueeze(-2) + gumbel(shape)).argmax(-1);
}

namespace random {

Tensor key(uint64_t seed) { return make_key(static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(seed)); }

Tensor split(const Tensor& key, int64_t num) {
  if (num < 1) fail("[random.split] num must be positive, got ", num);
  return derive_key(kSplit, key, [num](const Tensor& k) { return split_key(k, num); });
}

Tensor fold_in(const Tensor& key, uint64_t data) {
  return derive_key(kFoldIn, key, [data](const Tensor& k) { return fold_key(k, data); });
}

Tensor fold_in(const Tensor& key, const Tensor& data) {
  if (!data.defined() || data.dim() != 0 || !is_integral(data.dtype(), /*include_bool=*/true))
    fail<TypeError>("[random.fold_in] data must be an integer scalar (an int or a 0-d integer or bool tensor), got ",
                    data.defined() ? detail::cat(data.dtype(), " of shape ", data.shape()) : "none");
  check_key(key);
  return fold_in_op(key, data);
}

Tensor uniform(const Tensor& key, const Dims& shape, double minval, double maxval, std::optional<DType> dtype) {
  const DType d = dtype.value_or(get_default_dtype());
  if (!is_floating(d)) fail<TypeError>("[random.uniform] expects a floating dtype, got ", d);
  return draw(uniform_draw(shape, minval, maxval, d, {}), &key);
}
Tensor normal(const Tensor& key, const Dims& shape, std::optional<DType> dtype) {
  const DType d = dtype.value_or(get_default_dtype());
  if (!is_floating(d)) fail<TypeError>("[random.normal] expects a floating dtype, got ", d);
  return draw(normal_draw(shape, 0, 1, d, {}), &key);
}
Tensor randint(const Tensor& key, const Dims& shape, int64_t minval, int64_t maxval, DType dtype) {
  return draw(integers_draw(shape, minval, maxval, dtype, {}), &key);
}
Tensor bernoulli(const Tensor& key, double p, const Dims& shape) {
  if (p < 0 || p > 1) fail("[random.bernoulli] p must be in [0, 1], got ", p);
  return uniform(key, shape).lt(p);
}
Tensor categorical(const Tensor& key, const Tensor& logits, int64_t axis, std::optional<Dims> shape) {
  if (!logits.is_floating_point() || logits.dim() == 0)
    fail("[random.categorical] expects floating logits of at least 1 dim, got ", logits.dtype(), " ", logits.shape());
  const int64_t rank = logits.dim();
  if (axis < -rank || axis >= rank) fail("[random.categorical] axis ", axis, " out of range for ", logits.shape());
  const Tensor last = logits.movedim(axis < 0 ? axis + rank : axis, -1);
  Dims out(last.shape().begin(), last.shape().end() - 1);
  if (shape) {
    if (broadcast_shapes(Shape(shape->begin(), shape->end()), Shape(out.begin(), out.end()), "random.categorical") !=
        Shape(shape->begin(), shape->end()))
      fail("[random.categorical] shape ", Shape(shape->begin(), shape->end()), " must broadcast with the logits' ",
           Shape(out.begin(), out.end()));
    out = *shape;
  }
  Dims noise_shape = out;
  noise_shape.push_back(last.size(-1));
  // Gumbel-max: argmax(logits + Gumbel noise) is a draw from softmax(logits); u > 0 keeps it finite.
  const Tensor u = uniform(key, noise_shape, std::numeric_limits<float>::min(), 1.0, DType::Float32);
  return (last.to(DType::Float32) - (-u.log()).log()).argmax(-1);
}

Tensor permutation(const Tensor& key, int64_t n) { return draw(permutation_draw(n), &key); }
Tensor permutation(const Tensor& key, const Tensor& x) {
  if (x.dim() == 0) fail("[random.permutation] x must have at least one dimension");
  return x.index_select(0, draw(permutation_draw(x.size(0)), &key));
}

}  // namespace random
namespace ops {

namespace {
thread_local DrawReplay* t_draw_replay = nullptr;
}  // namespace

DrawReplay::DrawReplay(std::vector<Tensor>& draws, Mode mode) : draws_(draws), mode_(mode), previous_(t_draw_replay) {
  t_draw_replay = this;
}

DrawReplay::~DrawReplay() { t_draw_replay = previous_; }

DrawReplay* DrawReplay::current() { return t_draw_replay; }

void DrawReplay::record(const Tensor& out) { draws_.push_back(out); }

Tensor DrawReplay::next(const Shape& shape, DType dtype) {
  if (next_ >= draws_.size() || draws_[next_].shape() != shape || draws_[next_].dtype() != dtype)
    fail<RuntimeError>("[checkpoint] the region drew ", dtype_name(dtype), " ", shape_str(shape),
                       " when run again, which its first run did not draw there (", draws_.size(),
                       " draws): it must compute the same way each time");
  return draws_[next_++];
}

}  // namespace ops

}  // namespace ug
