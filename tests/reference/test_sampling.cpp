// Sampling parameters, the sampling distribution (temperature, top-k, top-p), inverse-CDF and
// Gumbel-max token selection, and goodness of fit of the sampled frequencies.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reference/core/error.hpp"
#include "reference/sampling/counter_rng.hpp"
#include "reference/sampling/sampler.hpp"
#include "reference/sampling/sampling_params.hpp"

namespace specdec {
namespace {

using Mode = SamplingParams::Mode;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Runs f and checks that it throws specdec::Error whose message contains `needle`.
template <class F>
void expect_error(F&& f, const std::string& needle, const std::string& where) {
  try {
    f();
    ADD_FAILURE() << where << ": expected specdec::Error mentioning '" << needle << "', nothing thrown";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
        << where << ": message '" << e.what() << "' does not mention '" << needle << "'";
  }
}

SamplingParams make(Mode mode, double temperature = 1.0, int top_k = 0, double top_p = 1.0,
                    uint64_t seed = 0) {
  SamplingParams p;
  p.mode = mode;
  p.temperature = temperature;
  p.top_k = top_k;
  p.top_p = top_p;
  p.seed = seed;
  return p;
}

// Indices of the nonzero entries.
std::vector<int> support(const std::vector<double>& p) {
  std::vector<int> out;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] != 0.0) out.push_back(static_cast<int>(i));
  }
  return out;
}

// softmax(logits / T) restricted to `keep` (all tokens if empty), in long double, written
// independently of probabilities().
std::vector<double> softmax_reference(const std::vector<float>& logits, double t, std::vector<int> keep = {}) {
  if (keep.empty()) {
    for (size_t i = 0; i < logits.size(); ++i) keep.push_back(static_cast<int>(i));
  }
  long double mx = -INFINITY;
  for (int i : keep) mx = std::max(mx, static_cast<long double>(logits[static_cast<size_t>(i)]) / t);
  long double z = 0;
  for (int i : keep) z += std::exp(static_cast<long double>(logits[static_cast<size_t>(i)]) / t - mx);
  std::vector<double> p(logits.size(), 0.0);
  for (int i : keep) {
    p[static_cast<size_t>(i)] = static_cast<double>(std::exp(static_cast<long double>(logits[static_cast<size_t>(i)]) / t - mx) / z);
  }
  return p;
}

// ---- SamplingParams ------------------------------------------------------------------------------

TEST(SamplingParams, DefaultsAreValidGreedy) {
  const SamplingParams p;
  EXPECT_EQ(p.mode, Mode::greedy);
  EXPECT_EQ(p.temperature, 1.0);
  EXPECT_EQ(p.top_k, 0);
  EXPECT_EQ(p.top_p, 1.0);
  EXPECT_EQ(p.seed, 0u);
  EXPECT_NO_THROW(p.validate());
}

TEST(SamplingParams, AcceptsBoundaryValues) {
  EXPECT_NO_THROW(make(Mode::greedy, 0.0).validate()) << "greedy ignores temperature";
  EXPECT_NO_THROW(make(Mode::sample, 1e-6, 0, 1.0).validate());
  EXPECT_NO_THROW(make(Mode::coupled, 100.0, 1, 1e-9).validate());
  EXPECT_NO_THROW(make(Mode::sample, 0.7, 1000000, 0.5).validate());
}

TEST(SamplingParams, EveryBadParameterGivesItsError) {
  struct Case {
    const char* name;
    SamplingParams params;
    const char* needle;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const Case cases[] = {
      {"sample T=0", make(Mode::sample, 0.0), "temperature = 0"},
      {"sample T<0", make(Mode::sample, -0.5), "temperature = -0.5"},
      {"coupled T=0", make(Mode::coupled, 0.0), "mode 'coupled'"},
      {"coupled T=NaN", make(Mode::coupled, nan), "temperature"},
      {"sample T=inf", make(Mode::sample, inf), "temperature"},
      {"top_k<0", make(Mode::sample, 1.0, -1), "top_k = -1"},
      {"greedy top_k<0", make(Mode::greedy, 1.0, -3), "top_k"},
      {"top_p=0", make(Mode::sample, 1.0, 0, 0.0), "top_p = 0"},
      {"top_p<0", make(Mode::sample, 1.0, 0, -0.2), "top_p"},
      {"top_p>1", make(Mode::coupled, 1.0, 0, 1.5), "top_p = 1.5"},
      {"top_p=NaN", make(Mode::sample, 1.0, 0, nan), "top_p"},
      {"greedy top_p=2", make(Mode::greedy, 1.0, 0, 2.0), "top_p"},
      {"mode out of range", make(static_cast<Mode>(7)), "mode"},
  };
  const std::vector<float> logits = {0.f, 1.f, 2.f};
  for (const Case& c : cases) {
    expect_error([&] { c.params.validate(); }, c.needle, std::string("validate: ") + c.name);
    // Every entry point validates before use.
    expect_error([&] { probabilities(logits.data(), 3, c.params); }, c.needle, std::string("probabilities: ") + c.name);
    expect_error([&] { sample_token(logits.data(), 3, c.params, 0, 0); }, c.needle, std::string("sample_token: ") + c.name);
  }
}

TEST(SamplingParams, ToStringRoundTripsNumbers) {
  EXPECT_EQ(make(Mode::sample, 0.7, 5, 0.9, 42).to_string(),
            "mode=sample temperature=0.7 top_k=5 top_p=0.9 seed=42");
  EXPECT_EQ(SamplingParams{}.to_string(), "mode=greedy temperature=1 top_k=0 top_p=1 seed=0");
  EXPECT_EQ(make(Mode::coupled, 0.1 + 0.2, 0, 1.0, ~uint64_t{0}).to_string(),
            "mode=coupled temperature=0.30000000000000004 top_k=0 top_p=1 seed=18446744073709551615");
}

TEST(SamplingParams, ModeNames) {
  for (Mode m : {Mode::greedy, Mode::sample, Mode::coupled}) {
    EXPECT_EQ(parse_sampling_mode(to_string(m)), m) << to_string(m);
  }
  EXPECT_EQ(to_string(Mode::coupled), "coupled");
  expect_error([] { parse_sampling_mode("Greedy"); }, "'Greedy' is unknown", "parse 'Greedy'");
  expect_error([] { parse_sampling_mode(""); }, "greedy, sample, coupled", "parse ''");
}

TEST(SamplingParams, JsonRoundTrip) {
  const SamplingParams p = make(Mode::coupled, 0.7, 40, 0.95, ~uint64_t{0});
  const nlohmann::json j = p;
  EXPECT_EQ(j.at("mode"), "coupled");
  EXPECT_EQ(j.at("seed").get<uint64_t>(), ~uint64_t{0});
  EXPECT_EQ(j.get<SamplingParams>(), p);
  EXPECT_EQ(nlohmann::json::parse(j.dump()).get<SamplingParams>(), p) << j.dump();
  // Missing keys take the defaults; C++-built signed integers are accepted for the seed.
  const SamplingParams q = nlohmann::json{{"mode", "sample"}, {"seed", 5}}.get<SamplingParams>();
  EXPECT_EQ(q, make(Mode::sample, 1.0, 0, 1.0, 5));
  EXPECT_EQ(nlohmann::json::object().get<SamplingParams>(), SamplingParams{});
  // Integral JSON numbers are fine for the real-valued fields.
  EXPECT_EQ(nlohmann::json::parse(R"({"mode":"sample","temperature":2,"top_p":1})").get<SamplingParams>(),
            make(Mode::sample, 2.0));
}

TEST(SamplingParams, JsonErrors) {
  struct Case {
    const char* text;
    const char* needle;
  };
  const Case cases[] = {
      {R"([1, 2])", "expected an object"},
      {R"({"mode": "sample", "temprature": 0.7})", "unknown field 'temprature'"},
      {R"({"mode": 1})", "'mode' must be a string"},
      {R"({"mode": "beam"})", "'beam' is unknown"},
      {R"({"temperature": "hot"})", "'temperature' must be a number"},
      {R"({"top_p": null})", "'top_p' must be a number"},
      {R"({"top_k": 1.5})", "'top_k' must be an integer"},
      {R"({"top_k": -1})", "'top_k' must be an integer"},
      {R"({"top_k": 3000000000})", "'top_k' must be an integer"},
      {R"({"seed": -1})", "'seed' must be an integer"},
      {R"({"seed": 1.5})", "'seed' must be an integer"},
      {R"({"seed": "42"})", "'seed' must be an integer"},
      {R"({"mode": "sample", "temperature": 0})", "temperature = 0"},
      {R"({"mode": "sample", "top_p": 2})", "top_p = 2"},
  };
  for (const Case& c : cases) {
    const nlohmann::json j = nlohmann::json::parse(c.text);
    expect_error([&] { (void)j.get<SamplingParams>(); }, c.needle, std::string("JSON ") + c.text);
  }
}

// ---- argmax --------------------------------------------------------------------------------------

TEST(Argmax, PicksLargestWithTiesToLowestIndex) {
  const std::vector<float> a = {1.f, 3.f, 3.f, 2.f};
  EXPECT_EQ(argmax(a.data(), 4), 1);
  const std::vector<float> b = {-5.f, -kInf, -2.f, -2.f, -3.f};
  EXPECT_EQ(argmax(b.data(), 5), 2);
  const std::vector<float> c = {-kInf, 0.f, kInf, kInf};
  EXPECT_EQ(argmax(c.data(), 4), 2);
  const std::vector<float> d = {-kInf, -kInf, -1e30f};
  EXPECT_EQ(argmax(d.data(), 3), 2);
  const float e = 7.f;
  EXPECT_EQ(argmax(&e, 1), 0);
  const std::vector<float> zeros(100, 0.f);
  EXPECT_EQ(argmax(zeros.data(), 100), 0);
}

TEST(Argmax, MatchesLinearScanOnRandomLogits) {
  const uint32_t seed = 3;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> small(-3, 3);  // many ties
  for (int c = 0; c < 200; ++c) {
    std::vector<float> l(1 + rng() % 50);
    for (float& x : l) x = static_cast<float>(small(rng));
    int expected = 0;
    for (size_t i = 0; i < l.size(); ++i) {
      if (l[i] > l[static_cast<size_t>(expected)]) expected = static_cast<int>(i);
    }
    EXPECT_EQ(argmax(l.data(), static_cast<int>(l.size())), expected) << "seed " << seed << " case " << c;
  }
}

TEST(Argmax, Errors) {
  const std::vector<float> nan = {1.f, 2.f, kNaN, 0.f};
  expect_error([&] { argmax(nan.data(), 4); }, "token 2 is NaN", "NaN logit");
  const std::vector<float> masked = {-kInf, -kInf};
  expect_error([&] { argmax(masked.data(), 2); }, "all 2 logits are -inf", "all -inf");
  expect_error([&] { argmax(nan.data(), 0); }, "n = 0", "n = 0");
  expect_error([&] { argmax(nan.data(), -4); }, "n = -4", "n < 0");
  expect_error([&] { argmax(nullptr, 4); }, "null", "null pointer");
}

// ---- probabilities -------------------------------------------------------------------------------

TEST(Probabilities, SumToOneAndMatchSoftmax) {
  const uint32_t seed = 11;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 3.f);
  for (int n : {1, 2, 10, 1000, 32000}) {
    for (double t : {0.3, 0.7, 1.0, 2.5}) {
      std::vector<float> l(static_cast<size_t>(n));
      for (float& x : l) x = normal(rng);
      const std::vector<double> p = probabilities(l.data(), n, make(Mode::sample, t));
      const std::vector<double> ref = softmax_reference(l, t);
      ASSERT_EQ(p.size(), static_cast<size_t>(n));
      double sum = 0;
      for (int i = 0; i < n; ++i) {
        sum += p[static_cast<size_t>(i)];
        ASSERT_NEAR(p[static_cast<size_t>(i)], ref[static_cast<size_t>(i)], 1e-13 + 1e-12 * ref[static_cast<size_t>(i)])
            << "seed " << seed << " n " << n << " T " << t << " token " << i;
      }
      EXPECT_NEAR(sum, 1.0, 1e-12) << "seed " << seed << " n " << n << " T " << t;
      // Coupled mode draws from the same distribution.
      EXPECT_EQ(probabilities(l.data(), n, make(Mode::coupled, t)), p) << "seed " << seed << " n " << n << " T " << t;
    }
  }
}

TEST(Probabilities, TemperatureSharpensAndFlattens) {
  const std::vector<float> l = {0.f, 1.f};
  const double e = std::exp(1.0);
  EXPECT_NEAR(probabilities(l.data(), 2, make(Mode::sample, 1.0))[1], e / (1 + e), 1e-15);
  EXPECT_NEAR(probabilities(l.data(), 2, make(Mode::sample, 0.5))[1], e * e / (1 + e * e), 1e-15);
  EXPECT_NEAR(probabilities(l.data(), 2, make(Mode::sample, 1e6))[1], 0.5, 1e-6);
  EXPECT_EQ(probabilities(l.data(), 2, make(Mode::sample, 1e-3))[0], 0.0) << "exp underflows to an exact 0";
}

TEST(Probabilities, GreedyIsOneHotOfArgmax) {
  const std::vector<float> l = {0.5f, 2.f, -1.f, 2.f, 1.f};
  for (const SamplingParams& p : {make(Mode::greedy), make(Mode::greedy, 0.0, 2, 0.1)}) {
    const std::vector<double> q = probabilities(l.data(), 5, p);
    EXPECT_EQ(q, (std::vector<double>{0, 1, 0, 0, 0})) << p.to_string();
  }
  const std::vector<float> with_inf = {0.f, kInf, 3.f};
  EXPECT_EQ(probabilities(with_inf.data(), 3, make(Mode::greedy)), (std::vector<double>{0, 1, 0}));
}

TEST(Probabilities, TopKKeepsExactlyKWithTiesByLowerIndex) {
  const std::vector<float> l = {1.f, 3.f, 3.f, 2.f, 3.f};
  struct Case {
    int k;
    std::vector<int> kept;
  };
  const Case cases[] = {{1, {1}}, {2, {1, 2}}, {3, {1, 2, 4}}, {4, {1, 2, 3, 4}}, {5, {0, 1, 2, 3, 4}}, {100, {0, 1, 2, 3, 4}}};
  for (const Case& c : cases) {
    const std::vector<double> p = probabilities(l.data(), 5, make(Mode::sample, 1.0, c.k));
    EXPECT_EQ(support(p), c.kept) << "top_k " << c.k;
    const std::vector<double> ref = softmax_reference(l, 1.0, c.kept);
    for (size_t i = 0; i < 5; ++i) EXPECT_NEAR(p[i], ref[i], 1e-15) << "top_k " << c.k << " token " << i;
  }
  // Equal survivors: exactly 1/2 each.
  EXPECT_EQ(probabilities(l.data(), 5, make(Mode::sample, 1.0, 2)), (std::vector<double>{0, 0.5, 0.5, 0, 0}));
}

TEST(Probabilities, TopPKeepsSmallestPrefixWithTiesByLowerIndex) {
  // Four equal logits: each 1/4 exactly, cumulative 1/4, 1/2, 3/4, 1 exactly.
  const std::vector<float> eq = {0.f, 0.f, 0.f, 0.f};
  struct Case {
    double top_p;
    std::vector<int> kept;
  };
  const Case cases[] = {{1e-9, {0}}, {0.25, {0}}, {0.2500001, {0, 1}}, {0.5, {0, 1}},
                        {0.5000001, {0, 1, 2}}, {0.75, {0, 1, 2}}, {0.9, {0, 1, 2, 3}}, {1.0, {0, 1, 2, 3}}};
  for (const Case& c : cases) {
    const std::vector<double> p = probabilities(eq.data(), 4, make(Mode::sample, 1.0, 0, c.top_p));
    EXPECT_EQ(support(p), c.kept) << "top_p " << c.top_p;
    for (int i : c.kept) EXPECT_EQ(p[static_cast<size_t>(i)], 1.0 / static_cast<double>(c.kept.size())) << "top_p " << c.top_p;
  }
  // Tie for the top among distinct values: the lower index wins the single slot.
  const std::vector<float> l = {1.f, 2.f, 2.f, 0.f};
  EXPECT_EQ(probabilities(l.data(), 4, make(Mode::sample, 1.0, 0, 0.01)), (std::vector<double>{0, 1, 0, 0}));
}

// 10 tokens at T = 0.7: probabilities sorted are 0.451 (2), 0.221 (5), 0.108 (0), 0.081 (7), ...
// with cumulative 0.451, 0.672, 0.780, 0.861. top_p = 0.8 keeps {2, 5, 0, 7}. After top_k = 6 the
// mass left is 0.954, the renormalised cumulative is 0.473, 0.704, 0.818, so top_p = 0.8 then
// keeps only {2, 5, 0}: top-p applies to the top-k-restricted distribution.
const std::vector<float> kTen = {1.0f, 0.5f, 2.0f, -1.0f, 0.0f, 1.5f, -0.5f, 0.8f, 0.3f, -2.0f};

TEST(Probabilities, TopPAfterTopKOnTenTokens) {
  const std::vector<double> p = probabilities(kTen.data(), 10, make(Mode::sample, 0.7, 0, 0.8));
  EXPECT_EQ(support(p), (std::vector<int>{0, 2, 5, 7}));
  const std::vector<double> ref = softmax_reference(kTen, 0.7, {0, 2, 5, 7});
  for (size_t i = 0; i < 10; ++i) EXPECT_NEAR(p[i], ref[i], 1e-15) << "token " << i;

  const std::vector<double> q = probabilities(kTen.data(), 10, make(Mode::sample, 0.7, 6, 0.8));
  EXPECT_EQ(support(q), (std::vector<int>{0, 2, 5}));
  const std::vector<double> ref_q = softmax_reference(kTen, 0.7, {0, 2, 5});
  for (size_t i = 0; i < 10; ++i) EXPECT_NEAR(q[i], ref_q[i], 1e-15) << "token " << i;

  const std::vector<double> k6 = probabilities(kTen.data(), 10, make(Mode::sample, 0.7, 6));
  EXPECT_EQ(support(k6), (std::vector<int>{0, 1, 2, 5, 7, 8}));
}

TEST(Probabilities, MaskedTokensAreExactlyZeroAndSumIsOne) {
  const uint32_t seed = 17;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 2.f);
  for (int c = 0; c < 300; ++c) {
    const int n = 1 + static_cast<int>(rng() % 300);
    std::vector<float> l(static_cast<size_t>(n));
    for (float& x : l) x = (rng() % 10 == 0) ? -kInf : std::round(normal(rng) * 4.f) / 4.f;  // ties
    l[rng() % l.size()] = 1.f;  // at least one finite logit
    const int k = static_cast<int>(rng() % 20);
    const double top_p = (rng() % 3 == 0) ? 1.0 : 0.05 + 0.9 * std::uniform_real_distribution<double>(0, 1)(rng);
    const SamplingParams params = make(rng() % 2 ? Mode::sample : Mode::coupled, 0.5 + (rng() % 4) * 0.5, k, top_p);
    const std::string where = "seed " + std::to_string(seed) + " case " + std::to_string(c) + " " + params.to_string();
    const std::vector<double> p = probabilities(l.data(), n, params);
    double sum = 0;
    int kept = 0;
    for (int i = 0; i < n; ++i) {
      sum += p[static_cast<size_t>(i)];
      kept += p[static_cast<size_t>(i)] > 0;
      if (l[static_cast<size_t>(i)] == -kInf) {
        ASSERT_EQ(p[static_cast<size_t>(i)], 0.0) << where << " token " << i;
      }
    }
    EXPECT_NEAR(sum, 1.0, 1e-12) << where;
    EXPECT_GE(kept, 1) << where;
    if (k > 0) {
      EXPECT_LE(kept, k) << where;
    }
    // Survivors are the most likely tokens: every kept logit >= every dropped finite logit, and
    // among equal logits the kept ones have the lower indices.
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) {
        if (p[static_cast<size_t>(i)] > 0 && p[static_cast<size_t>(j)] == 0 && l[static_cast<size_t>(j)] != -kInf) {
          ASSERT_TRUE(l[static_cast<size_t>(i)] > l[static_cast<size_t>(j)] || (l[static_cast<size_t>(i)] == l[static_cast<size_t>(j)] && i < j))
              << where << " kept " << i << " dropped " << j;
        }
      }
    }
    // Pure function: the same call gives bitwise the same result.
    EXPECT_EQ(probabilities(l.data(), n, params), p) << where;
  }
}

TEST(Probabilities, Errors) {
  const std::vector<float> nan = {0.f, kNaN};
  expect_error([&] { probabilities(nan.data(), 2, make(Mode::sample)); }, "token 1 is NaN", "NaN sample");
  expect_error([&] { probabilities(nan.data(), 2, make(Mode::greedy)); }, "token 1 is NaN", "NaN greedy");
  const std::vector<float> pinf = {0.f, kInf};
  expect_error([&] { probabilities(pinf.data(), 2, make(Mode::sample)); }, "token 1 is +inf", "+inf sample");
  expect_error([&] { probabilities(pinf.data(), 2, make(Mode::coupled)); }, "+inf", "+inf coupled");
  const std::vector<float> masked = {-kInf, -kInf, -kInf};
  expect_error([&] { probabilities(masked.data(), 3, make(Mode::sample)); }, "all 3 logits are -inf", "all -inf");
  expect_error([&] { probabilities(masked.data(), 0, make(Mode::sample)); }, "n = 0", "n = 0");
  expect_error([&] { probabilities(nullptr, 3, make(Mode::sample)); }, "null", "null");
  const std::vector<float> big = {1e30f, 0.f};
  expect_error([&] { probabilities(big.data(), 2, make(Mode::sample, 1e-300)); }, "overflow", "T too small");
}

// ---- sample_from ---------------------------------------------------------------------------------

TEST(SampleFrom, InverseCdfInIndexOrder) {
  const std::vector<double> a = {0.0, 0.5, 0.0, 0.5};
  EXPECT_EQ(sample_from(a, 0.0), 1);
  EXPECT_EQ(sample_from(a, 0.25), 1);
  EXPECT_EQ(sample_from(a, 0.5), 3) << "u on a CDF step skips the zero-probability token 2";
  EXPECT_EQ(sample_from(a, std::nextafter(1.0, 0.0)), 3);
  const std::vector<double> b = {0.25, 0.25, 0.5};
  EXPECT_EQ(sample_from(b, 0.1), 0);
  EXPECT_EQ(sample_from(b, 0.25), 1);
  EXPECT_EQ(sample_from(b, 0.49), 1);
  EXPECT_EQ(sample_from(b, 0.5), 2);
  EXPECT_EQ(sample_from(b, 0.999), 2);
  EXPECT_EQ(sample_from({1.0}, 0.7), 0);
}

TEST(SampleFrom, ShortfallGoesToLastNonzeroToken) {
  const std::vector<double> p = {0.3, 0.3, 0.0, 0.0};
  EXPECT_EQ(sample_from(p, 0.9), 1);
  const std::vector<double> q = {0.0, 0.2, 0.0, 0.3, 0.0};
  EXPECT_EQ(sample_from(q, 0.5), 3);
  EXPECT_EQ(sample_from(q, 0.99), 3);
}

TEST(SampleFrom, NeverReturnsAZeroProbabilityToken) {
  const uint32_t seed = 23;
  std::mt19937 rng(seed);
  for (int c = 0; c < 200; ++c) {
    std::vector<double> p(1 + rng() % 40, 0.0);
    for (double& x : p) x = (rng() % 3 == 0) ? std::uniform_real_distribution<double>(0, 1)(rng) : 0.0;
    p[rng() % p.size()] = 0.1;
    double sum = 0;
    for (double x : p) sum += x;
    for (double& x : p) x /= sum;
    for (double u : {0.0, 0.3, 0.5, 0.9999999, std::nextafter(1.0, 0.0)}) {
      const int i = sample_from(p, u);
      ASSERT_TRUE(i >= 0 && i < static_cast<int>(p.size())) << "seed " << seed << " case " << c << " u " << u;
      ASSERT_GT(p[static_cast<size_t>(i)], 0.0) << "seed " << seed << " case " << c << " u " << u;
    }
  }
}

TEST(SampleFrom, Errors) {
  const std::vector<double> p = {0.5, 0.5};
  expect_error([&] { sample_from(p, -0.1); }, "u = -0.1 is outside [0, 1)", "u < 0");
  expect_error([&] { sample_from(p, 1.0); }, "u = 1 is outside", "u = 1");
  expect_error([&] { sample_from(p, std::nan("")); }, "outside [0, 1)", "u NaN");
  expect_error([&] { sample_from({}, 0.5); }, "empty", "empty p");
  expect_error([&] { sample_from({0.5, -0.1, 0.6}, 0.5); }, "token 1 is -0.1", "negative p");
  expect_error([&] { sample_from({0.5, std::nan("")}, 0.1); }, "token 1 is nan", "NaN p");
  expect_error([&] { sample_from({INFINITY, 0.5}, 0.1); }, "token 0 is inf", "inf p");
  expect_error([&] { sample_from({0.0, 0.0}, 0.1); }, "all 2 probabilities are 0", "all zero");
}

// ---- sample_token --------------------------------------------------------------------------------

TEST(SampleToken, GreedyIsArgmaxWhateverTheCounters) {
  const uint32_t seed = 29;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 2.f);
  for (int c = 0; c < 100; ++c) {
    std::vector<float> l(1 + rng() % 100);
    for (float& x : l) x = normal(rng);
    const int n = static_cast<int>(l.size());
    const int expected = argmax(l.data(), n);
    for (uint32_t pos : {0u, 1u, 1000u}) {
      EXPECT_EQ(sample_token(l.data(), n, make(Mode::greedy, 1.0, 0, 1.0, rng()), c % 3, pos), expected)
          << "seed " << seed << " case " << c;
    }
  }
}

TEST(SampleToken, SampleModeUsesItsDocumentedDraw) {
  const uint32_t seed = 31;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 2.f);
  for (int c = 0; c < 200; ++c) {
    std::vector<float> l(2 + rng() % 60);
    for (float& x : l) x = normal(rng);
    const int n = static_cast<int>(l.size());
    const SamplingParams params = make(Mode::sample, 0.6 + (c % 3) * 0.4, c % 4 == 0 ? 5 : 0, c % 5 == 0 ? 0.8 : 1.0, rng());
    const uint32_t sequence = rng() % 8, position = rng();
    const double u = uniform(params.seed, sequence, position, RandomPurpose::sample, 0);
    EXPECT_EQ(sample_token(l.data(), n, params, sequence, position), sample_from(probabilities(l.data(), n, params), u))
        << "seed " << seed << " case " << c << " " << params.to_string();
  }
}

TEST(SampleToken, CoupledIsGumbelMaxOverSurvivors) {
  const uint32_t seed = 37;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, 2.f);
  for (int c = 0; c < 200; ++c) {
    std::vector<float> l(2 + rng() % 60);
    for (float& x : l) x = normal(rng);
    const int n = static_cast<int>(l.size());
    const SamplingParams params = make(Mode::coupled, 0.5 + (c % 4) * 0.5, c % 3 == 0 ? 4 : 0, c % 4 == 1 ? 0.7 : 1.0, rng());
    const uint32_t sequence = rng() % 8, position = rng();
    const std::vector<double> p = probabilities(l.data(), n, params);
    int expected = -1;
    double best = -INFINITY;
    for (int i = 0; i < n; ++i) {
      if (p[static_cast<size_t>(i)] == 0) continue;
      const double s = static_cast<double>(l[static_cast<size_t>(i)]) / params.temperature + gumbel(params.seed, sequence, position, static_cast<uint32_t>(i));
      if (s > best) best = s, expected = i;
    }
    const std::string where = "seed " + std::to_string(seed) + " case " + std::to_string(c) + " " + params.to_string();
    const int got = sample_token(l.data(), n, params, sequence, position);
    EXPECT_EQ(got, expected) << where;
    EXPECT_GT(p[static_cast<size_t>(got)], 0.0) << where;
    // A deterministic function of (logits, params, sequence, position).
    EXPECT_EQ(sample_token(l.data(), n, params, sequence, position), got) << where;
  }
}

TEST(SampleToken, CoupledVariesWithPositionSequenceAndSeed) {
  const std::vector<float> l(8, 0.f);  // uniform: the choice is pure noise
  const auto pick = [&](uint64_t s, uint32_t seq, uint32_t pos) {
    return sample_token(l.data(), 8, make(Mode::coupled, 1.0, 0, 1.0, s), seq, pos);
  };
  int diff_pos = 0, diff_seq = 0, diff_seed = 0;
  for (uint32_t pos = 0; pos < 200; ++pos) {
    diff_pos += pick(1, 0, pos) != pick(1, 0, pos + 1);
    diff_seq += pick(1, 0, pos) != pick(1, 1, pos);
    diff_seed += pick(1, 0, pos) != pick(2, 0, pos);
  }
  // Independent uniform choices over 8 tokens differ with probability 7/8: about 175 of 200.
  EXPECT_GT(diff_pos, 140);
  EXPECT_GT(diff_seq, 140);
  EXPECT_GT(diff_seed, 140);
}

TEST(SampleToken, ErrorsPropagate) {
  const std::vector<float> nan = {0.f, kNaN, 1.f};
  for (Mode m : {Mode::greedy, Mode::sample, Mode::coupled}) {
    expect_error([&] { sample_token(nan.data(), 3, make(m), 0, 0); }, "token 1 is NaN", "NaN " + to_string(m));
    expect_error([&] { sample_token(nullptr, 3, make(m), 0, 0); }, "null", "null " + to_string(m));
    expect_error([&] { sample_token(nan.data(), 0, make(m), 0, 0); }, "n = 0", "n = 0 " + to_string(m));
  }
  const std::vector<float> pinf = {0.f, kInf};
  expect_error([&] { sample_token(pinf.data(), 2, make(Mode::coupled), 0, 0); }, "+inf", "+inf coupled");
}

// ---- goodness of fit -----------------------------------------------------------------------------

// Pearson chi-square of counts against probabilities over the tokens with p > 0; tokens with p = 0
// must never be drawn.
double chi_square(const std::vector<int>& counts, const std::vector<double>& p, int draws, int* zero_hits) {
  double chi2 = 0;
  *zero_hits = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] == 0) {
      *zero_hits += counts[i];
      continue;
    }
    const double e = p[i] * draws;
    chi2 += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi2;
}

std::vector<int> frequencies(const std::vector<float>& l, const SamplingParams& params, uint32_t sequence, int draws) {
  std::vector<int> counts(l.size(), 0);
  for (int i = 0; i < draws; ++i) {
    ++counts[static_cast<size_t>(sample_token(l.data(), static_cast<int>(l.size()), params, sequence, static_cast<uint32_t>(i)))];
  }
  return counts;
}

// Chi-square critical values at significance 1e-4: df 9 -> 33.72, df 3 -> 21.11, df 2 -> 18.42.
constexpr int kDraws = 200000;

TEST(GoodnessOfFit, TemperatureSamplingMatchesSoftmax) {
  const SamplingParams params = make(Mode::sample, 0.7, 0, 1.0, 4242);
  const std::vector<int> counts = frequencies(kTen, params, 0, kDraws);
  int zero_hits = 0;
  const double chi2 = chi_square(counts, softmax_reference(kTen, 0.7), kDraws, &zero_hits);
  EXPECT_LT(chi2, 33.72) << "seed 4242, T 0.7, N " << kDraws << ", df 9, alpha 1e-4";
  // Power: the same counts are far from the T = 1 distribution, so the test can fail.
  const double chi2_wrong = chi_square(counts, softmax_reference(kTen, 1.0), kDraws, &zero_hits);
  EXPECT_GT(chi2_wrong, 1000.0) << "seed 4242: chi-square cannot tell T = 0.7 from T = 1";
}

TEST(GoodnessOfFit, CoupledGumbelMaxMatchesSoftmax) {
  const SamplingParams params = make(Mode::coupled, 0.7, 0, 1.0, 777);
  const std::vector<int> counts = frequencies(kTen, params, 1, kDraws);
  int zero_hits = 0;
  const double chi2 = chi_square(counts, softmax_reference(kTen, 0.7), kDraws, &zero_hits);
  EXPECT_LT(chi2, 33.72) << "seed 777, T 0.7, N " << kDraws << ", df 9, alpha 1e-4";
  const double chi2_wrong = chi_square(counts, softmax_reference(kTen, 1.0), kDraws, &zero_hits);
  EXPECT_GT(chi2_wrong, 1000.0) << "seed 777: chi-square cannot tell T = 0.7 from T = 1";
}

TEST(GoodnessOfFit, TopPSamplingMatchesRenormalisedSoftmax) {
  const SamplingParams params = make(Mode::sample, 0.7, 0, 0.8, 99);  // keeps {0, 2, 5, 7}
  const std::vector<int> counts = frequencies(kTen, params, 2, kDraws);
  int zero_hits = 0;
  const double chi2 = chi_square(counts, softmax_reference(kTen, 0.7, {0, 2, 5, 7}), kDraws, &zero_hits);
  EXPECT_EQ(zero_hits, 0) << "seed 99: masked tokens were drawn";
  EXPECT_LT(chi2, 21.11) << "seed 99, T 0.7, top_p 0.8, N " << kDraws << ", df 3, alpha 1e-4";
}

TEST(GoodnessOfFit, CoupledTopKTopPMatchesRenormalisedSoftmax) {
  const SamplingParams params = make(Mode::coupled, 0.7, 6, 0.8, 1001);  // keeps {0, 2, 5}
  const std::vector<int> counts = frequencies(kTen, params, 3, kDraws);
  int zero_hits = 0;
  const double chi2 = chi_square(counts, softmax_reference(kTen, 0.7, {0, 2, 5}), kDraws, &zero_hits);
  EXPECT_EQ(zero_hits, 0) << "seed 1001: masked tokens were drawn";
  EXPECT_LT(chi2, 18.42) << "seed 1001, T 0.7, top_k 6, top_p 0.8, N " << kDraws << ", df 2, alpha 1e-4";
}

}  // namespace
}  // namespace specdec
