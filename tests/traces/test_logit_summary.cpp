// summarize_logits / fnv1a64_floats: ordering, ties, logsumexp, checksum and bad arguments.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>

#include "reference/core/error.hpp"
#include "traces/logit_summary.hpp"

namespace specdec {
namespace {

// The float whose little-endian bytes are "abcd".
float abcd_float() { return std::bit_cast<float>(uint32_t{0x64636261}); }

TEST(LogitSummary, ChecksumIsFnv1a64OfLittleEndianBytes) {
  // Reference values of FNV-1a 64 over the bytes "" , "abcd" and "abcdabcd".
  EXPECT_EQ(fnv1a64_floats(nullptr, 0), 0xcbf29ce484222325ull);
  const float row[2] = {abcd_float(), abcd_float()};
  EXPECT_EQ(fnv1a64_floats(row, 1), 0xfc179f83ee0724ddull);
  EXPECT_EQ(fnv1a64_floats(row, 2), 0x2bc7b43705aa8655ull);
  // -0.0 and 0.0 compare equal but have different bytes: the checksum must tell them apart.
  const float zero = 0.0f, negzero = -0.0f;
  EXPECT_NE(fnv1a64_floats(&zero, 1), fnv1a64_floats(&negzero, 1));
}

TEST(LogitSummary, TopKDescendingWithTiesByLowerId) {
  const std::vector<float> row = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f, 3.0f, 2.0f};
  const LogitSummary s = summarize_logits(row.data(), 7, 4);
  EXPECT_EQ(s.vocab_size, 7);
  EXPECT_EQ(s.topk_ids, (std::vector<int32_t>{1, 3, 5, 6}));
  EXPECT_EQ(s.topk_values, (std::vector<float>{3.0f, 3.0f, 3.0f, 2.0f}));
  EXPECT_EQ(s.checksum, fnv1a64_floats(row.data(), row.size()));
  double direct = 0.0;
  for (float x : row) direct += std::exp(static_cast<double>(x));
  EXPECT_NEAR(s.logsumexp, std::log(direct), 1e-12);
}

TEST(LogitSummary, KIsClampedToVocabulary) {
  const std::vector<float> row = {0.25f, -1.0f, 4.0f};
  const LogitSummary s = summarize_logits(row.data(), 3, 10);
  EXPECT_EQ(s.topk_ids, (std::vector<int32_t>{2, 0, 1}));
}

TEST(LogitSummary, LogsumexpIsShiftedByTheMaximum) {
  // exp(1000) overflows a double; the max-shifted form gives 1000 + log(2).
  const std::vector<float> row = {1000.0f, 1000.0f, -1000.0f};
  const LogitSummary s = summarize_logits(row.data(), 3, 1);
  EXPECT_NEAR(s.logsumexp, 1000.0 + std::log(2.0), 1e-9);
}

TEST(LogitSummary, NonFiniteRows) {
  const std::vector<float> all_neg_inf(4, -INFINITY);
  const LogitSummary a = summarize_logits(all_neg_inf.data(), 4, 2);
  EXPECT_TRUE(std::isinf(a.logsumexp) && a.logsumexp < 0);
  EXPECT_EQ(a.topk_ids, (std::vector<int32_t>{0, 1}));

  const std::vector<float> with_nan = {NAN, 1.0f, NAN, 2.0f};
  const LogitSummary b = summarize_logits(with_nan.data(), 4, 3);
  EXPECT_TRUE(std::isnan(b.logsumexp));
  EXPECT_EQ(b.topk_ids, (std::vector<int32_t>{3, 1, 0}));  // NaN sorts below every number

  const std::vector<float> with_inf = {1.0f, INFINITY, 2.0f};
  const LogitSummary c = summarize_logits(with_inf.data(), 3, 1);
  EXPECT_TRUE(std::isinf(c.logsumexp) && c.logsumexp > 0);
  EXPECT_EQ(c.topk_ids, (std::vector<int32_t>{1}));
}

TEST(LogitSummary, MatchesBruteForceOnRandomRows) {
  for (uint32_t seed : {1u, 2u, 3u, 4u, 5u}) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> vocab(1, 300);
    std::uniform_int_distribution<int> level(-4, 4);  // few distinct values: many ties
    const int V = vocab(rng);
    std::vector<float> row(static_cast<std::size_t>(V));
    for (float& x : row) x = 0.5f * static_cast<float>(level(rng));
    const int k = std::min(V, 1 + static_cast<int>(rng() % 20));
    const LogitSummary s = summarize_logits(row.data(), V, k);

    std::vector<int32_t> order(static_cast<std::size_t>(V));
    for (int i = 0; i < V; ++i) order[static_cast<std::size_t>(i)] = i;
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return row[a] > row[b]; });
    order.resize(static_cast<std::size_t>(k));
    EXPECT_EQ(s.topk_ids, order) << "seed " << seed << ", V " << V << ", k " << k;
    long double sum = 0;
    for (float x : row) sum += std::exp(static_cast<long double>(x));
    EXPECT_NEAR(s.logsumexp, static_cast<double>(std::log(sum)), 1e-12) << "seed " << seed;
  }
}

TEST(LogitSummary, RejectsBadArguments) {
  const float row[2] = {0.0f, 1.0f};
  EXPECT_THROW(summarize_logits(row, 0, 1), Error);
  EXPECT_THROW(summarize_logits(row, 2, 0), Error);
  try {
    summarize_logits(row, 2, -3);
    FAIL() << "expected an error for k = -3";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("top-k is -3"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace specdec
