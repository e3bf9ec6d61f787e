// The HDF5 wrapper: round trips of every supported type, strings, attributes, compression, and
// errors that name the file and the object.
#include <gtest/gtest.h>

#include <fstream>
#include <limits>

#include "reference/core/error.hpp"
#include "tests/traces/trace_fixtures.hpp"
#include "traces/hdf5.hpp"

namespace specdec {
namespace {

using trace_test::TempDir;

// Runs f, expects a specdec::Error whose message contains every needle.
template <class F> void expect_error(F f, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "expected specdec::Error containing '" << needles.front() << "'";
  } catch (const Error& e) {
    for (const std::string& n : needles) {
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << "message: " << e.what() << "\nmissing: " << n;
    }
  }
}

template <class T> std::vector<T> ramp(std::size_t n, T scale) {
  std::vector<T> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<T>(static_cast<T>(i) * scale);
  return v;
}

TEST(Hdf5, VectorsOfEveryTypeRoundTrip) {
  TempDir dir;
  const auto path = dir / "v.h5";
  const std::vector<int32_t> i32 = {-5, 0, std::numeric_limits<int32_t>::max()};
  const std::vector<int64_t> i64 = {std::numeric_limits<int64_t>::min(), 7};
  const std::vector<uint8_t> u8 = {0, 1, 255};
  const std::vector<uint32_t> u32 = {0xffffffffu, 3};
  const std::vector<uint64_t> u64 = {0xfedcba9876543210ull};
  const std::vector<float> f32 = {-0.0f, 1.5f, std::numeric_limits<float>::denorm_min()};
  const std::vector<double> f64 = {3.141592653589793, -1e300};
  {
    h5::File f = h5::File::create(path);
    f.write_vector("a/i32", i32);
    f.write_vector("a/i64", i64);
    f.write_vector("u8", u8);
    f.write_vector("u32", u32);
    f.write_vector("u64", u64);
    f.write_vector("f32", f32);
    f.write_vector("f64", f64);
    f.write_vector("empty", std::vector<int32_t>{});
    f.close();
  }
  const h5::File f = h5::File::open_read_only(path);
  EXPECT_EQ(f.read_vector<int32_t>("a/i32"), i32);
  EXPECT_EQ(f.read_vector<int64_t>("a/i64"), i64);
  EXPECT_EQ(f.read_vector<uint8_t>("u8"), u8);
  EXPECT_EQ(f.read_vector<uint32_t>("u32"), u32);
  EXPECT_EQ(f.read_vector<uint64_t>("u64"), u64);
  const std::vector<float> f32_back = f.read_vector<float>("f32");
  ASSERT_EQ(f32_back.size(), f32.size());
  EXPECT_TRUE(std::signbit(f32_back[0]));  // -0.0 kept bit for bit
  EXPECT_EQ(f32_back[2], f32[2]);
  EXPECT_EQ(f.read_vector<double>("f64"), f64);
  EXPECT_TRUE(f.read_vector<int32_t>("empty").empty());
  EXPECT_EQ(f.open_dataset("u64").dtype(), h5::Dtype::uint64);
  EXPECT_EQ(f.open_dataset("empty").shape(), (std::vector<uint64_t>{0}));
}

TEST(Hdf5, MatricesRowRangesAndCompression) {
  TempDir dir;
  const auto path = dir / "m.h5";
  const uint64_t rows = 64, cols = 1000;  // 256 KB of floats: large enough to be compressed
  const std::vector<float> big = ramp<float>(rows * cols, 0.25f);
  const std::vector<int32_t> small = ramp<int32_t>(6, 3);
  {
    h5::File f = h5::File::create(path);
    f.write_matrix<float>("big", rows, cols, big.data());
    f.write_matrix<int32_t>("small", 2, 3, small.data());
    h5::Dataset d = f.create_matrix("filled", h5::Dtype::uint32, 3, 2);
    const std::vector<uint32_t> r0 = {1, 2}, r12 = {3, 4, 5, 6};
    d.write_rows<uint32_t>(0, 1, r0.data());
    d.write_rows<uint32_t>(1, 2, r12.data());
    expect_error([&] { d.write_rows<uint32_t>(2, 2, r12.data()); }, {"/filled", "rows [2, 4) out of range"});
    f.close();
  }
  const h5::File f = h5::File::open_read_only(path);
  uint64_t r = 0, c = 0;
  EXPECT_EQ(f.read_matrix<float>("big", &r, &c), big);
  EXPECT_EQ(r, rows);
  EXPECT_EQ(c, cols);
  EXPECT_EQ(f.read_matrix<int32_t>("small", &r, &c), small);
  EXPECT_EQ(r, 2u);
  EXPECT_EQ(c, 3u);
  EXPECT_EQ(f.read_matrix<uint32_t>("filled", &r, &c), (std::vector<uint32_t>{1, 2, 3, 4, 5, 6}));
  std::vector<float> middle(2 * cols);
  f.open_dataset("big").read_rows<float>(10, 2, middle.data());
  EXPECT_EQ(middle.front(), big[10 * cols]);
  EXPECT_EQ(middle.back(), big[12 * cols - 1]);

  // The large dataset is chunked and deflated when the filter exists; the small one is not.
  auto filters = [&](const char* name) {
    const h5::Dataset d = f.open_dataset(name);
    const hid_t dcpl = H5Dget_create_plist(d.id());
    const int n = H5Pget_nfilters(dcpl);
    H5Pclose(dcpl);
    return n;
  };
  if (h5::deflate_available()) {
    EXPECT_GE(filters("big"), 1);
  } else {
    EXPECT_EQ(filters("big"), 0);
  }
  EXPECT_EQ(filters("small"), 0);
}

TEST(Hdf5, AttributesAndStrings) {
  TempDir dir;
  const auto path = dir / "s.h5";
  const std::string utf8 = "Grüße, 世界";
  {
    h5::File f = h5::File::create(path);
    f.write_attribute("i", int64_t{-42});
    f.write_attribute("u", uint64_t{0xffffffffffffffffull});
    f.write_attribute("d", 0.1);
    f.write_attribute("vs", utf8);
    f.write_attribute("fs", std::string("fixed"), h5::StringStorage::fixed);
    f.write_attribute("empty_fixed", std::string(), h5::StringStorage::fixed);
    f.write_attribute("i", int64_t{7});  // replaces
    h5::Group g = f.create_group("g/h");
    g.write_string("json", R"({"a": [1, 2]})");
    g.write_string("fixed", "abc", h5::StringStorage::fixed);
    g.write_strings("list", {"x", "", utf8});
    g.write_attribute("on_group", std::string("yes"));
    f.close();
  }
  const h5::File f = h5::File::open_read_only(path);
  EXPECT_EQ(f.read_int64_attribute("i"), 7);
  EXPECT_EQ(f.read_uint64_attribute("u"), 0xffffffffffffffffull);
  EXPECT_EQ(f.read_double_attribute("d"), 0.1);
  EXPECT_EQ(f.read_string_attribute("vs"), utf8);
  EXPECT_EQ(f.read_string_attribute("fs"), "fixed");
  EXPECT_EQ(f.read_string_attribute("empty_fixed"), "");
  const h5::Group g = f.open_group("g/h");
  EXPECT_EQ(g.path(), "/g/h");
  EXPECT_EQ(g.read_string("json"), R"({"a": [1, 2]})");
  EXPECT_EQ(g.read_string("fixed"), "abc");
  EXPECT_EQ(g.read_strings("list"), (std::vector<std::string>{"x", "", utf8}));
  EXPECT_EQ(g.read_string_attribute("on_group"), "yes");
  EXPECT_TRUE(f.has("g/h/json"));
  EXPECT_TRUE(f.has_group("g/h"));
  EXPECT_FALSE(f.has_dataset("g/h"));
  EXPECT_TRUE(f.has_dataset("g/h/json"));
  EXPECT_FALSE(f.has("g/missing/json"));  // intermediate component missing: "no", not an error
  EXPECT_FALSE(f.has_attribute("nope"));
  EXPECT_EQ(f.open_group("g").members(), (std::vector<std::string>{"h"}));
  EXPECT_EQ(g.members(), (std::vector<std::string>{"fixed", "json", "list"}));
}

TEST(Hdf5, ErrorsNameTheFileAndObject) {
  TempDir dir;
  const auto path = dir / "e.h5";
  {
    h5::File f = h5::File::create(path, "e.h5");
    f.write_vector("steps/token", std::vector<float>{1.0f});
    f.write_matrix<int32_t>("m", 1, 2, std::vector<int32_t>{1, 2}.data());
    f.write_attribute("s", std::string("x"));
    expect_error([&] { f.write_vector("steps/token", std::vector<float>{}); }, {"e.h5: /steps/token", "already exists"});
    expect_error([&] { f.write_attribute("bad", std::string("a\0b", 3)); }, {"e.h5: /", "NUL"});
    f.close();
  }
  const h5::File f = h5::File::open_read_only(path, "e.h5");
  expect_error([&] { f.read_vector<int32_t>("steps/tokens"); }, {"e.h5: /steps/tokens: dataset missing"});
  expect_error([&] { f.read_vector<int32_t>("steps/token"); }, {"e.h5: /steps/token: dtype is float32, expected int32"});
  expect_error([&] { f.read_vector<int32_t>("m"); }, {"e.h5: /m: expected a 1-D dataset, found shape (1, 2)"});
  expect_error([&] { f.open_group("m"); }, {"e.h5: /m: expected a group"});
  expect_error([&] { f.open_dataset("steps"); }, {"e.h5: /steps: expected a dataset"});
  expect_error([&] { f.read_int64_attribute("s"); }, {"e.h5: /: attribute 's' has dtype string, expected int64"});
  expect_error([&] { f.read_string_attribute("missing"); }, {"e.h5: /: attribute 'missing' missing"});
  expect_error([&] { f.read_string("steps/token"); }, {"e.h5: /steps/token", "expected string"});

  expect_error([&] { h5::File::create(path); }, {path.string(), "already exists"});
  expect_error([&] { h5::File::open_read_only(dir / "absent.h5"); }, {"absent.h5: file not found"});
  const auto garbage = dir / "garbage.h5";
  std::ofstream(garbage) << "this is not HDF5\n";
  EXPECT_FALSE(h5::File::is_hdf5(garbage));
  expect_error([&] { h5::File::open_read_only(garbage); }, {"garbage.h5: not an HDF5 file"});
  expect_error([&] { h5::File::open_read_only(dir.path()); }, {"not a regular file"});
}

}  // namespace
}  // namespace specdec
