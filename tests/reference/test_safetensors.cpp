// safetensors reader and writer: round trips of every dtype, files written by an independent
// (numpy) implementation, and every malformed-header case a user can hit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "reference/core/error.hpp"
#include "reference/core/half.hpp"
#include "reference/io/atomic_file.hpp"
#include "reference/io/safetensors.hpp"
#include "tests/reference/scratch_dir.hpp"

namespace specdec {
namespace {

using testing::ScratchDir;

uint32_t bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

std::vector<float> random_floats(std::size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> v(n);
  for (float& x : v) {
    // Mixed magnitudes, both signs, some exact zeros.
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    x = static_cast<float>((u - 0.5) * std::ldexp(1.0, static_cast<int>(rng() % 30) - 15));
    if (rng() % 17 == 0) x = 0.0f;
  }
  return v;
}

// Writes a file from a literal header (padded to `header_len` if given) and data bytes.
void write_raw(const std::filesystem::path& p, const std::string& header, const std::string& data,
               int64_t header_len = -1) {
  const uint64_t n = header_len < 0 ? header.size() : static_cast<uint64_t>(header_len);
  std::string bytes(8, '\0');
  std::memcpy(bytes.data(), &n, 8);
  testing::write_text(p, bytes + header + data);
}

// The specdec::Error message of opening `p`, or "" if it opened.
std::string open_error(const std::filesystem::path& p) {
  try {
    SafetensorsFile f(p);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Expects opening a file with this header and `data_bytes` zero bytes of data to fail with a
// message that names the file and contains `needle`.
void expect_header_error(const std::string& header, std::size_t data_bytes, const std::string& needle) {
  ScratchDir dir("st-bad");
  const auto p = dir / "bad.safetensors";
  write_raw(p, header, std::string(data_bytes, '\0'));
  const std::string msg = open_error(p);
  EXPECT_NE(msg.find("bad.safetensors"), std::string::npos) << "header " << header << "\nmessage: " << msg;
  EXPECT_NE(msg.find(needle), std::string::npos) << "header " << header << "\nexpected '" << needle
                                                 << "' in message: " << msg;
}

TEST(Safetensors, FloatDtypesRoundTrip) {
  ScratchDir dir("st-float");
  const uint64_t seed = 11;
  const std::vector<float> v = random_floats(6 * 7, seed);
  SafetensorsWriter w;
  w.add_floats("a.f32", Dtype::F32, {6, 7}, v);
  w.add_floats("a.f16", Dtype::F16, {6, 7}, v);
  w.add_floats("a.bf16", Dtype::BF16, {42}, v);
  w.add_floats("a.f64", Dtype::F64, {7, 3, 2}, v);
  w.add_floats("scalar", Dtype::F32, {}, std::vector<float>{2.5f});
  w.add_floats("empty", Dtype::F16, {0, 3}, std::vector<float>{});
  w.set_metadata("format", "pt");
  const auto p = dir / "m.safetensors";
  w.write(p);

  const SafetensorsFile f(p);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  ASSERT_EQ(f.tensors().size(), 6u);
  EXPECT_EQ(f.info("a.f16").dtype, Dtype::F16);
  EXPECT_EQ(f.info("a.f16").shape, (std::vector<int64_t>{6, 7}));
  EXPECT_EQ(f.info("a.f64").shape, (std::vector<int64_t>{7, 3, 2}));
  EXPECT_EQ(f.info("scalar").shape, std::vector<int64_t>{});
  EXPECT_EQ(f.floats("scalar"), std::vector<float>{2.5f});
  EXPECT_TRUE(f.floats("empty").empty());
  const auto f32 = f.floats("a.f32"), f16 = f.floats("a.f16"), bf16 = f.floats("a.bf16"), f64 = f.floats("a.f64");
  for (std::size_t i = 0; i < v.size(); ++i) {
    EXPECT_EQ(bits(f32[i]), bits(v[i])) << "seed " << seed << " F32 element " << i;
    EXPECT_EQ(bits(f64[i]), bits(v[i])) << "seed " << seed << " F64 element " << i;
    EXPECT_EQ(bits(f16[i]), bits(half_to_float(float_to_half(v[i])))) << "seed " << seed << " F16 element " << i;
    EXPECT_EQ(bits(bf16[i]), bits(bfloat16_to_float(float_to_bfloat16(v[i])))) << "seed " << seed << " BF16 element " << i;
  }
  // Raw bytes are the stored encoding.
  const auto raw = f.raw("a.f16");
  ASSERT_EQ(raw.size(), 2 * v.size());
  uint16_t first;
  std::memcpy(&first, raw.data(), 2);
  EXPECT_EQ(first, float_to_half(v[0]));
}

TEST(Safetensors, IntegerDtypesRoundTrip) {
  ScratchDir dir("st-int");
  SafetensorsWriter w;
  const std::vector<int64_t> i64 = {0, -1, 5, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  w.add_int64s("d2t", Dtype::I64, {5}, i64);
  w.add_int64s("t2d", Dtype::BOOL, {2, 3}, std::vector<int64_t>{1, 0, 0, 1, 1, 0});
  w.add_int64s("i32", Dtype::I32, {3}, std::vector<int64_t>{-2147483648LL, 0, 2147483647LL});
  w.add_int64s("u8", Dtype::U8, {2}, std::vector<int64_t>{0, 255});
  w.add_int64s("i8", Dtype::I8, {2}, std::vector<int64_t>{-128, 127});
  w.add_int64s("i16", Dtype::I16, {2}, std::vector<int64_t>{-32768, 32767});
  w.add_int64s("u16", Dtype::U16, {1}, std::vector<int64_t>{65535});
  w.add_int64s("u32", Dtype::U32, {1}, std::vector<int64_t>{4294967295LL});
  w.add_int64s("u64", Dtype::U64, {1}, std::vector<int64_t>{123456789012345LL});
  const auto p = dir / "ints.safetensors";
  w.write(p);
  const SafetensorsFile f(p);
  EXPECT_EQ(f.int64s("d2t"), i64);
  EXPECT_EQ(f.int64s("t2d"), (std::vector<int64_t>{1, 0, 0, 1, 1, 0}));
  EXPECT_EQ(f.info("t2d").dtype, Dtype::BOOL);
  EXPECT_EQ(f.int64s("i32"), (std::vector<int64_t>{-2147483648LL, 0, 2147483647LL}));
  EXPECT_EQ(f.int64s("u8"), (std::vector<int64_t>{0, 255}));
  EXPECT_EQ(f.int64s("i8"), (std::vector<int64_t>{-128, 127}));
  EXPECT_EQ(f.int64s("i16"), (std::vector<int64_t>{-32768, 32767}));
  EXPECT_EQ(f.int64s("u16"), (std::vector<int64_t>{65535}));
  EXPECT_EQ(f.int64s("u32"), (std::vector<int64_t>{4294967295LL}));
  EXPECT_EQ(f.int64s("u64"), (std::vector<int64_t>{123456789012345LL}));
}

TEST(Safetensors, HeaderIsPaddedToEightBytesAndSortedTensorsKeepOffsets) {
  ScratchDir dir("st-pad");
  for (int extra = 0; extra < 8; ++extra) {
    SafetensorsWriter w;
    std::string name = "t";  // appended: GCC 12 warns falsely (-Wrestrict) on "t" + std::string
    name.append(static_cast<std::size_t>(extra), 'x');
    w.add_floats(name, Dtype::F32, {1}, std::vector<float>{1.0f});
    w.add_floats("a", Dtype::BF16, {3}, std::vector<float>{1, 2, 3});
    const auto p = dir / ("pad" + std::to_string(extra) + ".safetensors");
    w.write(p);
    const std::string bytes = testing::read_text(p);
    uint64_t n;
    std::memcpy(&n, bytes.data(), 8);
    EXPECT_EQ(n % 8, 0u) << "case " << extra;
    EXPECT_EQ(bytes.size(), 8 + n + 4 + 6) << "case " << extra;
    const SafetensorsFile f(p);
    // Stored in the order added, whatever the header's key order.
    EXPECT_EQ(f.info("a").begin, 4u) << "case " << extra;
    EXPECT_EQ(f.floats("a"), (std::vector<float>{1, 2, 3})) << "case " << extra;
  }
}

TEST(Safetensors, ReadsFloat8) {
  ScratchDir dir("st-f8");
  const auto p = dir / "f8.safetensors";
  // E4M3FN: 0x38 = 1, 0x7e = 448 (largest), 0x01 = 2^-9, 0xb8 = -1, 0x7f = NaN.
  // E5M2: the upper byte of a half: 0x3c = 1, 0x7c = inf, 0xc0 = -2.
  write_raw(p,
            R"({"e4":{"dtype":"F8_E4M3","shape":[5],"data_offsets":[0,5]},)"
            R"("e5":{"dtype":"F8_E5M2","shape":[3],"data_offsets":[5,8]}})",
            std::string("\x38\x7e\x01\xb8\x7f\x3c\x7c\xc0", 8));
  const SafetensorsFile f(p);
  const auto e4 = f.floats("e4");
  EXPECT_EQ(e4[0], 1.0f);
  EXPECT_EQ(e4[1], 448.0f);
  EXPECT_EQ(e4[2], std::ldexp(1.0f, -9));
  EXPECT_EQ(e4[3], -1.0f);
  EXPECT_TRUE(std::isnan(e4[4]));
  EXPECT_EQ(f.floats("e5"), (std::vector<float>{1.0f, INFINITY, -2.0f}));
}

TEST(Safetensors, AcceptsPaddedHeadersGapsAndTrailingBytes) {
  ScratchDir dir("st-lenient");
  const auto p = dir / "ok.safetensors";
  const float values[2] = {1.5f, -2.0f};
  std::string data(12, '\0');
  std::memcpy(data.data() + 4, values, 8);  // 4-byte gap before the tensor
  write_raw(p, R"({"__metadata__":{"k":"v"},"x":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}       )",
            data + "trailing");
  const SafetensorsFile f(p);
  EXPECT_EQ(f.floats("x"), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(f.metadata().at("k"), "v");
}

// --- malformed files ---------------------------------------------------------------------------

TEST(SafetensorsErrors, FileShorterThanEightBytes) {
  ScratchDir dir("st-short");
  for (std::size_t size : {0u, 5u, 7u}) {
    const auto p = dir / "bad.safetensors";
    testing::write_text(p, std::string(size, '\x01'));
    const std::string msg = open_error(p);
    EXPECT_NE(msg.find("bad.safetensors"), std::string::npos) << "size " << size << ": " << msg;
    EXPECT_NE(msg.find("shorter than the 8-byte"), std::string::npos) << "size " << size << ": " << msg;
  }
}

TEST(SafetensorsErrors, MissingFile) {
  ScratchDir dir("st-missing");
  const std::string msg = open_error(dir / "nope.safetensors");
  EXPECT_NE(msg.find("nope.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot open"), std::string::npos) << msg;
}

TEST(SafetensorsErrors, HeaderLengthPastEndOfFile) {
  ScratchDir dir("st-len");
  const auto p = dir / "bad.safetensors";
  write_raw(p, "{}", "", 1000);
  std::string msg = open_error(p);
  EXPECT_NE(msg.find("bad.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("header length 1000 runs past the end"), std::string::npos) << msg;
  write_raw(p, "{}", "", -1 + 0x7fffffffffffffffLL);  // huge: must not overflow
  msg = open_error(p);
  EXPECT_NE(msg.find("runs past the end"), std::string::npos) << msg;
}

TEST(SafetensorsErrors, HeaderNotJsonOrNotObject) {
  expect_header_error("{\"a\": ", 0, "not valid JSON");
  expect_header_error("hello", 0, "not valid JSON");
  expect_header_error("[1, 2]", 0, "must be a JSON object");
  expect_header_error("\"text\"", 0, "must be a JSON object");
}

TEST(SafetensorsErrors, MissingOrWrongTypedFields) {
  expect_header_error(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", 4, "tensor 'w': header entry is missing 'dtype'");
  expect_header_error(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", 4, "tensor 'w': header entry is missing 'shape'");
  expect_header_error(R"({"w":{"dtype":"F32","shape":[1]}})", 4, "tensor 'w': header entry is missing 'data_offsets'");
  expect_header_error(R"({"w":[1]})", 4, "tensor 'w': header entry must be an object");
  expect_header_error(R"({"w":{"dtype":7,"shape":[1],"data_offsets":[0,4]}})", 4, "'dtype' must be a string");
  expect_header_error(R"({"w":{"dtype":"F32","shape":"1","data_offsets":[0,4]}})", 4, "'shape' must be a list");
  expect_header_error(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4,
                      "'shape' entry must be a non-negative integer");
  expect_header_error(R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4,
                      "'shape' entry must be a non-negative integer");
  expect_header_error(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 4,
                      "'data_offsets' must be a list [begin, end]");
  expect_header_error(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":{"a":0}}})", 4,
                      "'data_offsets' must be a list [begin, end]");
  expect_header_error(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,"4"]}})", 4,
                      "'data_offsets' end must be a non-negative integer");
  expect_header_error(R"({"__metadata__":{"format":1}})", 0, "'__metadata__' entry 'format' must be a string");
  expect_header_error(R"({"__metadata__":[]})", 0, "'__metadata__' must be an object");
}

TEST(SafetensorsErrors, UnknownDtype) {
  expect_header_error(R"({"w":{"dtype":"F7","shape":[1],"data_offsets":[0,4]}})", 4, "unknown dtype 'F7'");
  expect_header_error(R"({"w":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}})", 4, "unknown dtype 'f32'");
}

TEST(SafetensorsErrors, OffsetsOutOfRangeReversedOrOverlapping) {
  expect_header_error(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4,
                      "data_offsets end 8 is beyond the data section (4 bytes");
  expect_header_error(R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}})", 4,
                      "data_offsets begin 4 is after end 0");
  expect_header_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                      R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                      12, "tensors 'a' [0, 8) and 'b' [4, 12) overlap");
  // Identical ranges overlap too.
  expect_header_error(R"({"a":{"dtype":"I32","shape":[1],"data_offsets":[0,4]},)"
                      R"("b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                      4, "overlap");
}

TEST(SafetensorsErrors, ByteSizeNotMatchingShape) {
  expect_header_error(R"({"w":{"dtype":"F16","shape":[2,4],"data_offsets":[0,8]}})", 8,
                      "data_offsets cover 8 bytes but shape [2, 4] of F16 needs 16 bytes");
  expect_header_error(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}})", 8,
                      "needs an impossible number of bytes");
}

TEST(SafetensorsErrors, DuplicateNames) {
  expect_header_error(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                      R"("w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                      8, "key 'w' more than once");
}

TEST(SafetensorsErrors, WrongKindOfAccess) {
  ScratchDir dir("st-access");
  SafetensorsWriter w;
  w.add_floats("f", Dtype::F32, {1}, std::vector<float>{1.0f});
  w.add_int64s("i", Dtype::I64, {1}, std::vector<int64_t>{3});
  const auto p = dir / "m.safetensors";
  w.write(p);
  const SafetensorsFile f(p);
  EXPECT_THROW(
      {
        try {
          f.floats("i");
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("tensor 'i' has dtype I64, expected a floating-point"), std::string::npos)
              << e.what();
          throw;
        }
      },
      Error);
  EXPECT_THROW(f.int64s("f"), Error);
  try {
    f.info("absent");
    ADD_FAILURE() << "no error for an absent tensor";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no tensor named 'absent'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("m.safetensors"), std::string::npos) << e.what();
  }
  // A BOOL byte other than 0/1 is corrupt.
  const auto b = dir / "bool.safetensors";
  write_raw(b, R"({"t2d":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", std::string("\x01\x02", 2));
  const SafetensorsFile fb(b);
  EXPECT_THROW(fb.int64s("t2d"), Error);
}

TEST(SafetensorsErrors, WriterRejectsBadInput) {
  SafetensorsWriter w;
  w.add_floats("x", Dtype::F32, {2}, std::vector<float>{1, 2});
  EXPECT_THROW(w.add_floats("x", Dtype::F32, {2}, std::vector<float>{1, 2}), Error);       // duplicate
  EXPECT_THROW(w.add_floats("y", Dtype::F32, {3}, std::vector<float>{1, 2}), Error);       // count
  EXPECT_THROW(w.add_floats("y", Dtype::F32, {-1}, std::vector<float>{}), Error);          // negative dim
  EXPECT_THROW(w.add_floats("y", Dtype::I64, {2}, std::vector<float>{1, 2}), Error);       // not a float dtype
  EXPECT_THROW(w.add_floats("y", Dtype::F8_E4M3, {2}, std::vector<float>{1, 2}), Error);   // not writable
  EXPECT_THROW(w.add_int64s("y", Dtype::F32, {1}, std::vector<int64_t>{1}), Error);        // not an int dtype
  EXPECT_THROW(w.add_int64s("y", Dtype::BOOL, {1}, std::vector<int64_t>{2}), Error);       // range
  EXPECT_THROW(w.add_int64s("y", Dtype::I8, {1}, std::vector<int64_t>{128}), Error);       // range
  EXPECT_THROW(w.add_int64s("y", Dtype::U32, {1}, std::vector<int64_t>{-1}), Error);       // range
  EXPECT_THROW(w.add_floats("__metadata__", Dtype::F32, {1}, std::vector<float>{1}), Error);
  EXPECT_THROW(w.add_floats("", Dtype::F32, {1}, std::vector<float>{1}), Error);
  EXPECT_FALSE(w.has("y"));  // nothing half-added
  EXPECT_EQ(w.data_bytes(), 8u);
}

TEST(AtomicWrite, FailureLeavesOldFileAndNoTemporary) {
  ScratchDir dir("st-atomic");
  const auto p = dir / "out.safetensors";
  SafetensorsWriter w;
  w.add_floats("x", Dtype::F32, {1}, std::vector<float>{1.0f});
  w.write(p);
  const std::string before = testing::read_text(p);
  EXPECT_THROW(write_file_atomically(p,
                                     [](std::ostream& out) {
                                       out << "partial";
                                       throw Error("simulated failure");
                                     }),
               Error);
  EXPECT_EQ(testing::read_text(p), before);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.safetensors"});
  // A missing directory is an error naming it, and creates nothing.
  try {
    w.write(dir / "no" / "such" / "x.safetensors");
    ADD_FAILURE() << "no error for a missing directory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.safetensors"});
  // Overwriting replaces the content.
  SafetensorsWriter w2;
  w2.add_floats("y", Dtype::F16, {1}, std::vector<float>{2.0f});
  w2.write(p);
  EXPECT_TRUE(SafetensorsFile(p).has("y"));
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out.safetensors"});
}

// --- interoperability with an independent implementation (numpy) ------------------------------

constexpr const char* kNumpyScript = R"PY(
import json, struct, sys
import numpy as np

mode, path = sys.argv[1], sys.argv[2]
if mode == "write":
    # Written the way the safetensors Python package lays files out (no padding requirement,
    # keys in arbitrary order); values from a formula the C++ test recomputes.
    x = (np.arange(24, dtype=np.float64) * 0.37 - 4.1).astype(np.float32)
    tensors = {
        "z.f32": x.reshape(4, 6),
        "y.f16": x.astype(np.float16).reshape(2, 12),
        "x.i64": np.arange(-3, 3, dtype=np.int64),
        "w.bool": np.array([True, False, True]),
        "v.f64": x.astype(np.float64)[:5],
    }
    names = {"float32": "F32", "float16": "F16", "int64": "I64", "bool": "BOOL", "float64": "F64"}
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, a in tensors.items():
        b = a.tobytes()
        header[name] = {"dtype": names[str(a.dtype)], "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
else:
    # Read a C++-written file and check it against numpy's own conversions.
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    assert n % 8 == 0, "header not padded to 8 bytes"
    header = json.loads(data[8:8 + n])
    base = 8 + n
    def get(name, dt):
        e = header[name]
        b, end = e["data_offsets"]
        return np.frombuffer(data[base + b:base + end], dtype=dt).reshape(e["shape"])
    src = get("src", np.float32)
    f16 = get("half", np.float16)
    assert header["half"]["dtype"] == "F16"
    # numpy converts float32 -> float16 with round-to-nearest-even.
    assert np.array_equal(src.astype(np.float16).view(np.uint16), f16.view(np.uint16)), "F16 rounding differs"
    bf = get("bf", np.uint16).astype(np.uint32) << 16
    back = bf.view(np.float32)
    err = np.abs(back.astype(np.float64) - src.astype(np.float64))
    assert np.all(err <= np.abs(src.astype(np.float64)) * 2.0**-8 + 1e-45), "BF16 not within half an ulp"
    assert list(get("ids", np.int64)) == [5, -7, 1 << 40], "I64 differs"
    assert header["__metadata__"] == {"format": "pt"}
    print("ok")
)PY";

int run_python(const std::filesystem::path& script, const std::string& args) {
  const std::string cmd = std::string(SPECDEC_PYTHON) + " '" + script.string() + "' " + args;
  return std::system(cmd.c_str());
}

TEST(SafetensorsInterop, ReadsFileWrittenByNumpy) {
  ScratchDir dir("st-py-read");
  const auto script = dir / "st.py";
  testing::write_text(script, kNumpyScript);
  const auto p = dir / "py.safetensors";
  ASSERT_EQ(run_python(script, "write '" + p.string() + "'"), 0);
  const SafetensorsFile f(p);
  const auto z = f.floats("z.f32"), y = f.floats("y.f16"), v = f.floats("v.f64");
  EXPECT_EQ(f.info("z.f32").shape, (std::vector<int64_t>{4, 6}));
  for (int i = 0; i < 24; ++i) {
    const float x = static_cast<float>(i * 0.37 - 4.1);
    EXPECT_EQ(z[static_cast<std::size_t>(i)], x) << "element " << i;
    EXPECT_EQ(y[static_cast<std::size_t>(i)], half_to_float(float_to_half(x))) << "element " << i;
    if (i < 5) {
      EXPECT_EQ(v[static_cast<std::size_t>(i)], x) << "element " << i;
    }
  }
  EXPECT_EQ(f.int64s("x.i64"), (std::vector<int64_t>{-3, -2, -1, 0, 1, 2}));
  EXPECT_EQ(f.int64s("w.bool"), (std::vector<int64_t>{1, 0, 1}));
}

TEST(SafetensorsInterop, NumpyReadsFileWrittenHere) {
  ScratchDir dir("st-py-write");
  const auto script = dir / "st.py";
  testing::write_text(script, kNumpyScript);
  const uint64_t seed = 5;
  std::vector<float> src = random_floats(1000, seed);
  src.push_back(65519.0f);  // rounds down to 65504
  src.push_back(65520.0f);  // rounds to infinity
  src.push_back(std::ldexp(1.0f, -25));
  src.push_back(std::ldexp(3.0f, -25));
  SafetensorsWriter w;
  w.set_metadata("format", "pt");
  w.add_floats("src", Dtype::F32, {static_cast<int64_t>(src.size())}, src);
  w.add_floats("half", Dtype::F16, {static_cast<int64_t>(src.size())}, src);
  w.add_floats("bf", Dtype::BF16, {static_cast<int64_t>(src.size())}, src);
  w.add_int64s("ids", Dtype::I64, {3}, std::vector<int64_t>{5, -7, int64_t{1} << 40});
  const auto p = dir / "cpp.safetensors";
  w.write(p);
  EXPECT_EQ(run_python(script, "check '" + p.string() + "'"), 0) << "seed " << seed;
}

}  // namespace
}  // namespace specdec
