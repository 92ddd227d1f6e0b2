// CPU kernels on inputs large enough to take their parallel and fast paths, against plain
// reference loops written here: gather, scatter (with duplicates, sums in serial order),
// nonzero over several chunks, on non-contiguous operands and several element sizes.
#include <gtest/gtest.h>

#include <array>
#include <vector>

#include "ug/ops/binary.h"
#include "ug/ops/indexing.h"
#include "ug/ops/random.h"

namespace {

using ug::Tensor;

/** Row-major walk over a 3-d shape, calling f(i, j, k). */
template <class F> void for_3d(const ug::Shape& s, F f) {
  for (int64_t i = 0; i < s[0]; ++i)
    for (int64_t j = 0; j < s[1]; ++j)
      for (int64_t k = 0; k < s[2]; ++k) f(i, j, k);
}

int64_t at(const ug::Shape& s, int64_t i, int64_t j, int64_t k) { return (i * s[1] + j) * s[2] + k; }

/** An index tensor of `shape` with values in [0, high), read through a transposed view so
 *  that the kernels see non-unit strides. */
Tensor strided_index(const ug::Shape& shape, int64_t high) {
  Tensor t = ug::randint(0, high, {shape[2], shape[1], shape[0]});
  return t.permute({2, 1, 0});
}

template <class T> std::vector<T> contiguous_values(const Tensor& t) {
  Tensor c = t.contiguous();
  return std::vector<T>(c.data_ptr<T>(), c.data_ptr<T>() + c.numel());
}

TEST(GatherKernel, MatchesReferenceOnEveryDimAndElementSize) {
  ug::manual_seed(1);
  const ug::Shape xs{40, 30, 50};
  for (ug::DType dtype : {ug::float32, ug::float64, ug::float16, ug::uint8}) {
    Tensor x = (ug::rand({50, 30, 40}) * 100).to(dtype).permute({2, 1, 0});
    const std::vector<double> xv = contiguous_values<double>(x.to(ug::float64));
    for (int64_t dim = 0; dim < 3; ++dim) {
      ug::Shape is{35, 30, 45};
      is[dim] = 70;  // along `dim` the index may be longer than x
      Tensor index = strided_index(is, xs[dim]);
      Tensor out = x.gather(dim, index);
      ASSERT_EQ(out.shape(), is);
      const std::vector<int64_t> iv = contiguous_values<int64_t>(index);
      const std::vector<double> ov = contiguous_values<double>(out.to(ug::float64));
      int64_t mismatches = 0;
      for_3d(is, [&](int64_t i, int64_t j, int64_t k) {
        std::array<int64_t, 3> src{i, j, k};
        src[dim] = iv[at(is, i, j, k)];
        mismatches += ov[at(is, i, j, k)] != xv[at(xs, src[0], src[1], src[2])];
      });
      EXPECT_EQ(mismatches, 0) << "dtype " << dtype << ", dim " << dim;
    }
  }
}

TEST(GatherKernel, SizeOneIndexDims) {
  ug::manual_seed(2);
  Tensor x = ug::rand({300, 200});
  Tensor index = ug::randint(0, 300, {1, 200});
  Tensor out = x.gather(0, index);
  const std::vector<float> xv = contiguous_values<float>(x), ov = contiguous_values<float>(out);
  const std::vector<int64_t> iv = contiguous_values<int64_t>(index);
  for (int64_t j = 0; j < 200; ++j) ASSERT_EQ(ov[j], xv[iv[j] * 200 + j]);
}

/** scatter / scatter_add by the serial definition: index in row-major order, last write wins. */
template <class T>
std::vector<T> reference_scatter(std::vector<T> out, const ug::Shape& os, int64_t dim, const ug::Shape& is,
                                 const std::vector<int64_t>& iv, const std::vector<T>& sv, const ug::Shape& ss,
                                 bool accumulate) {
  for_3d(is, [&](int64_t i, int64_t j, int64_t k) {
    std::array<int64_t, 3> dst{i, j, k};
    dst[dim] = iv[at(is, i, j, k)];
    T& o = out[at(os, dst[0], dst[1], dst[2])];
    T v = sv[at(ss, i, j, k)];
    o = accumulate ? static_cast<T>(o + v) : v;
  });
  return out;
}

template <class T> void check_scatter(ug::DType dtype, bool accumulate) {
  ug::manual_seed(3);
  const ug::Shape os{40, 30, 50}, ss{45, 32, 55};
  Tensor x = (ug::rand(os) * 100).to(dtype);
  Tensor src = (ug::rand({55, 32, 45}) * 100).to(dtype).permute({2, 1, 0});
  for (int64_t dim = 0; dim < 3; ++dim) {
    ug::Shape is{35, 30, 45};
    is[dim] = ss[dim] - 1;  // along `dim` only src bounds the index
    // Few distinct targets along `dim`: many duplicates, so write order matters.
    Tensor index = strided_index(is, 3);
    Tensor out = accumulate ? x.scatter_add(dim, index, src) : x.scatter(dim, index, src);
    std::vector<T> want = reference_scatter(contiguous_values<T>(x), os, dim, is, contiguous_values<int64_t>(index),
                                            contiguous_values<T>(src), ss, accumulate);
    EXPECT_EQ(contiguous_values<T>(out), want) << "dtype " << dtype << ", dim " << dim;
  }
}

TEST(ScatterKernel, LastWriterWinsLikeSerial) {
  check_scatter<float>(ug::float32, false);
  check_scatter<int64_t>(ug::int64, false);
  check_scatter<uint8_t>(ug::uint8, false);
}

TEST(ScatterKernel, SumsAddInSerialOrder) {
  check_scatter<float>(ug::float32, true);
  check_scatter<double>(ug::float64, true);
  check_scatter<int32_t>(ug::int32, true);
}

/** The coordinates of the nonzeros of a contiguous bool tensor, in row-major order. */
std::vector<int64_t> reference_nonzero(const Tensor& mask) {
  std::vector<bool> m;
  for (bool b : contiguous_values<bool>(mask)) m.push_back(b);
  std::vector<int64_t> coords;
  const ug::Shape& s = mask.shape();
  ug::Shape idx(s.size(), 0);
  for (size_t i = 0; i < m.size(); ++i) {
    if (m[i]) coords.insert(coords.end(), idx.begin(), idx.end());
    for (size_t d = s.size(); d-- > 0;) {
      if (++idx[d] < s[d]) break;
      idx[d] = 0;
    }
  }
  return coords;
}

TEST(NonzeroKernel, MatchesReferenceAcrossChunks) {
  ug::manual_seed(4);
  for (const ug::Dims& shape : {ug::Dims{300, 7, 50}, ug::Dims{200001}, ug::Dims{70000, 2}}) {
    for (double p : {0.0, 0.01, 0.5, 1.0}) {
      Tensor mask = ug::rand(shape).lt(p);
      Tensor nz = mask.nonzero();
      EXPECT_EQ(nz.size(1), static_cast<int64_t>(shape.size()));
      EXPECT_EQ(contiguous_values<int64_t>(nz), reference_nonzero(mask)) << "p " << p;
    }
  }
  // Non-bool input, read through a transposed view.
  Tensor x = (ug::rand({400, 300}) - 0.5).relu().t();
  EXPECT_EQ(contiguous_values<int64_t>(x.nonzero()), reference_nonzero(x.ne(0).contiguous()));
}

}  // namespace
