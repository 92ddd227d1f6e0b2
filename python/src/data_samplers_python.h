// Samplers from Python objects: a ug.data sampler, or any iterable of indices (of batches of
// indices for a batch sampler) with __len__.
#pragma once

#include <memory>

#include "data_python.h"
#include "ug/data/batch_sampler.h"

namespace ugpy {

std::shared_ptr<ug::data::Sampler> sampler_from_python(nb::handle obj);
std::shared_ptr<ug::data::BatchSampler> batch_sampler_from_python(nb::handle obj);

}  // namespace ugpy
