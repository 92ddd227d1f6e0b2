// Window functions for spectral analysis, as torch's factories (torch.hann_window, ...) and
// scipy.signal.get_window: N values; periodic=true gives the first N of the symmetric window of
// N + 1 points, the form an FFT over frames of N wants.
#pragma once

#include "ug/core/tensor.h"

namespace ug {

/** 0.5 - 0.5 cos(2 pi n / (M - 1)). */
Tensor hann_window(int64_t window_length, bool periodic = true, Options opts = {});
/** alpha - beta cos(2 pi n / (M - 1)). */
Tensor hamming_window(int64_t window_length, bool periodic = true, double alpha = 0.54, double beta = 0.46,
                      Options opts = {});
/** 0.42 - 0.5 cos(2 pi n / (M - 1)) + 0.08 cos(4 pi n / (M - 1)). */
Tensor blackman_window(int64_t window_length, bool periodic = true, Options opts = {});
/** The triangle 1 - |2 n / (M - 1) - 1|. */
Tensor bartlett_window(int64_t window_length, bool periodic = true, Options opts = {});
/** I0(beta sqrt(1 - (2 n / (M - 1) - 1)^2)) / I0(beta). */
Tensor kaiser_window(int64_t window_length, bool periodic = true, double beta = 12.0, Options opts = {});

}  // namespace ug
