// ug.distributions (torch.distributions): the C++ classes of ug::distributions. Parameters
// are tensors or Python numbers; a number takes the dtype of the tensor parameters (torch's
// broadcast_all), the default dtype when all are numbers.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "ug/distributions/distributions.h"

namespace ugpy {
namespace {

namespace d = ug::distributions;
using ug::Tensor;

nb::tuple shape_tuple(const ug::Dims& s) {
  nb::list l;
  for (int64_t v : s) l.append(v);
  return nb::tuple(l);
}

/** The parameters as tensors, None kept as nullopt. */
std::vector<std::optional<Tensor>> params(std::initializer_list<nb::handle> given, const char* dist) {
  std::optional<ug::DType> dtype;
  for (nb::handle h : given)
    if (nb::isinstance<Tensor>(h)) dtype = dtype.value_or(nb::cast<Tensor>(h).dtype());
  std::vector<std::optional<Tensor>> out;
  for (nb::handle h : given) {
    ug::Scalar s;
    if (h.is_none()) out.emplace_back();
    else if (nb::isinstance<Tensor>(h)) out.push_back(nb::cast<Tensor>(h));
    else if (scalar_from_python(h, s))
      out.push_back(ug::scalar_tensor(s.to<double>(), {dtype.value_or(ug::get_default_dtype())}));
    else ug::fail<ug::TypeError>("[", dist, "] parameters must be tensors or numbers, not ", nb::inst_name(h).c_str());
  }
  return out;
}

ug::Dims sample_shape(nb::handle h) { return dims_from_sequence(h, "sample"); }

d::Transforms transform_list(nb::handle seq) {
  d::Transforms list;
  for (nb::handle h : seq) list.push_back(nb::cast<std::shared_ptr<d::Transform>>(h));
  return list;
}

nb::list transform_pylist(const d::Transforms& transforms) {
  nb::list l;
  for (const auto& tr : transforms) l.append(std::const_pointer_cast<d::Transform>(tr));
  return l;
}

}  // namespace

void bind_distributions(nb::module_& m) {
  auto shape_arg = nb::arg("sample_shape") = nb::tuple();
  nb::class_<d::Constraint>(m, "Constraint", "A set values must lie in (torch.distributions.constraints).")
      .def(
          "check", [](const d::Constraint& c, const Tensor& value) { return c.check(value); }, nb::arg("value"),
          "A bool tensor: where value lies in the set.")
      .def_prop_ro("event_dim", [](const d::Constraint& c) { return c.event_dim; })
      .def("__repr__", [](const d::Constraint& c) { return c.repr; });
  nb::class_<d::Distribution>(m, "Distribution", "The base of the distributions (torch.distributions.Distribution).")
      .def_prop_ro("batch_shape", [](const d::Distribution& x) { return shape_tuple(x.batch_shape()); })
      .def_prop_ro("event_shape", [](const d::Distribution& x) { return shape_tuple(x.event_shape()); })
      .def_prop_ro("has_rsample", &d::Distribution::has_rsample)
      .def_prop_ro("validate_args", &d::Distribution::validate_args)
      .def(
          "sample", [](const d::Distribution& x, nb::handle s) { return x.sample(sample_shape(s)); }, shape_arg,
          "Draws of shape sample_shape + batch_shape + event_shape, without history.")
      .def(
          "rsample", [](const d::Distribution& x, nb::handle s) { return x.rsample(sample_shape(s)); }, shape_arg,
          "Reparameterised draws: gradients flow to the parameters.")
      .def("log_prob", &d::Distribution::log_prob, nb::arg("value"))
      .def("cdf", &d::Distribution::cdf, nb::arg("value"))
      .def("icdf", &d::Distribution::icdf, nb::arg("value"))
      .def("entropy", &d::Distribution::entropy)
      .def_prop_ro("mean", &d::Distribution::mean)
      .def_prop_ro("variance", &d::Distribution::variance)
      .def_prop_ro("stddev", &d::Distribution::stddev)
      .def_prop_ro("mode", &d::Distribution::mode)
      .def_prop_ro("support", &d::Distribution::support)
      .def(
          "expand",
          [](const d::Distribution& x, nb::handle batch_shape) {
            return x.expand(dims_from_sequence(batch_shape, "expand"));
          },
          nb::arg("batch_shape"), "The same distribution with this batch shape (its parameters expanded).")
      .def("__repr__", &d::Distribution::repr);

  nb::class_<d::Normal, d::Distribution>(m, "Normal", "Normal(loc, scale) (torch.distributions.Normal).")
      .def(
          "__init__",
          [](d::Normal* self, nb::handle loc, nb::handle scale, std::optional<bool> validate_args) {
            auto p = params({loc, scale}, "Normal");
            new (self) d::Normal(*p[0], *p[1], validate_args.value_or(true));
          },
          nb::arg("loc"), nb::arg("scale"), nb::arg("validate_args") = nb::none())
      .def_prop_ro("loc", &d::Normal::loc)
      .def_prop_ro("scale", &d::Normal::scale);
  nb::class_<d::Uniform, d::Distribution>(m, "Uniform",
                                          "Uniform(low, high) on [low, high) (torch.distributions.Uniform).")
      .def(
          "__init__",
          [](d::Uniform* self, nb::handle low, nb::handle high, std::optional<bool> validate_args) {
            auto p = params({low, high}, "Uniform");
            new (self) d::Uniform(*p[0], *p[1], validate_args.value_or(true));
          },
          nb::arg("low"), nb::arg("high"), nb::arg("validate_args") = nb::none())
      .def_prop_ro("low", &d::Uniform::low)
      .def_prop_ro("high", &d::Uniform::high);
  nb::class_<d::Exponential, d::Distribution>(m, "Exponential", "Exponential(rate) (torch.distributions.Exponential).")
      .def(
          "__init__",
          [](d::Exponential* self, nb::handle rate, std::optional<bool> validate_args) {
            new (self) d::Exponential(*params({rate}, "Exponential")[0], validate_args.value_or(true));
          },
          nb::arg("rate"), nb::arg("validate_args") = nb::none())
      .def_prop_ro("rate", &d::Exponential::rate);
  nb::class_<d::Laplace, d::Distribution>(m, "Laplace", "Laplace(loc, scale) (torch.distributions.Laplace).")
      .def(
          "__init__",
          [](d::Laplace* self, nb::handle loc, nb::handle scale, std::optional<bool> validate_args) {
            auto p = params({loc, scale}, "Laplace");
            new (self) d::Laplace(*p[0], *p[1], validate_args.value_or(true));
          },
          nb::arg("loc"), nb::arg("scale"), nb::arg("validate_args") = nb::none())
      .def_prop_ro("loc", &d::Laplace::loc)
      .def_prop_ro("scale", &d::Laplace::scale);
  nb::class_<d::StudentT, d::Distribution>(m, "StudentT",
                                           "StudentT(df, loc=0, scale=1) (torch.distributions.StudentT).")
      .def(
          "__init__",
          [](d::StudentT* self, nb::handle df, nb::handle loc, nb::handle scale, std::optional<bool> validate_args) {
            auto p = params({df, loc, scale}, "StudentT");
            new (self) d::StudentT(*p[0], *p[1], *p[2], validate_args.value_or(true));
          },
          nb::arg("df"), nb::arg("loc") = 0.0, nb::arg("scale") = 1.0, nb::arg("validate_args") = nb::none())
      .def_prop_ro("df", &d::StudentT::df)
      .def_prop_ro("loc", &d::StudentT::loc)
      .def_prop_ro("scale", &d::StudentT::scale);
  nb::class_<d::Cauchy, d::Distribution>(m, "Cauchy", "Cauchy(loc, scale) (torch.distributions.Cauchy).")
      .def(
          "__init__",
          [](d::Cauchy* self, nb::handle loc, nb::handle scale, std::optional<bool> validate_args) {
            auto p = params({loc, scale}, "Cauchy");
            new (self) d::Cauchy(*p[0], *p[1], validate_args.value_or(true));
          },
          nb::arg("loc"), nb::arg("scale"), nb::arg("validate_args") = nb::none())
      .def_prop_ro("loc", &d::Cauchy::loc)
      .def_prop_ro("scale", &d::Cauchy::scale);
  nb::class_<d::HalfCauchy, d::Distribution>(m, "HalfCauchy",
                                             "HalfCauchy(scale): |Cauchy(0, scale)| (torch.distributions.HalfCauchy).")
      .def(
          "__init__",
          [](d::HalfCauchy* self, nb::handle scale, std::optional<bool> validate_args) {
            new (self) d::HalfCauchy(*params({scale}, "HalfCauchy")[0], validate_args.value_or(true));
          },
          nb::arg("scale"), nb::arg("validate_args") = nb::none())
      .def_prop_ro("scale", &d::HalfCauchy::scale);
  nb::class_<d::HalfNormal, d::Distribution>(m, "HalfNormal",
                                             "HalfNormal(scale): |Normal(0, scale)| (torch.distributions.HalfNormal).")
      .def(
          "__init__",
          [](d::HalfNormal* self, nb::handle scale, std::optional<bool> validate_args) {
            new (self) d::HalfNormal(*params({scale}, "HalfNormal")[0], validate_args.value_or(true));
          },
          nb::arg("scale"), nb::arg("validate_args") = nb::none())
      .def_prop_ro("scale", &d::HalfNormal::scale);
  nb::class_<d::Gumbel, d::Distribution>(m, "Gumbel", "Gumbel(loc, scale) (torch.distributions.Gumbel).")
      .def(
          "__init__",
          [](d::Gumbel* self, nb::handle loc, nb::handle scale, std::optional<bool> validate_args) {
            auto p = params({loc, scale}, "Gumbel");
            new (self) d::Gumbel(*p[0], *p[1], validate_args.value_or(true));
          },
          nb::arg("loc"), nb::arg("scale"), nb::arg("validate_args") = nb::none())
      .def_prop_ro("loc", &d::Gumbel::loc)
      .def_prop_ro("scale", &d::Gumbel::scale);
  nb::class_<d::Weibull, d::Distribution>(m, "Weibull", "Weibull(scale, concentration) (torch.distributions.Weibull).")
      .def(
          "__init__",
          [](d::Weibull* self, nb::handle scale, nb::handle concentration, std::optional<bool> validate_args) {
            auto p = params({scale, concentration}, "Weibull");
            new (self) d::Weibull(*p[0], *p[1], validate_args.value_or(true));
          },
          nb::arg("scale"), nb::arg("concentration"), nb::arg("validate_args") = nb::none())
      .def_prop_ro("scale", &d::Weibull::scale)
      .def_prop_ro("concentration", &d::Weibull::concentration);
  nb::class_<d::Pareto, d::Distribution>(m, "Pareto",
                                         "Pareto(scale, alpha) on [scale, inf) (torch.distributions.Pareto).")
      .def(
          "__init__",
          [](d::Pareto* self, nb::handle scale, nb::handle alpha, std::optional<bool> validate_args) {
            auto p = params({scale, alpha}, "Pareto");
            new (self) d::Pareto(*p[0], *p[1], validate_args.value_or(true));
          },
          nb::arg("scale"), nb::arg("alpha"), nb::arg("validate_args") = nb::none())
      .def_prop_ro("scale", &d::Pareto::scale)
      .def_prop_ro("alpha", &d::Pareto::alpha);
  nb::class_<d::Kumaraswamy, d::Distribution>(
      m, "Kumaraswamy", "Kumaraswamy(concentration1, concentration0) on [0, 1] (torch.distributions.Kumaraswamy).")
      .def(
          "__init__",
          [](d::Kumaraswamy* self, nb::handle concentration1, nb::handle concentration0,
             std::optional<bool> validate_args) {
            auto p = params({concentration1, concentration0}, "Kumaraswamy");
            new (self) d::Kumaraswamy(*p[0], *p[1], validate_args.value_or(true));
          },
          nb::arg("concentration1"), nb::arg("concentration0"), nb::arg("validate_args") = nb::none())
      .def_prop_ro("concentration1", &d::Kumaraswamy::concentration1)
      .def_prop_ro("concentration0", &d::Kumaraswamy::concentration0);
  nb::class_<d::VonMises, d::Distribution>(m, "VonMises",
                                           "VonMises(loc, concentration): angles (torch.distributions.VonMises).")
      .def(
          "__init__",
          [](d::VonMises* self, nb::handle loc, nb::handle concentration, std::optional<bool> validate_args) {
            auto p = params({loc, concentration}, "VonMises");
            new (self) d::VonMises(*p[0], *p[1], validate_args.value_or(true));
          },
          nb::arg("loc"), nb::arg("concentration"), nb::arg("validate_args") = nb::none())
      .def_prop_ro("loc", &d::VonMises::loc)
      .def_prop_ro("concentration", &d::VonMises::concentration);
  nb::class_<d::GeneralizedPareto, d::Distribution>(
      m, "GeneralizedPareto", "GeneralizedPareto(loc, scale, concentration) (torch.distributions.GeneralizedPareto).")
      .def(
          "__init__",
          [](d::GeneralizedPareto* self, nb::handle loc, nb::handle scale, nb::handle concentration,
             std::optional<bool> validate_args) {
            auto p = params({loc, scale, concentration}, "GeneralizedPareto");
            new (self) d::GeneralizedPareto(*p[0], *p[1], *p[2], validate_args.value_or(true));
          },
          nb::arg("loc"), nb::arg("scale"), nb::arg("concentration"), nb::arg("validate_args") = nb::none())
      .def_prop_ro("loc", &d::GeneralizedPareto::loc)
      .def_prop_ro("scale", &d::GeneralizedPareto::scale)
      .def_prop_ro("concentration", &d::GeneralizedPareto::concentration);
  nb::class_<d::FisherSnedecor, d::Distribution>(m, "FisherSnedecor",
                                                 "FisherSnedecor(df1, df2) (torch.distributions.FisherSnedecor).")
      .def(
          "__init__",
          [](d::FisherSnedecor* self, nb::handle df1, nb::handle df2, std::optional<bool> validate_args) {
            auto p = params({df1, df2}, "FisherSnedecor");
            new (self) d::FisherSnedecor(*p[0], *p[1], validate_args.value_or(true));
          },
          nb::arg("df1"), nb::arg("df2"), nb::arg("validate_args") = nb::none())
      .def_prop_ro("df1", &d::FisherSnedecor::df1)
      .def_prop_ro("df2", &d::FisherSnedecor::df2);
  nb::class_<d::ContinuousBernoulli, d::Distribution>(
      m, "ContinuousBernoulli",
      "ContinuousBernoulli(probs=None, logits=None) on [0, 1] (torch.distributions.ContinuousBernoulli).")
      .def(
          "__init__",
          [](d::ContinuousBernoulli* self, nb::handle probs, nb::handle logits, std::optional<bool> validate_args) {
            auto p = params({probs, logits}, "ContinuousBernoulli");
            new (self) d::ContinuousBernoulli(p[0], p[1], validate_args.value_or(true));
          },
          nb::arg("probs") = nb::none(), nb::arg("logits") = nb::none(), nb::arg("validate_args") = nb::none())
      .def_prop_ro("probs", &d::ContinuousBernoulli::probs)
      .def_prop_ro("logits", &d::ContinuousBernoulli::logits);
  nb::class_<d::Bernoulli, d::Distribution>(m, "Bernoulli",
                                            "Bernoulli(probs=None, logits=None) (torch.distributions.Bernoulli).")
      .def(
          "__init__",
          [](d::Bernoulli* self, nb::handle probs, nb::handle logits, std::optional<bool> validate_args) {
            auto p = params({probs, logits}, "Bernoulli");
            new (self) d::Bernoulli(p[0], p[1], validate_args.value_or(true));
          },
          nb::arg("probs") = nb::none(), nb::arg("logits") = nb::none(), nb::arg("validate_args") = nb::none())
      .def_prop_ro("probs", &d::Bernoulli::probs)
      .def_prop_ro("logits", &d::Bernoulli::logits);
  nb::class_<d::Binomial, d::Distribution>(
      m, "Binomial", "Binomial(total_count=1, probs=None, logits=None) (torch.distributions.Binomial).")
      .def(
          "__init__",
          [](d::Binomial* self, nb::handle total_count, nb::handle probs, nb::handle logits,
             std::optional<bool> validate_args) {
            auto p = params({total_count, probs, logits}, "Binomial");
            new (self) d::Binomial(*p[0], p[1], p[2], validate_args.value_or(true));
          },
          nb::arg("total_count") = 1, nb::arg("probs") = nb::none(), nb::arg("logits") = nb::none(),
          nb::arg("validate_args") = nb::none())
      .def_prop_ro("total_count", &d::Binomial::total_count)
      .def_prop_ro("probs", &d::Binomial::probs)
      .def_prop_ro("logits", &d::Binomial::logits);
  nb::class_<d::Categorical, d::Distribution>(
      m, "Categorical", "Categorical(probs=None, logits=None) over the last dim (torch.distributions.Categorical).")
      .def(
          "__init__",
          [](d::Categorical* self, nb::handle probs, nb::handle logits, std::optional<bool> validate_args) {
            auto p = params({probs, logits}, "Categorical");
            new (self) d::Categorical(p[0], p[1], validate_args.value_or(true));
          },
          nb::arg("probs") = nb::none(), nb::arg("logits") = nb::none(), nb::arg("validate_args") = nb::none())
      .def_prop_ro("probs", &d::Categorical::probs)
      .def_prop_ro("logits", &d::Categorical::logits)
      .def_prop_ro("param_shape", [](const d::Categorical& x) { return shape_tuple(x.probs().shape()); });
  nb::class_<d::OneHotCategorical, d::Distribution>(
      m, "OneHotCategorical",
      "OneHotCategorical(probs=None, logits=None): one-hot draws (torch.distributions.OneHotCategorical).")
      .def(
          "__init__",
          [](d::OneHotCategorical* self, nb::handle probs, nb::handle logits, std::optional<bool> validate_args) {
            auto p = params({probs, logits}, "OneHotCategorical");
            new (self) d::OneHotCategorical(p[0], p[1], validate_args.value_or(true));
          },
          nb::arg("probs") = nb::none(), nb::arg("logits") = nb::none(), nb::arg("validate_args") = nb::none())
      .def_prop_ro("probs", &d::OneHotCategorical::probs)
      .def_prop_ro("logits", &d::OneHotCategorical::logits);
  nb::class_<d::Multinomial, d::Distribution>(
      m, "Multinomial",
      "Multinomial(total_count=1, probs=None, logits=None): category counts (torch.distributions.Multinomial).")
      .def(
          "__init__",
          [](d::Multinomial* self, int64_t total_count, nb::handle probs, nb::handle logits,
             std::optional<bool> validate_args) {
            auto p = params({probs, logits}, "Multinomial");
            new (self) d::Multinomial(total_count, p[0], p[1], validate_args.value_or(true));
          },
          nb::arg("total_count") = 1, nb::arg("probs") = nb::none(), nb::arg("logits") = nb::none(),
          nb::arg("validate_args") = nb::none())
      .def_prop_ro("total_count", &d::Multinomial::total_count)
      .def_prop_ro("probs", &d::Multinomial::probs)
      .def_prop_ro("logits", &d::Multinomial::logits);
  nb::class_<d::Poisson, d::Distribution>(m, "Poisson", "Poisson(rate) counts (torch.distributions.Poisson).")
      .def(
          "__init__",
          [](d::Poisson* self, nb::handle rate, std::optional<bool> validate_args) {
            new (self) d::Poisson(*params({rate}, "Poisson")[0], validate_args.value_or(true));
          },
          nb::arg("rate"), nb::arg("validate_args") = nb::none())
      .def_prop_ro("rate", &d::Poisson::rate);
  nb::class_<d::Geometric, d::Distribution>(m, "Geometric",
                                            "Geometric(probs=None, logits=None): failures before the first success "
                                            "(torch.distributions.Geometric).")
      .def(
          "__init__",
          [](d::Geometric* self, nb::handle probs, nb::handle logits, std::optional<bool> validate_args) {
            auto p = params({probs, logits}, "Geometric");
            new (self) d::Geometric(p[0], p[1], validate_args.value_or(true));
          },
          nb::arg("probs") = nb::none(), nb::arg("logits") = nb::none(), nb::arg("validate_args") = nb::none())
      .def_prop_ro("probs", &d::Geometric::probs)
      .def_prop_ro("logits", &d::Geometric::logits);
  nb::class_<d::NegativeBinomial, d::Distribution>(
      m, "NegativeBinomial",
      "NegativeBinomial(total_count, probs=None, logits=None) (torch.distributions.NegativeBinomial).")
      .def(
          "__init__",
          [](d::NegativeBinomial* self, nb::handle total_count, nb::handle probs, nb::handle logits,
             std::optional<bool> validate_args) {
            auto p = params({total_count, probs, logits}, "NegativeBinomial");
            new (self) d::NegativeBinomial(*p[0], p[1], p[2], validate_args.value_or(true));
          },
          nb::arg("total_count"), nb::arg("probs") = nb::none(), nb::arg("logits") = nb::none(),
          nb::arg("validate_args") = nb::none())
      .def_prop_ro("total_count", &d::NegativeBinomial::total_count)
      .def_prop_ro("probs", &d::NegativeBinomial::probs)
      .def_prop_ro("logits", &d::NegativeBinomial::logits);
  nb::class_<d::Gamma, d::Distribution>(m, "Gamma", "Gamma(concentration, rate) (torch.distributions.Gamma).")
      .def(
          "__init__",
          [](d::Gamma* self, nb::handle concentration, nb::handle rate, std::optional<bool> validate_args) {
            auto p = params({concentration, rate}, "Gamma");
            new (self) d::Gamma(*p[0], *p[1], validate_args.value_or(true));
          },
          nb::arg("concentration"), nb::arg("rate"), nb::arg("validate_args") = nb::none())
      .def_prop_ro("concentration", &d::Gamma::concentration)
      .def_prop_ro("rate", &d::Gamma::rate);
  nb::class_<d::Chi2, d::Gamma>(m, "Chi2", "Chi2(df): Gamma(df / 2, 1 / 2) (torch.distributions.Chi2).")
      .def(
          "__init__",
          [](d::Chi2* self, nb::handle df, std::optional<bool> validate_args) {
            new (self) d::Chi2(*params({df}, "Chi2")[0], validate_args.value_or(true));
          },
          nb::arg("df"), nb::arg("validate_args") = nb::none())
      .def_prop_ro("df", &d::Chi2::df);
  nb::class_<d::Dirichlet, d::Distribution>(
      m, "Dirichlet", "Dirichlet(concentration) over its last dim (torch.distributions.Dirichlet).")
      .def(nb::init<const Tensor&, bool>(), nb::arg("concentration"), nb::arg("validate_args") = true)
      .def_prop_ro("concentration", &d::Dirichlet::concentration);
  nb::class_<d::Beta, d::Distribution>(m, "Beta", "Beta(concentration1, concentration0) (torch.distributions.Beta).")
      .def(
          "__init__",
          [](d::Beta* self, nb::handle c1, nb::handle c0, std::optional<bool> validate_args) {
            auto p = params({c1, c0}, "Beta");
            new (self) d::Beta(*p[0], *p[1], validate_args.value_or(true));
          },
          nb::arg("concentration1"), nb::arg("concentration0"), nb::arg("validate_args") = nb::none())
      .def_prop_ro("concentration1", &d::Beta::concentration1)
      .def_prop_ro("concentration0", &d::Beta::concentration0);
  nb::class_<d::MultivariateNormal, d::Distribution>(
      m, "MultivariateNormal",
      "MultivariateNormal(loc, covariance_matrix=None, scale_tril=None) (torch.distributions.MultivariateNormal).")
      .def(nb::init<const Tensor&, const std::optional<Tensor>&, const std::optional<Tensor>&, bool>(), nb::arg("loc"),
           nb::arg("covariance_matrix") = nb::none(), nb::arg("scale_tril") = nb::none(),
           nb::arg("validate_args") = true)
      .def_prop_ro("loc", &d::MultivariateNormal::loc)
      .def_prop_ro("scale_tril", &d::MultivariateNormal::scale_tril)
      .def_prop_ro("covariance_matrix", &d::MultivariateNormal::covariance_matrix);
  nb::class_<d::LowRankMultivariateNormal, d::Distribution>(
      m, "LowRankMultivariateNormal",
      "LowRankMultivariateNormal(loc, cov_factor, cov_diag): covariance cov_factor cov_factor^T + diag(cov_diag) "
      "(torch.distributions.LowRankMultivariateNormal).")
      .def(
          "__init__",
          [](d::LowRankMultivariateNormal* self, const Tensor& loc, const Tensor& cov_factor, const Tensor& cov_diag,
             std::optional<bool> validate_args) {
            new (self) d::LowRankMultivariateNormal(loc, cov_factor, cov_diag, validate_args.value_or(true));
          },
          nb::arg("loc"), nb::arg("cov_factor"), nb::arg("cov_diag"), nb::arg("validate_args") = nb::none())
      .def_prop_ro("loc", &d::LowRankMultivariateNormal::loc)
      .def_prop_ro("cov_factor", &d::LowRankMultivariateNormal::cov_factor)
      .def_prop_ro("cov_diag", &d::LowRankMultivariateNormal::cov_diag)
      .def_prop_ro("covariance_matrix", &d::LowRankMultivariateNormal::covariance_matrix)
      .def_prop_ro("precision_matrix", &d::LowRankMultivariateNormal::precision_matrix)
      .def_prop_ro("scale_tril", &d::LowRankMultivariateNormal::scale_tril);
  nb::class_<d::LKJCholesky, d::Distribution>(
      m, "LKJCholesky",
      "LKJCholesky(dim, concentration=1.0): Cholesky factors of LKJ correlation matrices "
      "(torch.distributions.LKJCholesky).")
      .def(
          "__init__",
          [](d::LKJCholesky* self, int64_t dim, nb::handle concentration, std::optional<bool> validate_args) {
            new (self) d::LKJCholesky(dim, *params({concentration}, "LKJCholesky")[0], validate_args.value_or(true));
          },
          nb::arg("dim"), nb::arg("concentration") = 1.0, nb::arg("validate_args") = nb::none())
      .def_prop_ro("dim", &d::LKJCholesky::dim)
      .def_prop_ro("concentration", &d::LKJCholesky::concentration);
  nb::class_<d::Wishart, d::Distribution>(
      m, "Wishart",
      "Wishart(df, covariance_matrix=None, precision_matrix=None, scale_tril=None) (torch.distributions.Wishart).")
      .def(
          "__init__",
          [](d::Wishart* self, nb::handle df, nb::handle covariance_matrix, nb::handle precision_matrix,
             nb::handle scale_tril, std::optional<bool> validate_args) {
            auto p = params({df, covariance_matrix, precision_matrix, scale_tril}, "Wishart");
            if (!p[0]) ug::fail<ug::TypeError>("[Wishart] df must be a tensor or a number");
            new (self) d::Wishart(*p[0], p[1], p[2], p[3], validate_args.value_or(true));
          },
          nb::arg("df"), nb::arg("covariance_matrix") = nb::none(), nb::arg("precision_matrix") = nb::none(),
          nb::arg("scale_tril") = nb::none(), nb::arg("validate_args") = nb::none())
      .def_prop_ro("df", &d::Wishart::df)
      .def_prop_ro("scale_tril", &d::Wishart::scale_tril)
      .def_prop_ro("covariance_matrix", &d::Wishart::covariance_matrix)
      .def_prop_ro("precision_matrix", &d::Wishart::precision_matrix);
  nb::class_<d::Independent, d::Distribution>(
      m, "Independent",
      "Independent(base_distribution, reinterpreted_batch_ndims): batch dims read as event dims "
      "(torch.distributions.Independent).")
      .def(
          "__init__",
          [](d::Independent* self, std::shared_ptr<d::Distribution> base, int64_t n,
             std::optional<bool> validate_args) { new (self) d::Independent(base, n, validate_args.value_or(true)); },
          nb::arg("base_distribution"), nb::arg("reinterpreted_batch_ndims"), nb::arg("validate_args") = nb::none())
      .def_prop_ro("base_dist",
                   [](const d::Independent& x) { return std::const_pointer_cast<d::Distribution>(x.base_dist()); })
      .def_prop_ro("reinterpreted_batch_ndims", &d::Independent::reinterpreted_batch_ndims);

  nb::module_ t =
      m.def_submodule("transforms", "torch.distributions.transforms: invertible maps for TransformedDistribution.");
  nb::class_<d::Transform>(t, "Transform", "An invertible map (torch.distributions.transforms.Transform).")
      .def("__call__", &d::Transform::forward, nb::arg("x"))
      .def_prop_ro("inv",
                   [](std::shared_ptr<d::Transform> self) -> std::shared_ptr<d::Transform> {
                     // The inverse of an inverse is the transform itself, as torch's.
                     if (auto inv = std::dynamic_pointer_cast<d::InverseTransform>(self))
                       return std::const_pointer_cast<d::Transform>(inv->inverted());
                     return std::make_shared<d::InverseTransform>(self);
                   })
      .def("log_abs_det_jacobian", &d::Transform::log_abs_det_jacobian, nb::arg("x"), nb::arg("y"))
      .def_prop_ro("sign", &d::Transform::sign)
      .def_prop_ro("domain", &d::Transform::domain)
      .def_prop_ro("codomain", &d::Transform::codomain)
      .def_prop_ro("bijective", &d::Transform::bijective)
      .def(
          "forward_shape",
          [](const d::Transform& x, nb::handle shape) {
            return shape_tuple(x.forward_shape(dims_from_sequence(shape, "forward_shape")));
          },
          nb::arg("shape"))
      .def(
          "inverse_shape",
          [](const d::Transform& x, nb::handle shape) {
            return shape_tuple(x.inverse_shape(dims_from_sequence(shape, "inverse_shape")));
          },
          nb::arg("shape"))
      .def("__repr__", &d::Transform::repr);
  nb::class_<d::ExpTransform, d::Transform>(t, "ExpTransform", "y = exp(x).").def(nb::init<>());
  nb::class_<d::SigmoidTransform, d::Transform>(t, "SigmoidTransform", "y = sigmoid(x).").def(nb::init<>());
  nb::class_<d::TanhTransform, d::Transform>(t, "TanhTransform", "y = tanh(x).").def(nb::init<>());
  nb::class_<d::SoftplusTransform, d::Transform>(t, "SoftplusTransform", "y = log(1 + exp(x)).").def(nb::init<>());
  nb::class_<d::AbsTransform, d::Transform>(t, "AbsTransform", "y = |x| (not bijective).").def(nb::init<>());
  nb::class_<d::SoftmaxTransform, d::Transform>(t, "SoftmaxTransform",
                                                "y = softmax(x) over the last dim (not bijective).")
      .def(nb::init<>());
  nb::class_<d::StickBreakingTransform, d::Transform>(t, "StickBreakingTransform",
                                                      "The reals^(K-1) onto the K-simplex by stick breaking.")
      .def(nb::init<>());
  nb::class_<d::AffineTransform, d::Transform>(t, "AffineTransform", "y = loc + scale * x.")
      .def(
          "__init__",
          [](d::AffineTransform* self, nb::handle loc, nb::handle scale) {
            auto p = params({loc, scale}, "AffineTransform");
            new (self) d::AffineTransform(*p[0], *p[1]);
          },
          nb::arg("loc"), nb::arg("scale"))
      .def_prop_ro("loc", &d::AffineTransform::loc)
      .def_prop_ro("scale", &d::AffineTransform::scale);
  nb::class_<d::PowerTransform, d::Transform>(t, "PowerTransform", "y = x ** exponent on the positive reals.")
      .def(
          "__init__",
          [](d::PowerTransform* self, nb::handle exponent) {
            new (self) d::PowerTransform(*params({exponent}, "PowerTransform")[0]);
          },
          nb::arg("exponent"))
      .def_prop_ro("exponent", &d::PowerTransform::exponent);
  nb::class_<d::ComposeTransform, d::Transform>(t, "ComposeTransform", "The parts applied in order.")
      .def(
          "__init__",
          [](d::ComposeTransform* self, nb::handle parts) {
            d::Transforms list;
            for (nb::handle h : parts) list.push_back(nb::cast<std::shared_ptr<d::Transform>>(h));
            new (self) d::ComposeTransform(std::move(list));
          },
          nb::arg("parts"))
      .def_prop_ro("parts", [](const d::ComposeTransform& x) {
        nb::list l;
        for (const auto& tr : x.parts()) l.append(std::const_pointer_cast<d::Transform>(tr));
        return l;
      });
  nb::class_<d::InverseTransform, d::Transform>(t, "_InverseTransform", "The inverse of a transform (its .inv).");
  nb::class_<d::IndependentTransform, d::Transform>(
      t, "IndependentTransform", "base_transform with reinterpreted_batch_ndims more rightmost dims as one event.")
      .def(nb::init<std::shared_ptr<const d::Transform>, int64_t>(), nb::arg("base_transform"),
           nb::arg("reinterpreted_batch_ndims"))
      .def_prop_ro(
          "base_transform",
          [](const d::IndependentTransform& x) { return std::const_pointer_cast<d::Transform>(x.base_transform()); })
      .def_prop_ro("reinterpreted_batch_ndims", &d::IndependentTransform::reinterpreted_batch_ndims);
  nb::class_<d::ReshapeTransform, d::Transform>(t, "ReshapeTransform",
                                                "The rightmost in_shape dims reshaped to out_shape.")
      .def(
          "__init__",
          [](d::ReshapeTransform* self, nb::handle in_shape, nb::handle out_shape) {
            new (self) d::ReshapeTransform(dims_from_sequence(in_shape, "ReshapeTransform"),
                                           dims_from_sequence(out_shape, "ReshapeTransform"));
          },
          nb::arg("in_shape"), nb::arg("out_shape"))
      .def_prop_ro("in_shape", [](const d::ReshapeTransform& x) { return shape_tuple(x.in_shape()); })
      .def_prop_ro("out_shape", [](const d::ReshapeTransform& x) { return shape_tuple(x.out_shape()); });
  nb::class_<d::CatTransform, d::Transform>(t, "CatTransform",
                                            "tseq[i] on the slice of lengths[i] along dim, concatenated.")
      .def(
          "__init__",
          [](d::CatTransform* self, nb::handle tseq, int64_t dim, std::optional<std::vector<int64_t>> lengths) {
            new (self) d::CatTransform(transform_list(tseq), dim, lengths.value_or(std::vector<int64_t>{}));
          },
          nb::arg("tseq"), nb::arg("dim") = 0, nb::arg("lengths") = nb::none())
      .def_prop_ro("transforms", [](const d::CatTransform& x) { return transform_pylist(x.transforms()); })
      .def_prop_ro("dim", &d::CatTransform::dim)
      .def_prop_ro("lengths", &d::CatTransform::lengths);
  nb::class_<d::StackTransform, d::Transform>(t, "StackTransform", "tseq[i] on index i along dim, stacked.")
      .def(
          "__init__",
          [](d::StackTransform* self, nb::handle tseq, int64_t dim) {
            new (self) d::StackTransform(transform_list(tseq), dim);
          },
          nb::arg("tseq"), nb::arg("dim") = 0)
      .def_prop_ro("transforms", [](const d::StackTransform& x) { return transform_pylist(x.transforms()); })
      .def_prop_ro("dim", &d::StackTransform::dim);
  nb::class_<d::LowerCholeskyTransform, d::Transform>(
      t, "LowerCholeskyTransform", "Square matrices onto lower-triangular ones with a positive (exp) diagonal.")
      .def(nb::init<>());
  nb::class_<d::PositiveDefiniteTransform, d::Transform>(t, "PositiveDefiniteTransform",
                                                         "Square matrices onto positive-definite ones: L L^T.")
      .def(nb::init<>());
  nb::class_<d::CorrCholeskyTransform, d::Transform>(
      t, "CorrCholeskyTransform", "Vectors of D (D - 1) / 2 onto Cholesky factors of D x D correlation matrices.")
      .def(nb::init<>());
  nb::class_<d::CumulativeDistributionTransform, d::Transform>(t, "CumulativeDistributionTransform",
                                                               "y = distribution.cdf(x), onto [0, 1].")
      .def(nb::init<std::shared_ptr<const d::Distribution>>(), nb::arg("distribution"))
      .def_prop_ro("distribution", [](const d::CumulativeDistributionTransform& x) {
        return std::const_pointer_cast<d::Distribution>(x.distribution());
      });
  t.attr("identity_transform") = std::make_shared<d::ComposeTransform>(d::Transforms{});

  nb::class_<d::TransformedDistribution, d::Distribution>(
      m, "TransformedDistribution",
      "TransformedDistribution(base_distribution, transforms): base draws through the transforms "
      "(torch.distributions.TransformedDistribution).")
      .def(
          "__init__",
          [](d::TransformedDistribution* self, std::shared_ptr<d::Distribution> base, nb::handle transforms,
             std::optional<bool> validate_args) {
            d::Transforms list;
            if (nb::isinstance<d::Transform>(transforms))
              list.push_back(nb::cast<std::shared_ptr<d::Transform>>(transforms));
            else
              for (nb::handle h : transforms) list.push_back(nb::cast<std::shared_ptr<d::Transform>>(h));
            new (self) d::TransformedDistribution(base, std::move(list), validate_args.value_or(true));
          },
          nb::arg("base_distribution"), nb::arg("transforms"), nb::arg("validate_args") = nb::none())
      .def_prop_ro(
          "base_dist",
          [](const d::TransformedDistribution& x) { return std::const_pointer_cast<d::Distribution>(x.base_dist()); })
      .def_prop_ro("transforms", [](const d::TransformedDistribution& x) {
        nb::list l;
        for (const auto& tr : x.transforms()) l.append(std::const_pointer_cast<d::Transform>(tr));
        return l;
      });
  nb::class_<d::LogNormal, d::TransformedDistribution>(m, "LogNormal",
                                                       "LogNormal(loc, scale): exp(Normal(loc, scale)) "
                                                       "(torch.distributions.LogNormal).")
      .def(
          "__init__",
          [](d::LogNormal* self, nb::handle loc, nb::handle scale, std::optional<bool> validate_args) {
            auto p = params({loc, scale}, "LogNormal");
            new (self) d::LogNormal(*p[0], *p[1], validate_args.value_or(true));
          },
          nb::arg("loc"), nb::arg("scale"), nb::arg("validate_args") = nb::none())
      .def_prop_ro("loc", &d::LogNormal::loc)
      .def_prop_ro("scale", &d::LogNormal::scale);

  nb::class_<d::InverseGamma, d::TransformedDistribution>(
      m, "InverseGamma",
      "InverseGamma(concentration, rate): 1 / Gamma(concentration, rate) "
      "(torch.distributions.InverseGamma).")
      .def(
          "__init__",
          [](d::InverseGamma* self, nb::handle concentration, nb::handle rate, std::optional<bool> validate_args) {
            auto p = params({concentration, rate}, "InverseGamma");
            new (self) d::InverseGamma(*p[0], *p[1], validate_args.value_or(true));
          },
          nb::arg("concentration"), nb::arg("rate"), nb::arg("validate_args") = nb::none())
      .def_prop_ro("concentration", &d::InverseGamma::concentration)
      .def_prop_ro("rate", &d::InverseGamma::rate);
  nb::class_<d::LogisticNormal, d::TransformedDistribution>(
      m, "LogisticNormal",
      "LogisticNormal(loc, scale): Normal vectors through stick breaking, on the simplex "
      "(torch.distributions.LogisticNormal).")
      .def(
          "__init__",
          [](d::LogisticNormal* self, nb::handle loc, nb::handle scale, std::optional<bool> validate_args) {
            auto p = params({loc, scale}, "LogisticNormal");
            new (self) d::LogisticNormal(*p[0], *p[1], validate_args.value_or(true));
          },
          nb::arg("loc"), nb::arg("scale"), nb::arg("validate_args") = nb::none())
      .def_prop_ro("loc", &d::LogisticNormal::loc)
      .def_prop_ro("scale", &d::LogisticNormal::scale);

  nb::class_<d::LogitRelaxedBernoulli, d::Distribution>(
      m, "LogitRelaxedBernoulli",
      "LogitRelaxedBernoulli(temperature, probs=None, logits=None): the logit of a RelaxedBernoulli draw "
      "(torch.distributions.relaxed_bernoulli.LogitRelaxedBernoulli).")
      .def(
          "__init__",
          [](d::LogitRelaxedBernoulli* self, nb::handle temperature, nb::handle probs, nb::handle logits,
             std::optional<bool> validate_args) {
            auto p = params({temperature, probs, logits}, "LogitRelaxedBernoulli");
            new (self) d::LogitRelaxedBernoulli(*p[0], p[1], p[2], validate_args.value_or(true));
          },
          nb::arg("temperature"), nb::arg("probs") = nb::none(), nb::arg("logits") = nb::none(),
          nb::arg("validate_args") = nb::none())
      .def_prop_ro("temperature", &d::LogitRelaxedBernoulli::temperature)
      .def_prop_ro("probs", &d::LogitRelaxedBernoulli::probs)
      .def_prop_ro("logits", &d::LogitRelaxedBernoulli::logits);
  nb::class_<d::RelaxedBernoulli, d::TransformedDistribution>(
      m, "RelaxedBernoulli",
      "RelaxedBernoulli(temperature, probs=None, logits=None) on (0, 1) (torch.distributions.RelaxedBernoulli).")
      .def(
          "__init__",
          [](d::RelaxedBernoulli* self, nb::handle temperature, nb::handle probs, nb::handle logits,
             std::optional<bool> validate_args) {
            auto p = params({temperature, probs, logits}, "RelaxedBernoulli");
            new (self) d::RelaxedBernoulli(*p[0], p[1], p[2], validate_args.value_or(true));
          },
          nb::arg("temperature"), nb::arg("probs") = nb::none(), nb::arg("logits") = nb::none(),
          nb::arg("validate_args") = nb::none())
      .def_prop_ro("temperature", &d::RelaxedBernoulli::temperature)
      .def_prop_ro("probs", &d::RelaxedBernoulli::probs)
      .def_prop_ro("logits", &d::RelaxedBernoulli::logits);
  nb::class_<d::ExpRelaxedCategorical, d::Distribution>(
      m, "ExpRelaxedCategorical",
      "ExpRelaxedCategorical(temperature, probs=None, logits=None): the log of a RelaxedOneHotCategorical draw "
      "(torch.distributions.relaxed_categorical.ExpRelaxedCategorical).")
      .def(
          "__init__",
          [](d::ExpRelaxedCategorical* self, nb::handle temperature, nb::handle probs, nb::handle logits,
             std::optional<bool> validate_args) {
            auto p = params({temperature, probs, logits}, "ExpRelaxedCategorical");
            new (self) d::ExpRelaxedCategorical(*p[0], p[1], p[2], validate_args.value_or(true));
          },
          nb::arg("temperature"), nb::arg("probs") = nb::none(), nb::arg("logits") = nb::none(),
          nb::arg("validate_args") = nb::none())
      .def_prop_ro("temperature", &d::ExpRelaxedCategorical::temperature)
      .def_prop_ro("probs", &d::ExpRelaxedCategorical::probs)
      .def_prop_ro("logits", &d::ExpRelaxedCategorical::logits);
  nb::class_<d::RelaxedOneHotCategorical, d::TransformedDistribution>(
      m, "RelaxedOneHotCategorical",
      "RelaxedOneHotCategorical(temperature, probs=None, logits=None) on the simplex "
      "(torch.distributions.RelaxedOneHotCategorical).")
      .def(
          "__init__",
          [](d::RelaxedOneHotCategorical* self, nb::handle temperature, nb::handle probs, nb::handle logits,
             std::optional<bool> validate_args) {
            auto p = params({temperature, probs, logits}, "RelaxedOneHotCategorical");
            new (self) d::RelaxedOneHotCategorical(*p[0], p[1], p[2], validate_args.value_or(true));
          },
          nb::arg("temperature"), nb::arg("probs") = nb::none(), nb::arg("logits") = nb::none(),
          nb::arg("validate_args") = nb::none())
      .def_prop_ro("temperature", &d::RelaxedOneHotCategorical::temperature)
      .def_prop_ro("probs", &d::RelaxedOneHotCategorical::probs)
      .def_prop_ro("logits", &d::RelaxedOneHotCategorical::logits);
  nb::class_<d::OneHotCategoricalStraightThrough, d::OneHotCategorical>(
      m, "OneHotCategoricalStraightThrough",
      "OneHotCategoricalStraightThrough(probs=None, logits=None): rsample passes the gradient of probs through the "
      "one-hot draw (torch.distributions.OneHotCategoricalStraightThrough).")
      .def(
          "__init__",
          [](d::OneHotCategoricalStraightThrough* self, nb::handle probs, nb::handle logits,
             std::optional<bool> validate_args) {
            auto p = params({probs, logits}, "OneHotCategoricalStraightThrough");
            new (self) d::OneHotCategoricalStraightThrough(p[0], p[1], validate_args.value_or(true));
          },
          nb::arg("probs") = nb::none(), nb::arg("logits") = nb::none(), nb::arg("validate_args") = nb::none());

  nb::class_<d::MixtureSameFamily, d::Distribution>(
      m, "MixtureSameFamily",
      "MixtureSameFamily(mixture_distribution, component_distribution): a Categorical's choice among the "
      "components along the rightmost batch dim (torch.distributions.MixtureSameFamily).")
      .def(
          "__init__",
          [](d::MixtureSameFamily* self, std::shared_ptr<d::Distribution> mixture,
             std::shared_ptr<d::Distribution> component, std::optional<bool> validate_args) {
            auto categorical = std::dynamic_pointer_cast<d::Categorical>(mixture);
            if (!categorical)
              ug::fail("[MixtureSameFamily] the Mixture distribution needs to be an instance of Categorical, not ",
                       mixture->name());
            new (self) d::MixtureSameFamily(categorical, component, validate_args.value_or(true));
          },
          nb::arg("mixture_distribution"), nb::arg("component_distribution"), nb::arg("validate_args") = nb::none())
      .def_prop_ro("mixture_distribution",
                   [](const d::MixtureSameFamily& x) {
                     return std::const_pointer_cast<d::Categorical>(x.mixture_distribution());
                   })
      .def_prop_ro("component_distribution", [](const d::MixtureSameFamily& x) {
        return std::const_pointer_cast<d::Distribution>(x.component_distribution());
      });

  m.def("kl_divergence", &d::kl_divergence, nb::arg("p"), nb::arg("q"),
        "KL(p || q) in closed form (torch.distributions.kl_divergence); NotImplementedError for other pairs.");
  m.def(
      "biject_to", [](const d::Constraint& c) { return std::const_pointer_cast<d::Transform>(d::biject_to(c)); },
      nb::arg("constraint"), "A bijection from the reals onto the constraint's set (torch.distributions.biject_to).");
  m.def(
      "transform_to", [](const d::Constraint& c) { return std::const_pointer_cast<d::Transform>(d::transform_to(c)); },
      nb::arg("constraint"), "A map from the reals onto the constraint's set (torch.distributions.transform_to).");

  nb::module_ c = m.def_submodule("constraints", "torch.distributions.constraints: the sets values lie in.");
  c.attr("real") = d::constraints::real();
  c.attr("real_vector") = d::constraints::independent(d::constraints::real(), 1);
  c.attr("positive") = d::constraints::positive();
  c.attr("nonnegative") = d::constraints::nonnegative();
  c.attr("unit_interval") = d::constraints::unit_interval();
  c.attr("boolean") = d::constraints::boolean();
  c.attr("nonnegative_integer") = d::constraints::nonnegative_integer();
  c.attr("one_hot") = d::constraints::one_hot();
  c.attr("simplex") = d::constraints::simplex();
  c.attr("lower_cholesky") = d::constraints::lower_cholesky();
  c.attr("positive_definite") = d::constraints::positive_definite();
  c.attr("corr_cholesky") = d::constraints::corr_cholesky();
  auto bound = [](nb::handle h, const char* what) { return *params({h}, what)[0]; };
  c.def(
      "greater_than", [=](nb::handle lb) { return d::constraints::greater_than(bound(lb, "greater_than")); },
      nb::arg("lower_bound"));
  c.def(
      "greater_than_eq", [=](nb::handle lb) { return d::constraints::greater_than_eq(bound(lb, "greater_than_eq")); },
      nb::arg("lower_bound"));
  c.def(
      "less_than", [=](nb::handle ub) { return d::constraints::less_than(bound(ub, "less_than")); },
      nb::arg("upper_bound"));
  c.def(
      "interval",
      [](nb::handle lb, nb::handle ub) {
        auto p = params({lb, ub}, "interval");
        return d::constraints::interval(*p[0], *p[1]);
      },
      nb::arg("lower_bound"), nb::arg("upper_bound"));
  c.def("independent", &d::constraints::independent, nb::arg("base_constraint"), nb::arg("reinterpreted_batch_ndims"));
  c.def(
      "cat",
      [](std::vector<d::Constraint> cseq, int64_t dim, std::optional<std::vector<int64_t>> lengths) {
        const size_t n = cseq.size();
        return d::constraints::cat(std::move(cseq), dim, lengths.value_or(std::vector<int64_t>(n, 1)));
      },
      nb::arg("cseq"), nb::arg("dim") = 0, nb::arg("lengths") = nb::none());
  c.def("stack", &d::constraints::stack, nb::arg("cseq"), nb::arg("dim") = 0);
  m.def("_kl_pairs", &d::kl_pairs, "The (p, q) class names kl_divergence has built in, for register_kl's ranking.");
}

}  // namespace ugpy
