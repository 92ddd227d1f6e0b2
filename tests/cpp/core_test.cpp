// Core: dtypes and promotion, 16-bit float rounding, the allocator's statistics and cache,
// Philox known answers, the thread pool, creation, views and elementwise ops.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>

#include "ug/ug.h"

using namespace ug;

TEST(DType, PromotionFollowsTorch) {
  EXPECT_EQ(promote_types(int32, float16), float16);
  EXPECT_EQ(promote_types(uint8, int32), int32);
  EXPECT_EQ(promote_types(bool_, uint8), uint8);
  EXPECT_EQ(promote_types(float16, bfloat16), float32);
  EXPECT_EQ(promote_types(int64, float32), float32);
  EXPECT_EQ(promote_types(float32, float64), float64);
  EXPECT_EQ(dtype_from_name("long"), int64);
  EXPECT_THROW(dtype_from_name("complex32"), TypeError);
  // complex parts take the wider real dtype (tests/python/test_complex.py checks every pair)
  EXPECT_EQ(dtype_from_name("cfloat"), complex64);
  EXPECT_EQ(promote_types(complex64, float64), complex128);
  EXPECT_EQ(promote_types(int64, complex64), complex64);
  EXPECT_EQ(promote_types(bfloat16, complex64), complex64);
  EXPECT_FALSE(can_cast(complex64, float64));
  EXPECT_THROW(promote_types(uint32, complex64), TypeError);
  // int8 and int16 (tests/python/test_dtypes_int.py checks every pair against torch)
  EXPECT_EQ(promote_types(uint8, int8), int16);
  EXPECT_EQ(promote_types(int8, int32), int32);
  EXPECT_EQ(promote_types(bool_, int8), int8);
  EXPECT_EQ(dtype_from_name("short"), int16);
  // the shells meet only floats, as in torch
  EXPECT_EQ(promote_types(uint32, float16), float16);
  EXPECT_THROW(promote_types(uint16, int32), TypeError);
  EXPECT_THROW(promote_types(uint64, uint32), TypeError);
}

TEST(DType, SmallIntegersWrapAndShellsOnlyCast) {
  Tensor a = tensor({100, -100, 7}, {.dtype = int8});
  Tensor sum = a + a;
  EXPECT_EQ(sum.dtype(), int8);
  EXPECT_EQ(sum.to(int64).data_ptr<int64_t>()[0], -56);  // 200 wraps modulo 256
  EXPECT_EQ(bitwise_right_shift(a, 9).to(int64).data_ptr<int64_t>()[1], -1);
  Tensor u = tensor({1, 2, 3}).to(uint32);
  EXPECT_EQ(u.to(int64).sum().item<int64_t>(), 6);
  EXPECT_THROW(u + u, TypeError);
}

TEST(DType, ScalarsDoNotWidenTensors) {
  Tensor i32 = ones({2}, {.dtype = int32});
  EXPECT_EQ((i32 + 2).dtype(), int32);
  EXPECT_EQ((i32 + 2.5).dtype(), float32);
  EXPECT_EQ((ones({2}, {.dtype = float16}) * 3.0).dtype(), float16);
  EXPECT_EQ((ones({2}, {.dtype = bool_}) + 1).dtype(), int64);
  EXPECT_EQ((i32 + scalar_tensor(1.5, {.dtype = float64})).dtype(), float64);  // 0-d tensor of a higher category counts
  EXPECT_EQ((i32 / i32).dtype(), float32);
}

TEST(DType, DefaultDTypeAsTorch) {
  EXPECT_EQ(get_default_dtype(), float32);
  EXPECT_THROW(set_default_dtype(int64), TypeError);
  set_default_dtype(float64);
  const Tensor ints = tensor({1, 2});
  EXPECT_EQ(zeros({2}).dtype(), float64);
  EXPECT_EQ(full({2}, 0.1).dtype(), float64);
  EXPECT_EQ(full({2}, 1).dtype(), int64);
  EXPECT_EQ((ints / 3).dtype(), float64);
  EXPECT_EQ((ints * 0.5).dtype(), float64);
  EXPECT_EQ((ones({2}, {.dtype = float32}) * 0.5).dtype(), float32);
  EXPECT_EQ(randn({2}).dtype(), float64);
  EXPECT_EQ(nn::Linear(2, 3)->weight().dtype(), float64);
  EXPECT_EQ(nn::Linear(2, 3, true, float16)->weight().dtype(), float16);
  EXPECT_EQ(full({1}, 0.1).item<double>(), 0.1);  // made in float64, not rounded through float32
  set_default_dtype(float32);
  EXPECT_EQ(zeros({2}).dtype(), float32);
}

TEST(Half, RoundsToNearestEven) {
  EXPECT_EQ(Half(1.0f).bits, 0x3c00);
  EXPECT_EQ(Half(1.0f + 0x1.0p-11f).bits, 0x3c00);      // tie goes to even
  EXPECT_EQ(Half(1.0f + 3 * 0x1.0p-11f).bits, 0x3c02);  // tie goes to even (up)
  EXPECT_EQ(Half(65504.0f).bits, 0x7bff);
  EXPECT_EQ(Half(65520.0f).bits, 0x7c00);    // overflows to inf
  EXPECT_EQ(Half(0x1.0p-24f).bits, 0x0001);  // smallest subnormal
  EXPECT_TRUE(std::isnan(static_cast<float>(Half(NAN))));
  for (uint32_t b = 0; b < 0x7c00; b += 7) {  // every finite half survives a round trip
    Half h;
    h.bits = static_cast<uint16_t>(b);
    EXPECT_EQ(Half(static_cast<float>(h)).bits, b);
  }
  EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
  EXPECT_EQ(BFloat16(1.0f + 0x1.0p-8f).bits, 0x3f80);  // tie to even
  EXPECT_EQ(BFloat16(1.0f + 0x1.8p-8f).bits, 0x3f81);
}

TEST(SmallVector, GrowsBeyondInlineStorage) {
  SmallVector<int64_t, 2> v{1, 2};
  for (int i = 3; i <= 10; ++i) v.push_back(i);
  EXPECT_EQ(v.size(), 10u);
  EXPECT_EQ(v[9], 10);
  SmallVector<int64_t, 2> w = v;
  v.insert(v.begin() + 1, 99);
  EXPECT_EQ(v[1], 99);
  EXPECT_EQ(w[1], 2);
  SmallVector<int64_t, 2> moved = std::move(v);
  EXPECT_EQ(moved.size(), 11u);
}

TEST(Allocator, CountsAndReusesBlocks) {
  Allocator& a = allocator_for(Device());
  a.reset_peak();
  MemoryStats before = a.stats();
  { Tensor t = empty({1 << 20}); }
  MemoryStats mid = a.stats();
  EXPECT_EQ(mid.allocated, before.allocated);
  EXPECT_GE(mid.max_allocated, before.allocated + (int64_t{4} << 20));
  { Tensor t = empty({1 << 20}); }
  EXPECT_GT(a.stats().cache_hits, mid.cache_hits);  // the freed block was reused
  EXPECT_EQ(CachingCpuAllocator::round_size(100), 112u);
  EXPECT_EQ(CachingCpuAllocator::round_size(1), 64u);
}

TEST(Allocator, CacheKeepsTheFootprintWithinPeakUse) {
  CachingCpuAllocator a;
  const size_t big = size_t{8} << 20, other = size_t{6} << 20;
  void* p = a.allocate(big);
  a.deallocate(p, big);
  EXPECT_EQ(a.stats().reserved, static_cast<int64_t>(big));  // cached: within the 8 MiB peak
  void* q = a.allocate(other);                               // would exceed the peak: the cached block goes back
  EXPECT_EQ(a.stats().reserved, static_cast<int64_t>(other));
  void* r = a.allocate(big);  // a new peak of 14 MiB
  a.deallocate(q, other);
  a.deallocate(r, big);
  EXPECT_EQ(a.stats().reserved, static_cast<int64_t>(big + other));  // both cached
  const int64_t hits = a.stats().cache_hits;
  void* s = a.allocate(other);
  void* t = a.allocate(big);
  EXPECT_EQ(a.stats().cache_hits, hits + 2);
  a.deallocate(s, other);
  a.deallocate(t, big);
}

TEST(Random, PhiloxKnownAnswer) {
  // Random123's known-answer test for philox4x32-10 with zero key and counter.
  auto r = philox4x32({0, 0}, {0, 0, 0, 0});
  EXPECT_EQ(r[0], 0x6627e8d5u);
  EXPECT_EQ(r[1], 0xe169c58du);
  EXPECT_EQ(r[2], 0xbc57ac4cu);
  EXPECT_EQ(r[3], 0x9b00dbd8u);
  auto s = philox4x32({0xa4093822u, 0x299f31d0u}, {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u});
  EXPECT_EQ(s[0], 0xd16cfe09u);
  EXPECT_EQ(s[1], 0x94fdcceb);
  EXPECT_EQ(s[2], 0x5001e420u);
  EXPECT_EQ(s[3], 0x24126ea1u);
}

TEST(Random, SeedReproducesAcrossThreadCounts) {
  int n = get_num_threads();
  set_num_threads(1);
  manual_seed(7);
  Tensor a = randn({100001});
  set_num_threads(2);
  manual_seed(7);
  Tensor b = randn({100001});
  set_num_threads(n);
  EXPECT_TRUE((a == b).all().item<bool>());
}

TEST(ThreadPool, CoversEveryIndexOnceAndPropagatesErrors) {
  std::vector<std::atomic<int>> hits(100000);
  parallel_for(100000, 1000, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[i]++;
  });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  EXPECT_THROW(parallel_for(10000, 10,
                            [](int64_t b, int64_t) {
                              if (b > 0) fail("[test] boom");
                            }),
               ValueError);
}

TEST(Creation, NestedListsAndRanges) {
  Tensor t = tensor({{1, 2, 3}, {4, 5, 6}});
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.dtype(), int64);
  EXPECT_EQ(t.index({1, 2}).item<int64_t>(), 6);
  EXPECT_EQ(tensor({1.5, 2.0}).dtype(), float32);
  EXPECT_THROW(tensor({{1, 2}, {3}}), ValueError);
  EXPECT_EQ(arange(0, 10, 3).numel(), 4);
  EXPECT_EQ(linspace(0, 1, 5).index({4}).item<double>(), 1.0);
  EXPECT_EQ(eye(3).sum().item<double>(), 3.0);
  EXPECT_THROW(zeros({-1}), ValueError);
}

TEST(Views, ShareStorage) {
  Tensor x = arange(24).reshape({2, 3, 4});
  Tensor v = x.transpose(0, 2);
  EXPECT_TRUE(v.shares_storage(x));
  EXPECT_FALSE(v.is_contiguous());
  EXPECT_EQ(v.shape(), (Shape{4, 3, 2}));
  Tensor s = x.slice(2, 1, {}, 2);
  s.fill_(-1);
  EXPECT_EQ(x.index({0, 0, 1}).item<int64_t>(), -1);
  EXPECT_EQ(x.index({0, 0, 2}).item<int64_t>(), 2);
  EXPECT_THROW(v.view({24}), ValueError);
  EXPECT_EQ(v.reshape({24}).numel(), 24);
  EXPECT_TRUE(x.unsqueeze(0).squeeze(Dims{0}).shares_storage(x));
  EXPECT_EQ(x.expand({5, 2, 3, 4}).stride(0), 0);
  EXPECT_THROW(x.expand({3, 3, 4}), ValueError);
  EXPECT_THROW(x.transpose(0, 3), IndexError);
}

TEST(Elementwise, BroadcastAndStridedOutputs) {
  Tensor a = arange(6, {.dtype = float32}).reshape({2, 3});
  Tensor b = tensor({10.0, 20.0, 30.0});
  Tensor c = a + b;
  EXPECT_EQ(c.index({1, 2}).item<double>(), 35.0);
  Tensor t = a.t().contiguous();
  Tensor u = t.t() * 2;  // strided input, fresh output
  EXPECT_EQ(u.index({1, 0}).item<double>(), 6.0);
  EXPECT_THROW(a + tensor({1.0, 2.0}), ValueError);
  EXPECT_THROW(floor_divide(arange(3), 0), RuntimeError);
}

TEST(Printing, LooksLikeTorch) {
  EXPECT_EQ(tensor({1.0, 2.5}).to_string(), "tensor([1.0000, 2.5000])");
  EXPECT_EQ(tensor({1, 2}).to_string(), "tensor([1, 2])");
  EXPECT_EQ(tensor({{1.0, 2.0}, {3.0, 4.0}}).to_string(), "tensor([[1., 2.],\n        [3., 4.]])");
  EXPECT_EQ(tensor({1.0}, {.dtype = float64}).to_string(), "tensor([1.], dtype=ug.float64)");
}

TEST(Printing, OptionsAsTorch) {
  set_print_options({.precision = 2, .linewidth = 20});
  // torch.set_printoptions(precision=2, linewidth=20): two elements of width 4 fit each row
  EXPECT_EQ((arange(6.0) / 4).to_string(), "tensor([0.00, 0.25,\n        0.50, 0.75,\n        1.00, 1.25])");
  set_print_options({});
  EXPECT_EQ(print_options().precision, 4);
  EXPECT_THROW(set_print_options({.linewidth = 0}), ValueError);
}
