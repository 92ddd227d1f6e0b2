// ug::io safetensors: round trips, the layout the reference writes, atomic saves and the
// checks that make a malformed file raise instead of crash.
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "test_util.h"
#include "ug/io/safetensors.h"

namespace ug {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("ug_safetensors_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string with_length(const std::string& header, const std::string& data) {
  std::string text = header + std::string((8 - header.size() % 8) % 8, ' ');
  uint64_t n = text.size();
  return std::string(reinterpret_cast<const char*>(&n), 8) + text + data;
}

TEST(Safetensors, RoundTripsEveryDtypeAndKeepsNamesSorted) {
  io::TensorDict d;
  for (DType t : {float32, float64, float16, bfloat16, int32, int64, uint8, bool_})
    d.insert(std::string("x_") + std::string(dtype_name(t)), arange(6).to(t).reshape({2, 3}));
  d.insert("t", arange(6.0).reshape({2, 3}).transpose(0, 1));
  d.insert("scalar", scalar_tensor(3.5));
  d.insert("empty", zeros({0, 4}, {.dtype = int64}));
  io::TensorDict back = io::load_bytes(io::save_bytes(d));
  std::vector<std::string> names = d.keys();
  std::sort(names.begin(), names.end());
  EXPECT_EQ(back.keys(), names);
  for (const auto& [name, t] : d) {
    EXPECT_EQ(back[name].dtype(), t.dtype()) << name;
    EXPECT_EQ(back[name].shape(), t.shape()) << name;
    EXPECT_EQ(test::values(back[name]), test::values(t)) << name;
  }
}

TEST(Safetensors, LaysTensorsOutWidestFirstLikeTheReference) {
  io::TensorDict d{{"b", ones({3}, {.dtype = bool_})}, {"a", ones({2})}, {"c", ones({1}, {.dtype = int64})}};
  std::string bytes = io::save_bytes(d, {{"k", "v"}});
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  std::string header = bytes.substr(8, n);
  EXPECT_EQ(header.substr(0, header.find_last_not_of(' ') + 1),
            R"({"__metadata__":{"k":"v"},"c":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},)"
            R"("a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},)"
            R"("b":{"dtype":"BOOL","shape":[3],"data_offsets":[16,19]}})");
  EXPECT_EQ(bytes.size(), 8 + n + 19);
}

TEST(Safetensors, SaveFileReplacesAtomicallyAndLeavesNoTemporaryFile) {
  fs::path dir = fresh_dir("atomic");
  std::string path = (dir / "m.safetensors").string();
  io::save_file({{"w", ones({2})}}, path);
  io::save_file({{"w", full({3}, 2.0)}}, path, {{"epoch", "3"}});
  test::expect_tensor(io::load_file(path)["w"], {3}, {2, 2, 2});
  EXPECT_EQ(io::load_metadata(path), (io::Metadata{{"epoch", "3"}}));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}), 1);
  EXPECT_THROW(io::save_file({{"w", ones({2})}}, (dir / "absent" / "m.safetensors").string()), RuntimeError);
  fs::remove_all(dir);
}

TEST(Safetensors, MalformedInputRaisesValueError) {
  const std::string f32 = R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  auto expect_error = [](const std::string& bytes, const std::string& fragment) {
    try {
      io::load_bytes(bytes);
      ADD_FAILURE() << "no error for " << fragment;
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("[safetensors] '<bytes>': ", 0), 0u) << e.what();
    }
  };
  std::string good = with_length(R"({"a":)" + f32 + "}", std::string(8, '\0'));
  EXPECT_EQ(io::load_bytes(good).size(), 1u);
  for (size_t keep : {size_t{0}, size_t{5}, size_t{8}, size_t{30}, good.size() - 1})
    EXPECT_THROW(io::load_bytes(good.substr(0, keep)), ValueError) << keep;
  std::string huge = good;
  uint64_t n = uint64_t{1} << 60;
  std::memcpy(huge.data(), &n, 8);
  expect_error(huge, "exceeds the limit");
  expect_error(with_length("{\"a\":", ""), "not valid JSON");
  expect_error(with_length(R"({"a":)" + f32 + R"(,"a":)" + f32 + "}", std::string(8, '\0')), "more than once");
  expect_error(with_length(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,8]}})", std::string(8, '\0')),
               "not a non-negative integer");
  expect_error(with_length(R"({"a":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", std::string(8, '\0')),
               "unknown or unsupported dtype");
  expect_error(
      with_length(R"({"a":)" + f32 + R"(,"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", std::string(8, '\0')),
      "overlap");
}

}  // namespace
}  // namespace ug
