// KL(p || q) in closed form (torch.distributions.kl_divergence): pairs of the same family and
// torch's pairs of two families.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ug/distributions/distribution.h"

namespace ug::distributions {

/** KL(p || q) over the batch, for the pairs torch registers (kl_pairs(): two of one family,
 *  torch's cross-family pairs, TransformedDistributions through equal transforms) and Wishart
 *  with Wishart; inf where p puts mass outside q's support.
 *  NotImplementedError naming both types for any other pair. */
Tensor kl_divergence(const Distribution& p, const Distribution& q);

/** The (p, q) class names kl_divergence has a closed form (or inf) for. */
std::vector<std::pair<std::string, std::string>> kl_pairs();

}  // namespace ug::distributions
