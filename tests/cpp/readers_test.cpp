// ug::data's CSV and .npz readers, the .npy parser on bytes, the image transforms and
// FashionMNIST (from Debian's dataset-fashion-mnist files).
#include <unistd.h>
#include <zip.h>

#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "test_util.h"

namespace ug {
namespace {

namespace fs = std::filesystem;
using data::CsvOptions;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(Csv, ReadsHeaderQuotesCrlfAndGaps) {
  const auto table = data::parse_csv("a,\"b,2\"\r\n1,\"2.5\"\r\n\r\n,-3e1\r\n");
  EXPECT_EQ(table.columns, (std::vector<std::string>{"a", "b,2"}));
  test::expect_values(table.data, {1, 2.5, NAN, -30}, 0);
  EXPECT_EQ(table.data.dtype(), float32);
  EXPECT_EQ(table.data.shape(), test::shape({2, 2}));
}

TEST(Csv, OptionsPickColumnsTypesAndHeader) {
  CsvOptions options;
  options.delimiter = ';';
  options.usecols = {std::string("c"), int64_t{0}};
  options.dtype = int64;
  const auto table = data::parse_csv("skip me\na;b;c\n1;2;3\n4;5;6\n", [&] {
    CsvOptions o = options;
    o.skip_rows = 1;
    return o;
  }());
  EXPECT_EQ(table.columns, (std::vector<std::string>{"c", "a"}));
  test::expect_tensor(table.data, {2, 2}, {3, 1, 6, 4});
  CsvOptions no_header;
  no_header.header = false;
  EXPECT_EQ(data::parse_csv("1,2\n", no_header).data.shape(), test::shape({1, 2}));
}

TEST(Csv, ErrorsNameTheLineAndColumn) {
  EXPECT_NE(error_of([] { data::parse_csv("1,2\n3,x\n", {}, "f.csv"); }).find("f.csv:2:3: 'x' in column 2"),
            std::string::npos);
  EXPECT_NE(error_of([] { data::parse_csv("1,2\n3\n", {}, "f.csv"); }).find("f.csv:2:2: this row has 1 fields"),
            std::string::npos);
  CsvOptions ints;
  ints.dtype = int32;
  EXPECT_NE(error_of([&] { data::parse_csv("1,\n", ints, "f.csv"); }).find("f.csv:1:3: missing value"),
            std::string::npos);
  EXPECT_THROW(data::parse_csv("\"open\n"), ValueError);
}

std::string npy_bytes(const std::string& dict, const std::string& payload) {
  std::string header = dict;
  header += std::string((64 - (10 + header.size() + 1) % 64) % 64, ' ') + "\n";
  std::string out = std::string("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  return out + header + payload;
}

TEST(Npy, ParsesBytesInMemory) {
  const int32_t values[] = {1, 2, 3, 4, 5, 6};
  const std::string payload(reinterpret_cast<const char*>(values), sizeof(values));
  Tensor c = data::parse_npy(npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", payload));
  test::expect_tensor(c, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor f = data::parse_npy(npy_bytes("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }", payload));
  test::expect_tensor(f, {2, 3}, {1, 3, 5, 2, 4, 6});
  EXPECT_THROW(data::parse_npy(npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (7,), }", payload)),
               ValueError);
  EXPECT_THROW(data::parse_npy(npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (99999999999,)}", "")),
               ValueError);
  EXPECT_THROW(data::parse_npy(std::string("\x93NUMPY", 6)), ValueError);
}

TEST(Npy, ABoolByteOtherThanZeroOrOneReadsAsTrue) {
  // NumPy and torch take any nonzero byte for True; a C++ bool may only hold 0 or 1 (the fuzzer's
  // finding: a copy of such a tensor loaded 64 as a bool).
  Tensor b = data::parse_npy(
      npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }", std::string("\x00\x40\x01\xff", 4)));
  const Tensor counted = b.to(DType::Int64);
  EXPECT_EQ(std::vector<int64_t>(counted.data_ptr<int64_t>(), counted.data_ptr<int64_t>() + 4),
            (std::vector<int64_t>{0, 1, 1, 1}));
}

/** An .npz of the given .npy members, written with libzip: stored or deflated. */
std::string make_npz(const std::vector<std::pair<std::string, std::string>>& members, bool deflate) {
  const fs::path path = fs::temp_directory_path() / ("ug_readers_" + std::to_string(::getpid()) + ".npz");
  int error = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &error);
  if (!z) throw std::runtime_error("zip_open failed");
  for (const auto& [name, bytes] : members) {
    zip_source_t* src = zip_source_buffer(z, bytes.data(), bytes.size(), 0);
    const zip_int64_t index = zip_file_add(z, name.c_str(), src, ZIP_FL_OVERWRITE);
    zip_set_file_compression(z, static_cast<zip_uint64_t>(index), deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
  }
  if (zip_close(z) != 0) throw std::runtime_error("zip_close failed");
  return path.string();
}

TEST(Npz, ReadsStoredAndDeflatedMembersInOrder) {
  const double values[] = {0.5, 1.5, 2.5};
  const std::string x = npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }",
                                  std::string(reinterpret_cast<const char*>(values), sizeof(values)));
  const std::string y = npy_bytes("{'descr': '|u1', 'fortran_order': False, 'shape': (2, 2), }", "\1\2\3\4");
  for (bool deflate : {false, true}) {
    const std::string path = make_npz({{"x.npy", x}, {"y.npy", y}}, deflate);
    const data::NpzArrays arrays = data::read_npz(path);
    ASSERT_EQ(arrays.size(), 2u);
    EXPECT_EQ(arrays[0].first, "x");
    test::expect_tensor(arrays[0].second, {3}, {0.5, 1.5, 2.5});
    EXPECT_EQ(arrays[1].first, "y");
    test::expect_tensor(arrays[1].second, {2, 2}, {1, 2, 3, 4});
    fs::remove(path);
  }
  EXPECT_THROW(data::parse_npz("PK\3\4 not really"), ValueError);
  const std::string bad = make_npz({{"x.txt", "hello"}}, false);
  EXPECT_NE(error_of([&] { data::read_npz(bad); }).find("not an .npy member"), std::string::npos);
  fs::remove(bad);
}

TEST(Transforms, BatchAndImageShapesAndSeededRandomness) {
  namespace T = data::transforms;
  Tensor batch = arange(2 * 3 * 4 * 5, {.dtype = float32}).reshape({2, 3, 4, 5});
  test::expect_tensor(T::RandomHorizontalFlip(1.0)(batch), {2, 3, 4, 5}, test::values(batch.flip({3})));
  Tensor normalized = T::Normalize({1, 2, 3}, {2, 4, 8})(batch);
  test::expect_tensor(normalized, {2, 3, 4, 5},
                      test::values((batch - tensor({1.0f, 2.0f, 3.0f}).reshape({3, 1, 1})) /
                                   tensor({2.0f, 4.0f, 8.0f}).reshape({3, 1, 1})));
  T::Compose crop_flip({std::make_shared<T::RandomCrop>(std::vector<int64_t>{3, 3}, std::vector<int64_t>{1}),
                        std::make_shared<T::RandomHorizontalFlip>()});
  Generator g(42);
  Tensor first, second;
  {
    GeneratorScope scope(g);
    first = crop_flip(batch);
  }
  g.manual_seed(42);
  {
    GeneratorScope scope(g);
    second = crop_flip(batch);
  }
  EXPECT_EQ(first.shape(), test::shape({2, 3, 3, 3}));
  EXPECT_EQ(test::values(first), test::values(second));
  Tensor image = T::ToTensor()(full({4, 5, 3}, 255, {.dtype = uint8}));
  test::expect_tensor(image, {3, 4, 5}, std::vector<double>(60, 1.0));
}

TEST(FashionMNIST, TestSplitBatchesAndMissingFiles) {
  namespace T = data::transforms;
  data::FashionMNIST ds("", false, std::make_shared<T::Normalize>(std::vector<double>{0.5}, std::vector<double>{0.5}));
  ASSERT_EQ(ds.size(), 10000);
  EXPECT_EQ(data::FashionMNIST::classes()[9], "Ankle boot");
  const int64_t indices[] = {0, 9999, 3};
  data::Example batch = ds.get_batch(indices);
  EXPECT_EQ(batch[0].shape(), test::shape({3, 1, 28, 28}));
  EXPECT_EQ(batch[1].dtype(), int64);
  Tensor expected =
      (ds.data().index_select(0, tensor({0, 9999, 3}, {.dtype = int64})).to(float32) / 255.0f - 0.5f) / 0.5f;
  test::expect_values(batch[0].reshape({3, 28, 28}), test::values(expected), 1e-6);
  test::expect_values(ds.get(3)[0].reshape({28, 28}), test::values(expected.select(0, 2)), 1e-6);
  EXPECT_THROW(ds.get(10000), IndexError);
  const std::string message = error_of([] { data::FashionMNIST("/nonexistent-folder"); });
  EXPECT_NE(message.find("/nonexistent-folder/train-images-idx3-ubyte.gz"), std::string::npos);
  EXPECT_NE(message.find("sudo apt-get install dataset-fashion-mnist"), std::string::npos);
  EXPECT_THROW(data::FashionMNIST("/nonexistent-folder"), FileNotFoundError);
}

}  // namespace
}  // namespace ug
