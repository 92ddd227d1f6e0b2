// Matrix products. Every product here ends in one backend matmul over [B, M, K] x [B, K, N]
// views: broadcast batch dims become stride-0 views and transposed operands keep their
// strides, so data is copied only when dims cannot be merged into that form.
#include "ug/ops/linalg.h"

#include <algorithm>
#include <string>

#include "ug/backend/backend.h"
#include "ug/graph/op_call.h"
#include "ug/ops/autocast.h"
#include "ug/ops/binary.h"
#include "ug/ops/complex.h"
#include "ug/ops/reduce.h"

namespace ug {

namespace {

/** The dtype both operands are multiplied in. Like PyTorch, matrix products do not promote:
 *  the operands must share a dtype. */
DType common_dtype(const Tensor& a, const Tensor& b, const char* op) {
  if (a.device() != b.device())
    fail<RuntimeError>("[", op, "] expected both tensors on one device, got ", a.device(), " and ", b.device());
  if (a.dtype() != b.dtype())
    fail<TypeError>("[", op, "] expected both operands to have the same dtype, got ", a.dtype(), " and ", b.dtype(),
                    " (shapes ", a.shape(), " and ", b.shape(), "); convert one with .to()");
  DType t = a.dtype();
  if (t == DType::Bool)
    fail<TypeError>("[", op, "] not supported for dtypes ", a.dtype(), " and ", b.dtype(), " (shapes ", a.shape(),
                    " and ", b.shape(), ")");
  return t;
}

const graph::OpDef kMatmul("matmul", graph::Autocast::Lower);

/** out[b] = a[b] @ b[b] for [B, M, K] x [B, K, N] operands of one dtype. The gradients are
 *  products too: g @ b^H and a^H @ g (transposes are views the kernel reads in place; the
 *  conjugates are the operands themselves unless complex). Inside matmul or bmm its call is
 *  nested, so the capture sees only theirs. */
Tensor batched_product(const Tensor& a, const Tensor& b) {
  graph::OpCall call(kMatmul);
  Tensor out;
  if (int lvl = batching::max_level({&a, &b})) {
    // vmap: fold the vmap batch into the product's batch, [V, B, M, K] -> [V*B, M, K].
    Tensor pa = batching::physical(a, lvl), pb = batching::physical(b, lvl);
    const int64_t v = batching::level(a) == lvl ? pa.size(0) : pb.size(0);
    if (batching::level(a) != lvl) pa = pa.unsqueeze(0).expand({v, a.size(0), a.size(1), a.size(2)});
    if (batching::level(b) != lvl) pb = pb.unsqueeze(0).expand({v, b.size(0), b.size(1), b.size(2)});
    Tensor flat = batched_product(pa.reshape({-1, a.size(1), a.size(2)}), pb.reshape({-1, b.size(1), b.size(2)}));
    out = batching::wrap(flat.view({v, a.size(0), a.size(1), b.size(2)}), lvl);
  } else {
    out = empty({a.size(0), a.size(1), b.size(2)}, {.dtype = a.dtype(), .device = a.device()});
    backend_for(a.device()).matmul(a, b, out);
  }
  call.finish(
      {&a, &b}, {&out}, {graph::input(a), graph::input(b)},
      [](graph::Saved s, graph::Tensors&& g) {
        Tensor ga = batched_product(g[0], conj(s[1]).transpose(1, 2));
        Tensor gb = batched_product(conj(s[0]).transpose(1, 2), g[0]);
        return graph::Tensors{ga, gb};
      },
      [&](const graph::Tensors& t) {
        Tensor ta = t[0].defined() ? batched_product(t[0], b) : Tensor();
        Tensor tb = t[1].defined() ? batched_product(a, t[1]) : Tensor();
        return graph::Tensors{ta.defined() && tb.defined() ? ta + tb : ta.defined() ? ta : tb};
      });
  return out;
}

Shape concat(const Shape& head, std::initializer_list<int64_t> tail) {
  Shape out = head;
  for (int64_t n : tail) out.push_back(n);
  return out;
}

/** The leading (batch) dims of a [..., rows, cols] tensor. */
Shape batch_of(const Tensor& x) { return Shape(x.shape().begin(), x.shape().end() - 2); }

/** x [..., R, C] broadcast to batch + [R, C] and seen as [B, R, C]; merging broadcast batch
 *  dims copies only when their strides don't line up. */
Tensor as_batched(const Tensor& x, const Shape& batch) {
  int64_t rows = x.size(-2), cols = x.size(-1);
  return x.expand(concat(batch, {rows, cols})).reshape({numel_of(batch), rows, cols});
}

Shape broadcast_batches(const Tensor& a, const Tensor& b, const Shape& a0, const Shape& b0) {
  Shape ba = batch_of(a), bb = batch_of(b);
  size_t n = std::max(ba.size(), bb.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - ba.size() ? 1 : ba[i - (n - ba.size())];
    int64_t db = i < n - bb.size() ? 1 : bb[i - (n - bb.size())];
    if (da != db && da != 1 && db != 1)
      fail("[matmul] batch dims of shapes ", a0, " and ", b0, " cannot be broadcast together (", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

void require_dims(const Tensor& a, const Tensor& b, int64_t n, const char* op) {
  if (a.dim() != n || b.dim() != n)
    fail("[", op, "] expected two ", n, "-D tensors, got shapes ", a.shape(), " and ", b.shape());
}

}  // namespace

Tensor matmul(const Tensor& a0, const Tensor& b0) {
  if (autocast::applies(kMatmul)) [[unlikely]]
    return autocast::call(kMatmul, matmul, a0, b0);
  graph::OpCall call(kMatmul);
  if (a0.dim() == 0 || b0.dim() == 0)
    fail("[matmul] both arguments need at least 1 dimension, got shapes ", a0.shape(), " and ", b0.shape());
  DType dtype = common_dtype(a0, b0, "matmul");
  // A 1-D operand is a row (left) or column (right) vector; that dim is dropped at the end.
  const bool a_vec = a0.dim() == 1, b_vec = b0.dim() == 1;
  Tensor a = a_vec ? a0.to(dtype).unsqueeze(0) : a0.to(dtype);
  Tensor b = b_vec ? b0.to(dtype).unsqueeze(1) : b0.to(dtype);
  const int64_t M = a.size(-2), K = a.size(-1), N = b.size(-1);
  if (b.size(-2) != K)
    fail("[matmul] shapes ", a0.shape(), " and ", b0.shape(), " cannot be multiplied (", K, " vs ", b.size(-2),
         "), dtypes ", a0.dtype(), " and ", b0.dtype());
  Shape batch = broadcast_batches(a, b, a0.shape(), b0.shape());
  Tensor out;
  if (b.dim() == 2 && a.dim() > 2) {
    // A shared right matrix: fold the left batch into rows, one [B*M, K] @ [K, N] product.
    Tensor rows = a.reshape({1, numel_of(batch) * M, K});
    out = batched_product(rows, b.unsqueeze(0));
  } else {
    out = batched_product(as_batched(a, batch), as_batched(b, batch));
  }
  out = out.view(concat(batch, {M, N}));
  Dims drop;
  if (a_vec) drop.push_back(out.dim() - 2);
  if (b_vec) drop.push_back(out.dim() - 1);
  if (!drop.empty()) out = out.squeeze(drop);
  call.finish({&a0, &b0}, {&out});
  return out;
}

Tensor mm(const Tensor& a, const Tensor& b) {
  require_dims(a, b, 2, "mm");
  if (a.size(1) != b.size(0))
    fail("[mm] shapes ", a.shape(), " and ", b.shape(), " cannot be multiplied (", a.size(1), " vs ", b.size(0), ")");
  return matmul(a, b);
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  if (autocast::applies(kMatmul)) [[unlikely]]
    return autocast::call(kMatmul, bmm, a, b);
  require_dims(a, b, 3, "bmm");
  if (a.size(0) != b.size(0))
    fail("[bmm] batch sizes of shapes ", a.shape(), " and ", b.shape(), " differ (", a.size(0), " vs ", b.size(0), ")");
  if (a.size(2) != b.size(1))
    fail("[bmm] shapes ", a.shape(), " and ", b.shape(), " cannot be multiplied (", a.size(2), " vs ", b.size(1), ")");
  graph::OpCall call(kMatmul);
  DType dtype = common_dtype(a, b, "bmm");
  Tensor out = batched_product(a.to(dtype), b.to(dtype));
  call.finish({&a, &b}, {&out});
  return out;
}

Tensor dot(const Tensor& a, const Tensor& b) {
  if (autocast::active()) [[unlikely]] {  // not on torch's autocast lists: its inputs' dtype
    autocast::ExcludeGuard inputs_dtype;
    return dot(a, b);
  }
  require_dims(a, b, 1, "dot");
  if (a.size(0) != b.size(0))
    fail("[dot] expected 1-D tensors of the same length, got shapes ", a.shape(), " and ", b.shape());
  return matmul(a, b);
}

Tensor outer(const Tensor& a, const Tensor& b) {
  require_dims(a, b, 1, "outer");
  return a.unsqueeze(1) * b.unsqueeze(0);
}

// ---- einsum ---------------------------------------------------------------------------------

namespace {

// Labels are ids: 'A'-'Z' are 0-25 and 'a'-'z' 26-51 (so the implicit output sorts as ASCII),
// the ellipsis dims 52 and up. kEllipsis marks where "..." stood while parsing.
constexpr int kLetters = 52;
constexpr int kEllipsis = -1;

using Labels = std::vector<int>;

std::string label_name(int id) {
  if (id >= kLetters) return "... dim " + std::to_string(id - kLetters);
  return std::string(1, static_cast<char>(id < 26 ? 'A' + id : 'a' + (id - 26)));
}

/** One term's labels, with kEllipsis where "..." stood. */
Labels parse_term(std::string_view term, std::string_view equation) {
  Labels labels;
  for (size_t i = 0; i < term.size(); ++i) {
    char c = term[i];
    if (c == '.') {
      if (term.substr(i, 3) != "..." || std::find(labels.begin(), labels.end(), kEllipsis) != labels.end())
        fail("[einsum] invalid ellipsis in equation '", equation, "': use '...' at most once per term");
      labels.push_back(kEllipsis);
      i += 2;
    } else if (c >= 'A' && c <= 'Z') {
      labels.push_back(c - 'A');
    } else if (c >= 'a' && c <= 'z') {
      labels.push_back(26 + (c - 'a'));
    } else {
      fail("[einsum] invalid subscript '", c, "' in equation '", equation, "': use letters a-z, A-Z");
    }
  }
  return labels;
}

struct Equation {
  std::vector<Labels> inputs;
  std::optional<Labels> output;
};

Equation parse_equation(std::string_view equation) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq.push_back(c);
  Equation out;
  size_t arrow = eq.find("->");
  std::string_view lhs = std::string_view(eq).substr(0, arrow);
  if (arrow != std::string::npos) out.output = parse_term(std::string_view(eq).substr(arrow + 2), equation);
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    out.inputs.push_back(parse_term(lhs.substr(start, comma - start), equation));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

/** A tensor whose dims are named by labels. */
struct Labeled {
  Tensor t;
  Labels labels;
};

/** Replaces "..." by ellipsis labels, right-aligned across operands like broadcasting. */
Labels expand_ellipsis(const Labels& term, int64_t ndim, int64_t ellipsis_dims, size_t operand) {
  const int64_t named = static_cast<int64_t>(term.size()) - std::count(term.begin(), term.end(), kEllipsis);
  const bool has_ellipsis = named != static_cast<int64_t>(term.size());
  if (has_ellipsis ? named > ndim : named != ndim)
    fail("[einsum] operand ", operand, " has ", ndim, " dims but its subscripts name ", named,
         has_ellipsis ? " (plus '...')" : "");
  Labels out;
  for (int l : term) {
    if (l != kEllipsis) {
      out.push_back(l);
      continue;
    }
    for (int64_t j = ellipsis_dims - (ndim - named); j < ellipsis_dims; ++j)
      out.push_back(kLetters + static_cast<int>(j));
  }
  return out;
}

/** Repeated labels in one operand ("ii") select its diagonal. */
Labeled take_diagonals(Labeled x) {
  for (size_t i = 0; i < x.labels.size(); ++i)
    for (size_t j = i + 1; j < x.labels.size(); ++j) {
      if (x.labels[i] != x.labels[j]) continue;
      int64_t di = static_cast<int64_t>(i), dj = static_cast<int64_t>(j);
      if (x.t.size(di) != x.t.size(dj))
        fail("[einsum] subscript '", label_name(x.labels[i]), "' is repeated for dims of sizes ", x.t.size(di), " and ",
             x.t.size(dj), " (shape ", x.t.shape(), ")");
      int l = x.labels[i];
      x.t = x.t.diagonal(0, di, dj);
      x.labels.erase(x.labels.begin() + static_cast<std::ptrdiff_t>(j));
      x.labels.erase(x.labels.begin() + static_cast<std::ptrdiff_t>(i));
      x.labels.push_back(l);
      return take_diagonals(std::move(x));
    }
  return x;
}

bool contains(const Labels& labels, int l) { return std::find(labels.begin(), labels.end(), l) != labels.end(); }

int64_t dim_of(const Labeled& x, int l) { return std::find(x.labels.begin(), x.labels.end(), l) - x.labels.begin(); }

/** Sums away the labels of x that `keep` rejects. */
template <class Keep> Labeled sum_out(Labeled x, Keep keep) {
  Dims dims;
  Labels kept;
  for (size_t i = 0; i < x.labels.size(); ++i) {
    if (keep(x.labels[i])) kept.push_back(x.labels[i]);
    else dims.push_back(static_cast<int64_t>(i));
  }
  if (dims.empty()) return x;
  return {sum(x.t, dims, false, x.t.dtype()), kept};
}

Labeled permuted(const Labeled& x, const Labels& order) {
  Dims dims;
  for (int l : order) dims.push_back(dim_of(x, l));
  return {x.t.permute(dims), order};
}

/** Broadcasts a size-1 dim of one operand against the other's size for each shared label. */
void match_sizes(Labeled& a, Labeled& b, const Labels& shared) {
  Shape sa = a.t.shape(), sb = b.t.shape();
  for (int l : shared) {
    int64_t &na = sa[dim_of(a, l)], &nb = sb[dim_of(b, l)];
    if (na != nb && na != 1 && nb != 1)
      fail("[einsum] subscript '", label_name(l), "' has size ", na, " in one operand and ", nb, " in another (shapes ",
           a.t.shape(), " and ", b.t.shape(), ")");
    na = nb = std::max(na, nb);
  }
  a.t = a.t.expand(sa);
  b.t = b.t.expand(sb);
}

int64_t product_of(const Labeled& x, const Labels& labels) {
  int64_t n = 1;
  for (int l : labels) n *= x.t.size(dim_of(x, l));
  return n;
}

/** a * b summed over their shared labels that `needed` rejects, as one batched matmul: a is
 *  arranged as [batch, a-only, summed], b as [batch, summed, b-only]. */
template <class Needed> Labeled contract(Labeled a, Labeled b, Needed needed) {
  a = sum_out(std::move(a), [&](int l) { return needed(l) || contains(b.labels, l); });
  b = sum_out(std::move(b), [&](int l) { return needed(l) || contains(a.labels, l); });
  Labels batch, summed, a_only, b_only;
  for (int l : a.labels) {
    if (!contains(b.labels, l)) a_only.push_back(l);
    else (needed(l) ? batch : summed).push_back(l);
  }
  for (int l : b.labels)
    if (!contains(a.labels, l)) b_only.push_back(l);
  Labels shared = batch;
  shared.insert(shared.end(), summed.begin(), summed.end());
  match_sizes(a, b, shared);

  auto join = [](std::initializer_list<const Labels*> parts) {
    Labels out;
    for (const Labels* p : parts) out.insert(out.end(), p->begin(), p->end());
    return out;
  };
  Labeled pa = permuted(a, join({&batch, &a_only, &summed}));
  Labeled pb = permuted(b, join({&batch, &summed, &b_only}));
  const int64_t B = product_of(a, batch), M = product_of(a, a_only), K = product_of(a, summed),
                N = product_of(b, b_only);
  // Nothing summed: an outer product per batch, cheaper as a broadcast multiply.
  Tensor out = summed.empty() ? pa.t.reshape({B, M, 1}) * pb.t.reshape({B, 1, N})
                              : batched_product(pa.t.reshape({B, M, K}), pb.t.reshape({B, K, N}));
  Dims shape;
  for (int l : batch) shape.push_back(a.t.size(dim_of(a, l)));
  for (int l : a_only) shape.push_back(a.t.size(dim_of(a, l)));
  for (int l : b_only) shape.push_back(b.t.size(dim_of(b, l)));
  return {out.view(shape), join({&batch, &a_only, &b_only})};
}

/** The implicit output: the ellipsis dims, then the labels written exactly once, sorted. */
Labels implicit_output(const std::vector<Labels>& terms, int64_t ellipsis_dims) {
  Labels out;
  for (int64_t j = 0; j < ellipsis_dims; ++j) out.push_back(kLetters + static_cast<int>(j));
  for (int l = 0; l < kLetters; ++l) {
    int64_t uses = 0;
    for (const Labels& term : terms) uses += std::count(term.begin(), term.end(), l);
    if (uses == 1) out.push_back(l);
  }
  return out;
}

Labels explicit_output(const Labels& term, int64_t ellipsis_dims, const std::vector<Labeled>& operands) {
  Labels out;
  for (int l : term) {
    if (l == kEllipsis) {
      for (int64_t j = 0; j < ellipsis_dims; ++j) out.push_back(kLetters + static_cast<int>(j));
      continue;
    }
    if (contains(out, l)) fail("[einsum] output subscript '", label_name(l), "' appears more than once");
    bool used = std::any_of(operands.begin(), operands.end(), [&](const Labeled& x) { return contains(x.labels, l); });
    if (!used) fail("[einsum] output subscript '", label_name(l), "' does not appear in any input");
    out.push_back(l);
  }
  return out;
}

/** All operands are multiplied in their promoted dtype, on one device. */
DType einsum_dtype(const std::vector<Tensor>& operands) {
  if (operands.empty()) fail("[einsum] at least one operand is required");
  DType dtype = operands[0].dtype();
  for (const Tensor& x : operands) {
    if (x.device() != operands[0].device())
      fail<RuntimeError>("[einsum] expected all operands on one device, got ", operands[0].device(), " and ",
                         x.device());
    dtype = promote_types(dtype, x.dtype());
  }
  if (dtype == DType::Bool) fail<TypeError>("[einsum] not supported for bool operands");
  return dtype;
}

}  // namespace

Tensor einsum(std::string_view equation, const std::vector<Tensor>& operands) {
  if (autocast::active()) [[unlikely]]  // torch's einsum is its bmm: lower precision
    return autocast::call(
        graph::Autocast::Lower, [equation](const std::vector<Tensor>& cast) { return einsum(equation, cast); },
        operands);
  Equation eq = parse_equation(equation);
  if (eq.inputs.size() != operands.size())
    fail("[einsum] equation '", equation, "' has ", eq.inputs.size(), " input terms but ", operands.size(),
         " operands were given");
  DType dtype = einsum_dtype(operands);
  int64_t ellipsis_dims = 0;
  for (size_t i = 0; i < operands.size(); ++i) {
    int64_t named =
        static_cast<int64_t>(eq.inputs[i].size()) - std::count(eq.inputs[i].begin(), eq.inputs[i].end(), kEllipsis);
    ellipsis_dims = std::max(ellipsis_dims, operands[i].dim() - named);
  }
  std::vector<Labeled> xs;
  for (size_t i = 0; i < operands.size(); ++i)
    xs.push_back(
        take_diagonals({operands[i].to(dtype), expand_ellipsis(eq.inputs[i], operands[i].dim(), ellipsis_dims, i)}));
  Labels output =
      eq.output ? explicit_output(*eq.output, ellipsis_dims, xs) : implicit_output(eq.inputs, ellipsis_dims);

  // Left to right: a label stays needed while the output or a later operand uses it.
  Labeled acc = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) {
    auto needed = [&](int l) {
      if (contains(output, l)) return true;
      for (size_t j = i + 1; j < xs.size(); ++j)
        if (contains(xs[j].labels, l)) return true;
      return false;
    };
    acc = contract(std::move(acc), xs[i], needed);
  }
  acc = sum_out(std::move(acc), [&](int l) { return contains(output, l); });
  return permuted(acc, output).t;
}

// ---- Tensor methods ---------------------------------------------------------------------------

Tensor Tensor::matmul(const Tensor& other) const { return ug::matmul(*this, other); }
Tensor Tensor::mm(const Tensor& other) const { return ug::mm(*this, other); }
Tensor Tensor::bmm(const Tensor& other) const { return ug::bmm(*this, other); }
Tensor Tensor::dot(const Tensor& other) const { return ug::dot(*this, other); }
Tensor Tensor::outer(const Tensor& other) const { return ug::outer(*this, other); }

}  // namespace ug
