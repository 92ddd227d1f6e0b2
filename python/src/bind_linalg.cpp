// ug._C._linalg: ug::linalg (ops/linalg.h) as plain functions returning tuples; unigrad/linalg.py
// gives them torch.linalg's signatures and named results.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "ug/ops/linalg.h"

namespace ugpy {

namespace {

using ug::Tensor;
using namespace nb::literals;
using DimList = std::optional<std::vector<int64_t>>;

std::optional<ug::Dims> to_dims(const DimList& d) {
  if (!d) return std::nullopt;
  return ug::Dims(d->begin(), d->end());
}

}  // namespace

void bind_linalg(nb::module_& m) {
  namespace la = ug::linalg;
  nb::module_ l = m.def_submodule("_linalg", "ug::linalg, wrapped by unigrad/linalg.py");
  l.def("inv", &la::inv, "A"_a);
  l.def("det", &la::det, "A"_a);
  l.def("slogdet", [](const Tensor& a) {
    auto r = la::slogdet(a);
    return std::make_tuple(r.sign, r.logabsdet);
  });
  l.def("solve", &la::solve, "A"_a, "B"_a, "left"_a);
  l.def("solve_triangular", &la::solve_triangular, "A"_a, "B"_a, "upper"_a, "left"_a, "unitriangular"_a);
  l.def("cholesky", &la::cholesky, "A"_a, "upper"_a);
  l.def("cholesky_ex", [](const Tensor& a, bool upper, bool check_errors) {
    auto r = la::cholesky_ex(a, upper, check_errors);
    return std::make_tuple(r.L, r.info);
  });
  l.def("lu_factor", [](const Tensor& a, bool pivot) {
    auto r = la::lu_factor(a, pivot);
    return std::make_tuple(r.LU, r.pivots);
  });
  l.def("lu_factor_ex", [](const Tensor& a, bool pivot, bool check_errors) {
    auto r = la::lu_factor_ex(a, pivot, check_errors);
    return std::make_tuple(r.LU, r.pivots, r.info);
  });
  l.def("lu", [](const Tensor& a, bool pivot) {
    auto r = la::lu(a, pivot);
    return std::make_tuple(r.P, r.L, r.U);
  });
  l.def("lu_unpack", [](const Tensor& lu, const Tensor& pivots, bool unpack_data, bool unpack_pivots) {
    auto r = ug::lu_unpack(lu, pivots, unpack_data, unpack_pivots);
    return std::make_tuple(r.P, r.L, r.U);
  });
  l.def("lu_solve", &la::lu_solve, "LU"_a, "pivots"_a, "B"_a, "left"_a, "adjoint"_a);
  l.def("ldl_factor", [](const Tensor& a, bool hermitian) {
    auto r = la::ldl_factor(a, hermitian);
    return std::make_tuple(r.LD, r.pivots);
  });
  l.def("ldl_factor_ex", [](const Tensor& a, bool hermitian, bool check_errors) {
    auto r = la::ldl_factor_ex(a, hermitian, check_errors);
    return std::make_tuple(r.LD, r.pivots, r.info);
  });
  l.def("ldl_solve", &la::ldl_solve, "LD"_a, "pivots"_a, "B"_a, "hermitian"_a);
  l.def("solve_ex", [](const Tensor& a, const Tensor& b, bool left, bool check_errors) {
    auto r = la::solve_ex(a, b, left, check_errors);
    return std::make_tuple(r.result, r.info);
  });
  l.def("inv_ex", [](const Tensor& a, bool check_errors) {
    auto r = la::inv_ex(a, check_errors);
    return std::make_tuple(r.inverse, r.info);
  });
  l.def("cond", nb::overload_cast<const Tensor&, std::optional<double>>(&la::cond), "A"_a, "p"_a.none());
  l.def("cond", nb::overload_cast<const Tensor&, std::string_view>(&la::cond), "A"_a, "p"_a);
  l.def("householder_product", &la::householder_product, "A"_a, "tau"_a);
  l.def("tensorinv", &la::tensorinv, "A"_a, "ind"_a);
  l.def(
      "tensorsolve",
      [](const Tensor& a, const Tensor& b, const DimList& dims) { return la::tensorsolve(a, b, to_dims(dims)); }, "A"_a,
      "B"_a, "dims"_a.none());
  l.def("vander", &la::vander, "x"_a, "N"_a.none());
  l.def("vecdot", &la::vecdot, "x"_a, "y"_a, "dim"_a);
  l.def("diagonal", &la::diagonal, "A"_a, "offset"_a, "dim1"_a, "dim2"_a);
  l.def("matmul", &ug::matmul, "input"_a, "other"_a);
  l.def("cholesky_solve", &ug::cholesky_solve, "B"_a, "L"_a, "upper"_a);
  l.def("qr", [](const Tensor& a, std::string_view mode) {
    auto r = la::qr(a, mode);
    return std::make_tuple(r.Q, r.R);
  });
  l.def("eigh", [](const Tensor& a, std::string_view uplo) {
    auto r = la::eigh(a, uplo);
    return std::make_tuple(r.eigenvalues, r.eigenvectors);
  });
  l.def("eigvalsh", &la::eigvalsh, "A"_a, "UPLO"_a);
  l.def("eig", [](const Tensor& a) {
    auto r = la::eig(a);
    return std::make_tuple(r.eigenvalues, r.eigenvectors);
  });
  l.def("eigvals", &la::eigvals, "A"_a);
  l.def("svd", [](const Tensor& a, bool full_matrices) {
    auto r = la::svd(a, full_matrices);
    return std::make_tuple(r.U, r.S, r.Vh);
  });
  l.def("svdvals", &la::svdvals, "A"_a);
  l.def("lstsq", [](const Tensor& a, const Tensor& b) {
    auto r = la::lstsq(a, b);
    return std::make_tuple(r.solution, r.residuals, r.rank, r.singular_values);
  });
  l.def("pinv", &la::pinv, "A"_a, "atol"_a.none(), "rtol"_a.none(), "hermitian"_a);
  l.def("matrix_rank", &la::matrix_rank, "A"_a, "atol"_a.none(), "rtol"_a.none(), "hermitian"_a);
  l.def("matrix_power", &la::matrix_power, "A"_a, "n"_a);
  l.def("matrix_exp", &la::matrix_exp, "A"_a);
  l.def("multi_dot", &la::multi_dot, "tensors"_a);
  l.def("cross", &la::cross, "input"_a, "other"_a, nb::kw_only(), "dim"_a = -1);
  l.def(
      "vector_norm",
      [](const Tensor& x, double ord, const DimList& dim, bool keepdim) {
        return la::vector_norm(x, ord, to_dims(dim), keepdim);
      },
      "x"_a, "ord"_a, "dim"_a.none(), "keepdim"_a);
  l.def(
      "matrix_norm",
      [](const Tensor& a, double ord, const std::vector<int64_t>& dim, bool keepdim) {
        return la::matrix_norm(a, ord, ug::Dims(dim.begin(), dim.end()), keepdim);
      },
      "A"_a, "ord"_a, "dim"_a, "keepdim"_a);
  l.def(
      "matrix_norm",
      [](const Tensor& a, std::string_view ord, const std::vector<int64_t>& dim, bool keepdim) {
        return la::matrix_norm(a, ord, ug::Dims(dim.begin(), dim.end()), keepdim);
      },
      "A"_a, "ord"_a, "dim"_a, "keepdim"_a);
  l.def(
      "norm",
      [](const Tensor& x, std::optional<double> ord, const DimList& dim, bool keepdim) {
        return la::norm(x, ord, to_dims(dim), keepdim);
      },
      "A"_a, "ord"_a.none(), "dim"_a.none(), "keepdim"_a);
  l.def(
      "norm",
      [](const Tensor& x, std::string_view ord, const DimList& dim, bool keepdim) {
        return la::norm(x, ord, to_dims(dim), keepdim);
      },
      "A"_a, "ord"_a, "dim"_a.none(), "keepdim"_a);
}

}  // namespace ugpy
