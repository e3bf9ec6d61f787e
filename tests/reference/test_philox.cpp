// Philox4x32-10 and the keyed random stream: known answers, an independent implementation,
// the documented bit recipe, and statistical quality of uniform() / gumbel().
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "reference/sampling/counter_rng.hpp"
#include "reference/sampling/philox.hpp"

namespace specdec {
namespace {

namespace fs = std::filesystem;

using Words4 = std::array<uint32_t, 4>;
using Words2 = std::array<uint32_t, 2>;

// Fresh scratch directory, removed when the test ends.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = fs::temp_directory_path() / ("specdec-philox-" + std::to_string(rd()) + std::to_string(rd()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// ---- known answers -------------------------------------------------------------------------------

// Random123 kat_vectors, philox4x32 with 10 rounds.
TEST(Philox, KnownAnswerVectors) {
  struct Kat {
    Words4 ctr;
    Words2 key;
    Words4 expected;
  };
  const Kat kats[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (size_t k = 0; k < std::size(kats); ++k) {
    const Words4 got = philox4x32_10(kats[k].ctr, kats[k].key);
    for (int w = 0; w < 4; ++w) {
      EXPECT_EQ(got[w], kats[k].expected[w]) << "KAT " << k << " word " << w;
    }
  }
}

// ---- independent implementation in Python (numpy uint64 arithmetic) ------------------------------

// Reads "c0 c1 c2 c3 k0 k1" lines and "seed seq pos purpose index" lines, writes the Philox words
// and the stream values (bits, uniform, uniform_open as float.hex, gumbel as float.hex).
constexpr const char* kPythonPhilox = R"PY(
import math, sys
import numpy as np
M0, M1, W0, W1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57), np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
MASK, S32 = np.uint64(0xFFFFFFFF), np.uint64(32)

def philox(c, k):
    # c: (4, N) uint64 holding 32-bit words; k: (2, N)
    c = [x.copy() for x in c]; k = [x.copy() for x in k]
    for r in range(10):
        if r > 0:
            k = [(k[0] + W0) & MASK, (k[1] + W1) & MASK]
        p0 = M0 * c[0]
        p1 = M1 * c[2]
        c = [(p1 >> S32) ^ c[1] ^ k[0], p1 & MASK, (p0 >> S32) ^ c[3] ^ k[1], p0 & MASK]
    return c

inp, out = sys.argv[1], sys.argv[2]
raw = [l.split() for l in open(inp)]
blocks = np.array([[int(v) for v in l[1:]] for l in raw if l[0] == 'B'], dtype=np.uint64).reshape(-1, 6)
streams = [[int(v) for v in l[1:]] for l in raw if l[0] == 'S']
with open(out, 'w') as f:
    w = philox([blocks[:, i] for i in range(4)], [blocks[:, 4], blocks[:, 5]])
    for n in range(blocks.shape[0]):
        f.write('B %d %d %d %d\n' % tuple(int(w[i][n]) for i in range(4)))
    s = np.array(streams, dtype=np.uint64).reshape(-1, 5)
    seed = s[:, 0]
    w = philox([s[:, 1], s[:, 2], s[:, 3], s[:, 4]], [seed & MASK, seed >> S32])
    for n in range(s.shape[0]):
        b = (int(w[0][n]) << 21) | (int(w[1][n]) >> 11)
        u = b * 2.0 ** -53
        uo = (b | 1) * 2.0 ** -53
        g = -math.log(-math.log(uo))
        f.write('S %d %s %s %s\n' % (b, u.hex(), uo.hex(), g.hex()))
)PY";

TEST(Philox, MatchesIndependentPythonImplementation) {
  TempDir dir;
  const fs::path script = dir.path() / "philox.py";
  const fs::path in = dir.path() / "in.txt";
  const fs::path out = dir.path() / "out.txt";
  std::ofstream(script) << kPythonPhilox;

  const uint64_t seed = 20240601;
  std::mt19937_64 rng(seed);
  const auto word = [&rng] { return static_cast<uint32_t>(rng()); };
  std::vector<std::array<uint32_t, 6>> blocks;
  for (int i = 0; i < 1000; ++i) blocks.push_back({word(), word(), word(), word(), word(), word()});
  // Extremes: carries in the key schedule and in the products.
  blocks.push_back({0xffffffff, 0, 0xffffffff, 0, 0xffffffff, 0xffffffff});
  blocks.push_back({1, 2, 3, 4, 0x61c88647, 0x44987a7b});
  struct Stream {
    uint64_t seed;
    uint32_t sequence, position, purpose, index;
  };
  std::vector<Stream> streams;
  for (int i = 0; i < 1000; ++i) {
    streams.push_back({rng(), word() % 64, word(), 1 + word() % 6, word() % 200000});
  }
  streams.push_back({0, 0, 0, 1, 0});
  streams.push_back({~uint64_t{0}, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff});
  {
    std::ofstream f(in);
    for (const auto& b : blocks) f << "B " << b[0] << ' ' << b[1] << ' ' << b[2] << ' ' << b[3] << ' ' << b[4] << ' ' << b[5] << '\n';
    for (const auto& s : streams) f << "S " << s.seed << ' ' << s.sequence << ' ' << s.position << ' ' << s.purpose << ' ' << s.index << '\n';
  }
  const std::string cmd = std::string(SPECDEC_PYTHON) + " '" + script.string() + "' '" + in.string() +
                          "' '" + out.string() + "'";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "failed to run: " << cmd;

  std::ifstream f(out);
  ASSERT_TRUE(f) << "python wrote no output: " << out;
  std::string tag;
  for (size_t i = 0; i < blocks.size(); ++i) {
    std::array<uint32_t, 4> expected{};
    ASSERT_TRUE(f >> tag >> expected[0] >> expected[1] >> expected[2] >> expected[3]) << "block " << i;
    const auto& b = blocks[i];
    const Words4 got = philox4x32_10({b[0], b[1], b[2], b[3]}, {b[4], b[5]});
    EXPECT_EQ(got, expected) << "seed " << seed << " block case " << i;
  }
  for (size_t i = 0; i < streams.size(); ++i) {
    uint64_t bits = 0;
    std::string u_hex, uo_hex, g_hex;
    ASSERT_TRUE(f >> tag >> bits >> u_hex >> uo_hex >> g_hex) << "stream " << i;
    const Stream& s = streams[i];
    const auto purpose = static_cast<RandomPurpose>(s.purpose);
    const std::string where = "seed " + std::to_string(seed) + " stream case " + std::to_string(i);
    EXPECT_EQ(random_bits53(s.seed, s.sequence, s.position, purpose, s.index), bits) << where;
    // The uniforms are exact in double: bitwise equality.
    EXPECT_EQ(uniform(s.seed, s.sequence, s.position, purpose, s.index), std::strtod(u_hex.c_str(), nullptr)) << where;
    EXPECT_EQ(uniform_open(s.seed, s.sequence, s.position, purpose, s.index), std::strtod(uo_hex.c_str(), nullptr)) << where;
    // Gumbel goes through log: allow a few ulp in case the two runtimes' log differ.
    if (purpose == RandomPurpose::gumbel) {
      const double expected = std::strtod(g_hex.c_str(), nullptr);
      EXPECT_NEAR(gumbel(s.seed, s.sequence, s.position, s.index), expected, 4e-16 * std::max(1.0, std::abs(expected))) << where;
    }
  }
}

// ---- the documented recipe -----------------------------------------------------------------------

TEST(CounterRng, BitRecipeAsDocumented) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200; ++i) {
    const uint64_t seed = rng();
    const auto sequence = static_cast<uint32_t>(rng());
    const auto position = static_cast<uint32_t>(rng());
    const auto purpose = static_cast<RandomPurpose>(1 + rng() % 6);
    const auto index = static_cast<uint32_t>(rng());
    const Words2 key = philox_key(seed);
    EXPECT_EQ(key[0], static_cast<uint32_t>(seed)) << "seed 7 case " << i;
    EXPECT_EQ(key[1], static_cast<uint32_t>(seed >> 32)) << "seed 7 case " << i;
    const Words4 ctr = philox_counter(sequence, position, purpose, index);
    EXPECT_EQ(ctr, (Words4{sequence, position, static_cast<uint32_t>(purpose), index})) << "seed 7 case " << i;
    const Words4 w = philox4x32_10(ctr, key);
    const uint64_t b = (static_cast<uint64_t>(w[0]) << 21) | (w[1] >> 11);
    EXPECT_EQ(random_bits53(seed, sequence, position, purpose, index), b) << "seed 7 case " << i;
    EXPECT_EQ(uniform(seed, sequence, position, purpose, index), std::ldexp(static_cast<double>(b), -53));
    EXPECT_EQ(uniform_open(seed, sequence, position, purpose, index), std::ldexp(static_cast<double>(b | 1), -53));
  }
}

// Pinned values: changing the stream silently would break every recorded trace.
TEST(CounterRng, GoldenValues) {
  EXPECT_EQ(random_bits53(0, 0, 0, RandomPurpose::sample, 0), 0x1088a2bc3e11adULL);
  EXPECT_EQ(random_bits53(42, 0, 7, RandomPurpose::sample, 0), 0x82b67b0d434c4ULL);
  EXPECT_EQ(random_bits53(0x0123456789abcdefULL, 3, 1000, RandomPurpose::gumbel, 50256), 0x125a01fd4b1b02ULL);
  EXPECT_EQ(uniform(42, 0, 7, RandomPurpose::sample, 0), std::strtod("0x1.056cf61a86988p-2", nullptr));
  EXPECT_EQ(uniform_open(42, 0, 7, RandomPurpose::sample, 0), std::strtod("0x1.056cf61a8698ap-2", nullptr));
  EXPECT_NEAR(gumbel(0x0123456789abcdefULL, 3, 1000, 50256), 0.5869518632061661, 1e-15);
}

TEST(CounterRng, ExtremeBitsMapInsideTheIntervals) {
  // uniform_open forces the lowest bit, so the extreme bit patterns stay inside (0, 1).
  EXPECT_EQ(std::ldexp(static_cast<double>(uint64_t{0} | 1), -53), 0x1p-53);
  const uint64_t all = (uint64_t{1} << 53) - 1;
  EXPECT_LT(std::ldexp(static_cast<double>(all), -53), 1.0);
  EXPECT_LT(std::ldexp(static_cast<double>(all | 1), -53), 1.0);
  EXPECT_TRUE(std::isfinite(-std::log(-std::log(0x1p-53))));
  EXPECT_TRUE(std::isfinite(-std::log(-std::log(1.0 - 0x1p-53))));
  for (uint32_t pos = 0; pos < 100000; ++pos) {
    const double u = uniform(5, 0, pos, RandomPurpose::accept, 0);
    const double uo = uniform_open(5, 0, pos, RandomPurpose::accept, 0);
    ASSERT_TRUE(u >= 0.0 && u < 1.0) << "seed 5 position " << pos << " u " << u;
    ASSERT_TRUE(uo > 0.0 && uo < 1.0) << "seed 5 position " << pos << " u_open " << uo;
    ASSERT_LE(std::abs(uo - u), 0x1p-53) << "seed 5 position " << pos;
    ASSERT_TRUE(std::isfinite(gumbel(5, 0, pos, 17))) << "seed 5 position " << pos;
  }
}

// ---- determinism and independence ----------------------------------------------------------------

TEST(CounterRng, DeterministicAndObjectMatchesFreeFunctions) {
  const CounterRng rng(99);
  EXPECT_EQ(rng.seed(), 99u);
  for (uint32_t pos = 0; pos < 1000; ++pos) {
    const double u = uniform(99, 2, pos, RandomPurpose::residual, 3);
    EXPECT_EQ(uniform(99, 2, pos, RandomPurpose::residual, 3), u) << "seed 99 position " << pos;
    EXPECT_EQ(rng.uniform(2, pos, RandomPurpose::residual, 3), u) << "seed 99 position " << pos;
    EXPECT_EQ(rng.uniform_open(2, pos, RandomPurpose::residual, 3),
              uniform_open(99, 2, pos, RandomPurpose::residual, 3)) << "seed 99 position " << pos;
    EXPECT_EQ(rng.gumbel(2, pos, 11), gumbel(99, 2, pos, 11)) << "seed 99 position " << pos;
    EXPECT_EQ(rng.uniform(2, pos, RandomPurpose::sample), uniform(99, 2, pos, RandomPurpose::sample, 0));
  }
}

TEST(CounterRng, DrawRecordsItsCounters) {
  const RandomDraw d = draw_uniform(0xabcdef0123ULL, 4, 77, RandomPurpose::accept, 2);
  EXPECT_EQ(d.seed, 0xabcdef0123ULL);
  EXPECT_EQ(d.sequence, 4u);
  EXPECT_EQ(d.position, 77u);
  EXPECT_EQ(d.purpose, 2u);
  EXPECT_EQ(d.index, 2u);
  EXPECT_EQ(d.value, uniform(0xabcdef0123ULL, 4, 77, RandomPurpose::accept, 2));
  // The record alone reproduces the value.
  EXPECT_EQ(uniform(d.seed, d.sequence, d.position, static_cast<RandomPurpose>(d.purpose), d.index), d.value);
  const RandomDraw o = draw_uniform_open(1, 0, 3, RandomPurpose::gumbel, 9);
  EXPECT_EQ(o.value, uniform_open(1, 0, 3, RandomPurpose::gumbel, 9));
  EXPECT_EQ(o.purpose, 4u);
  EXPECT_EQ(CounterRng(0xabcdef0123ULL).draw(4, 77, RandomPurpose::accept, 2), d);
}

TEST(CounterRng, PurposeNames) {
  EXPECT_EQ(to_string(RandomPurpose::sample), "sample");
  EXPECT_EQ(to_string(RandomPurpose::accept), "accept");
  EXPECT_EQ(to_string(RandomPurpose::residual), "residual");
  EXPECT_EQ(to_string(RandomPurpose::gumbel), "gumbel");
  EXPECT_EQ(to_string(RandomPurpose::tree), "tree");
  EXPECT_EQ(to_string(RandomPurpose::draft), "draft");
  EXPECT_EQ(to_string(RandomPurpose::arrival), "arrival");
  EXPECT_EQ(to_string(static_cast<RandomPurpose>(12)), "purpose12");
}

// Sample Pearson correlation of two equally long series.
double correlation(const std::vector<double>& a, const std::vector<double>& b) {
  const double n = static_cast<double>(a.size());
  double ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) ma += a[i], mb += b[i];
  ma /= n, mb /= n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return sab / std::sqrt(saa * sbb);
}

// Changing any one counter field (or either seed word) gives a different, uncorrelated stream.
// Under independence the correlation of N = 100000 pairs has s.d. 1/sqrt(N) = 0.0032; the bound
// 0.02 is above 6 s.d.
TEST(CounterRng, DistinctCountersAreIndependent) {
  const uint64_t seed = 1234;
  const int n = 100000;
  struct Variant {
    const char* name;
    uint64_t seed;
    uint32_t sequence;
    int position_shift;
    RandomPurpose purpose;
    uint32_t index;
  };
  const Variant base{"base", seed, 0, 0, RandomPurpose::sample, 0};
  const Variant variants[] = {
      {"purpose accept", seed, 0, 0, RandomPurpose::accept, 0},
      {"purpose gumbel", seed, 0, 0, RandomPurpose::gumbel, 0},
      {"purpose draft", seed, 0, 0, RandomPurpose::draft, 0},
      {"sequence 1", seed, 1, 0, RandomPurpose::sample, 0},
      {"index 1", seed, 0, 0, RandomPurpose::sample, 1},
      {"next position", seed, 0, 1, RandomPurpose::sample, 0},
      {"seed + 1", seed + 1, 0, 0, RandomPurpose::sample, 0},
      {"seed high word", seed | (uint64_t{1} << 32), 0, 0, RandomPurpose::sample, 0},
  };
  const auto series = [n](const Variant& v) {
    std::vector<double> out(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      out[static_cast<size_t>(i)] = uniform(v.seed, v.sequence, static_cast<uint32_t>(i + v.position_shift), v.purpose, v.index);
    }
    return out;
  };
  const std::vector<double> a = series(base);
  for (const Variant& v : variants) {
    const std::vector<double> b = series(v);
    int equal = 0;
    for (int i = 0; i < n; ++i) equal += a[static_cast<size_t>(i)] == b[static_cast<size_t>(i)];
    EXPECT_EQ(equal, 0) << "seed " << seed << " variant " << v.name;
    const double r = correlation(a, b);
    EXPECT_LT(std::abs(r), 0.02) << "seed " << seed << " variant " << v.name << " correlation " << r;
  }
}

// ---- distribution --------------------------------------------------------------------------------

// 1e6 draws over consecutive positions. Mean: s.d. sqrt(1/12/N) = 2.9e-4, bound 1.8e-3 (> 6 s.d.).
// Variance: s.d. sqrt((1/80 - 1/144)/N) = 7.5e-5, bound 4.5e-4 (6 s.d.).
// Chi-square over 100 equal bins, 99 degrees of freedom: critical value 160.06 at significance 1e-4.
TEST(CounterRng, UniformMomentsAndChiSquare) {
  const uint64_t seed = 31337;
  const int n = 1000000;
  const int bins = 100;
  std::vector<int> counts(bins, 0);
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    const double u = uniform(seed, 0, static_cast<uint32_t>(i), RandomPurpose::sample, 0);
    sum += u;
    sum_sq += u * u;
    ++counts[static_cast<size_t>(u * bins)];
  }
  const double mean = sum / n;
  const double var = sum_sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.5, 1.8e-3) << "seed " << seed;
  EXPECT_NEAR(var, 1.0 / 12.0, 4.5e-4) << "seed " << seed;
  const double expected = static_cast<double>(n) / bins;
  double chi2 = 0;
  for (int c : counts) chi2 += (c - expected) * (c - expected) / expected;
  EXPECT_LT(chi2, 160.06) << "seed " << seed << ": chi-square over 100 bins (df 99, alpha 1e-4)";
}

// The same chi-square along the index axis (Gumbel noise walks token ids at a fixed position).
TEST(CounterRng, UniformChiSquareAlongIndex) {
  const uint64_t seed = 8;
  const int n = 500000;
  const int bins = 100;
  std::vector<int> counts(bins, 0);
  for (int i = 0; i < n; ++i) {
    ++counts[static_cast<size_t>(uniform_open(seed, 3, 12, RandomPurpose::gumbel, static_cast<uint32_t>(i)) * bins)];
  }
  const double expected = static_cast<double>(n) / bins;
  double chi2 = 0;
  for (int c : counts) chi2 += (c - expected) * (c - expected) / expected;
  EXPECT_LT(chi2, 160.06) << "seed " << seed << ": chi-square over 100 bins (df 99, alpha 1e-4)";
}

// Standard Gumbel: mean = Euler-Mascheroni 0.5772, variance pi^2/6 = 1.645. With N = 2e5 the mean
// has s.d. sqrt(1.645/N) = 2.9e-3 (bound 0.018 ~ 6 s.d.); the variance has s.d.
// sqrt((mu4 - sigma^4)/N) with kurtosis 5.4: sqrt(4.4 * 1.645^2 / N) = 7.7e-3 (bound 0.05).
TEST(CounterRng, GumbelMoments) {
  const uint64_t seed = 2718;
  const int n = 200000;
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < n; ++i) {
    const double g = gumbel(seed, 0, static_cast<uint32_t>(i), 5);
    sum += g;
    sum_sq += g * g;
  }
  const double mean = sum / n;
  const double var = sum_sq / n - mean * mean;
  EXPECT_NEAR(mean, 0.5772156649, 0.018) << "seed " << seed;
  EXPECT_NEAR(var, std::numbers::pi * std::numbers::pi / 6.0, 0.05) << "seed " << seed;
}

}  // namespace
}  // namespace specdec
