// The queueing model of a serving replica (simulator/queueing.hpp): Erlang B and C against closed
// forms, published tables and an independent log-space sum; the Allen–Cunneen wait; the wait's
// percentiles; large server counts; bad inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "simulator/queueing.hpp"
#include "test_util.hpp"

namespace specdec::sim {
namespace {

using test::error_of;

// Erlang C from its factorial form, summed in log space (long double): an implementation
// independent of the recursion under test, valid where the terms do not underflow.
double erlang_c_by_sum(int c, double a) {
  long double log_max = -1e300L;
  std::vector<long double> log_terms;
  for (int k = 0; k < c; ++k) log_terms.push_back(k * std::log((long double)a) - std::lgamma((long double)k + 1));
  const long double log_last = c * std::log((long double)a) - std::lgamma((long double)c + 1) + std::log((long double)c / (c - a));
  for (const long double t : log_terms) log_max = std::max(log_max, t);
  log_max = std::max(log_max, log_last);
  long double sum = 0;
  for (const long double t : log_terms) sum += std::exp(t - log_max);
  const long double last = std::exp(log_last - log_max);
  return double(last / (sum + last));
}

TEST(Queueing, ErlangCMatchesTheClosedFormsOfOneAndTwoServers) {
  for (const double a : {0.0, 0.1, 0.5, 0.9, 0.999}) {
    EXPECT_NEAR(erlang_c(1, a), a, 1e-15) << "M/M/1: P(wait) = rho, a = " << a;
    const double rho = a;
    const QueueEstimate q = estimate_queue(a, 1.0, 1.0, 1, 1.0);  // S = 1 s, μ = 1
    if (a > 0) {
      EXPECT_NEAR(q.mean_wait_s, rho / (1 - rho), 1e-12 * (1 + rho / (1 - rho))) << "M/M/1: W_q = rho / (mu - lambda), a = " << a;
    }
  }
  for (const double a : {0.2, 1.0, 1.6, 1.99}) {
    const double rho = a / 2;
    EXPECT_NEAR(erlang_c(2, a), 2 * rho * rho / (1 + rho), 1e-15) << "M/M/2: P(wait) = 2 rho^2 / (1 + rho), a = " << a;
    const QueueEstimate q = estimate_queue(a / 3.0, 1.0, 3.0, 2, 1.0);  // λ = a/3, S = 3 s: μ = 1/3
    EXPECT_NEAR(q.mean_wait_s, rho * rho / ((1 / 3.0) * (1 - rho * rho)), 1e-11 * q.mean_wait_s)
        << "M/M/2: W_q = rho^2 / (mu (1 - rho^2)), a = " << a;
  }
  EXPECT_EQ(erlang_c(4, 0.0), 0.0) << "no load, no wait";
  EXPECT_EQ(erlang_c(4, 4.0), 1.0) << "at the servers' capacity every arrival waits";
  EXPECT_EQ(erlang_c(4, 9.0), 1.0) << "beyond it too";
}

TEST(Queueing, ErlangBAndCMatchPublishedTables) {
  // Erlang B tables: the load N servers carry at a grade of service of 1% or 2% blocking.
  struct Row {
    int servers;
    double erlangs, blocking;
  };
  for (const Row r : {Row{10, 4.461, 0.01}, Row{10, 5.084, 0.02}, Row{20, 12.031, 0.01}, Row{100, 84.064, 0.01}})
    EXPECT_NEAR(erlang_b(r.servers, r.erlangs), r.blocking, 5e-5 * r.blocking / 0.01)
        << "Erlang B table: " << r.servers << " servers, " << r.erlangs << " Erlangs";
  // The call-centre example of Erlang C tutorials: 360 calls per half hour of 4 minutes each on 55
  // agents (48 Erlangs). Its values in exact rational arithmetic over the factorial form:
  // P(wait) 0.23870093637800920, mean wait 8.184 s, 84.59% answered within 15 s.
  const double per_s = 360 / 1800.0, service = 240;
  const QueueEstimate q = estimate_queue(per_s, 1.0, service, 55, 1.0);
  EXPECT_NEAR(q.offered_erlangs, 48, 1e-12);
  EXPECT_NEAR(q.p_wait, 0.23870093637800920, 1e-14) << "55 agents, 48 Erlangs";
  EXPECT_NEAR(q.mean_wait_s, 8.184032104388887, 1e-11) << "55 agents, 48 Erlangs: mean wait C·S/(c − a)";
  EXPECT_NEAR(wait_at_percentile_s(q, 84.58830921705803), 15.0, 1e-9) << "55 agents, 48 Erlangs: 84.59% wait at most 15 s";
  EXPECT_NEAR(erlang_c(10, 8), 0.40918015079644354, 1e-14) << "10 servers, 8 Erlangs";
}

TEST(Queueing, AllenCunneenWithExponentialServiceIsMmcAndScalesWithTheVariance) {
  for (const int c : {1, 3, 16, 128}) {
    const double service = 5.0, a = 0.8 * c;
    const QueueEstimate mmc = estimate_queue(a / service, 1.0, service, c, 1.0);
    EXPECT_NEAR(mmc.mean_wait_s, erlang_c(c, a) * service / (c - a), 1e-12 * mmc.mean_wait_s) << "C_s^2 = 1 is M/M/" << c;
    EXPECT_NEAR(mmc.utilization, 0.8, 1e-15) << c;
    const QueueEstimate fixed = estimate_queue(a / service, 1.0, service, c, 0.0);
    EXPECT_DOUBLE_EQ(fixed.mean_wait_s, mmc.mean_wait_s / 2) << "C_s^2 = 0: (1 + 0)/2 of M/M/" << c;
    EXPECT_DOUBLE_EQ(fixed.p_wait, mmc.p_wait) << "P(wait) is Erlang C whatever the variance, c = " << c;
    const QueueEstimate heavy = estimate_queue(a / service, 1.0, service, c, 3.0);
    EXPECT_DOUBLE_EQ(heavy.mean_wait_s, mmc.mean_wait_s * 2) << "C_s^2 = 3: (1 + 3)/2 of M/M/" << c;
  }
}

// G/G/c: the Allen–Cunneen wait scales with (C_a² + C_s²) / 2, P(wait) stays Erlang C; a random
// split of a stream over n replicas gives each C² = 1 + (C_a² − 1) / n.
TEST(Queueing, BurstyArrivalsScaleTheWaitAndSplittingSmoothsThem) {
  const int c = 16;
  const double service = 4.0, a = 12.0;
  const QueueEstimate poisson = estimate_queue(a / service, 1.0, service, c, 0.0);
  const QueueEstimate bursty = estimate_queue(a / service, 4.0, service, c, 0.0);
  EXPECT_DOUBLE_EQ(bursty.p_wait, poisson.p_wait);
  EXPECT_DOUBLE_EQ(bursty.mean_wait_s, poisson.mean_wait_s * 4) << "(4 + 0) / 2 against (1 + 0) / 2";
  EXPECT_NEAR(wait_at_percentile_s(bursty, 99), 4 * wait_at_percentile_s(poisson, 99), 1e-12) << "the tail's scale too";
  const QueueEstimate deterministic = estimate_queue(a / service, 0.0, service, c, 0.0);
  EXPECT_EQ(deterministic.mean_wait_s, 0.0) << "D/D/c below saturation: nobody waits";
  EXPECT_EQ(wait_at_percentile_s(deterministic, 99), 0.0);
  EXPECT_DOUBLE_EQ(replica_arrival_scv(1.0, 7), 1.0) << "Poisson split is Poisson";
  EXPECT_DOUBLE_EQ(replica_arrival_scv(9.0, 4), 3.0) << "1 + 8 / 4";
  EXPECT_DOUBLE_EQ(replica_arrival_scv(0.0, 2), 0.5) << "a regular stream split at random is half as regular";
  EXPECT_DOUBLE_EQ(replica_arrival_scv(9.0, 1), 9.0) << "one replica sees the whole stream";
  EXPECT_NE(error_of([] { replica_arrival_scv(1.0, 0.5); }).find("the number of replicas must be a finite number >= 1"), std::string::npos);
  EXPECT_NE(error_of([] { estimate_queue(1, -1.0, 1, 1, 0); }).find("interarrival times' squared coefficient of variation"), std::string::npos);
}

TEST(Queueing, PercentilesFollowTheMmcTail) {
  const int c = 8;
  const double service = 2.0, a = 7.0;
  const QueueEstimate q = estimate_queue(a / service, 1.0, service, c, 1.0);
  for (const double p : {90.0, 99.0, 99.9}) {
    const double t = wait_at_percentile_s(q, p);
    // P(W > t) = C·exp(−(c − a) t / S).
    EXPECT_NEAR(q.p_wait * std::exp(-(c - a) * t / service), 1 - p / 100, 1e-12) << "M/M/8 at p" << p;
  }
  EXPECT_LT(wait_at_percentile_s(q, 90), wait_at_percentile_s(q, 99)) << "higher percentiles wait longer";
  EXPECT_EQ(wait_at_percentile_s(q, 100 * (1 - q.p_wait) - 1e-9), 0.0) << "a share that never waits has a zero wait";
  // Deterministic service: the same shape, its mean halved, so every percentile's wait halves.
  const QueueEstimate fixed = estimate_queue(a / service, 1.0, service, c, 0.0);
  EXPECT_NEAR(wait_at_percentile_s(fixed, 99), wait_at_percentile_s(q, 99) / 2, 1e-12);
  // Unstable: infinite waits, never a number that looks like an answer.
  const QueueEstimate over = estimate_queue(9.0 / service, 1.0, service, c, 1.0);
  EXPECT_FALSE(over.stable());
  EXPECT_EQ(over.p_wait, 1.0);
  EXPECT_TRUE(std::isinf(over.mean_wait_s));
  EXPECT_TRUE(std::isinf(wait_at_percentile_s(over, 99)));
  EXPECT_FALSE(estimate_queue(8.0 / service, 1.0, service, c, 1.0).stable()) << "rho = 1 is unstable too";
}

TEST(Queueing, LargeServerCountsStayFiniteAndMonotone) {
  const int c = 1024;
  double previous = 0;
  for (double a = 0; a < c; a += 7.5) {
    const double pw = erlang_c(c, a);
    ASSERT_TRUE(std::isfinite(pw) && pw >= 0 && pw <= 1) << "c = 1024, a = " << a << ": " << pw;
    EXPECT_GE(pw, previous) << "P(wait) grows with the load: c = 1024, a = " << a;
    previous = pw;
  }
  for (const double a : {900.0, 990.0, 1020.0}) {
    EXPECT_NEAR(erlang_c(c, a), erlang_c_by_sum(c, a), 1e-12) << "recursion vs log-space sum, c = 1024, a = " << a;
    EXPECT_LT(erlang_c(c + 1, a), erlang_c(c, a)) << "one more server waits less, a = " << a;
  }
  // The planner's bound on a batch: still finite, the wait still falling with the load.
  const QueueEstimate big = estimate_queue(60000.0 / 10, 1.0, 10.0, 65536, 0.0);
  EXPECT_TRUE(std::isfinite(big.mean_wait_s) && big.p_wait >= 0 && big.p_wait < 1e-50) << big.p_wait;
  const QueueEstimate near_full = estimate_queue(65500.0 / 10, 1.0, 10.0, 65536, 0.0);
  EXPECT_TRUE(std::isfinite(near_full.mean_wait_s)) << near_full.mean_wait_s;
  EXPECT_GT(near_full.mean_wait_s, big.mean_wait_s);
}

TEST(Queueing, BadInputsAreErrorsNamingTheQuantity) {
  const double nan = std::nan("");
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_NE(error_of([] { erlang_b(0, 1); }).find("number of servers (batch slots) must be in 1..65536, got 0"), std::string::npos);
  EXPECT_NE(error_of([] { erlang_c(70000, 1); }).find("got 70000"), std::string::npos);
  EXPECT_NE(error_of([&] { erlang_c(4, nan); }).find("the offered load (Erlangs) must be a finite number >= 0"), std::string::npos);
  EXPECT_NE(error_of([] { erlang_c(4, -1); }).find("got -1"), std::string::npos);
  EXPECT_NE(error_of([] { estimate_queue(-1, 1.0, 1, 1, 0); }).find("the arrival rate (requests/s) must be"), std::string::npos);
  EXPECT_NE(error_of([] { estimate_queue(1, 1.0, 0, 1, 0); }).find("the mean service time must be a finite number > 0"), std::string::npos);
  EXPECT_NE(error_of([&] { estimate_queue(1, 1.0, inf, 1, 0); }).find("mean service time"), std::string::npos);
  EXPECT_NE(error_of([&] { estimate_queue(1, 1.0, 1, 1, nan); }).find("squared coefficient of variation"), std::string::npos);
  EXPECT_NE(error_of([&] { estimate_queue(1e300, 1.0, 1e300, 1, 0); }).find("the offered load"), std::string::npos);
  const QueueEstimate q = estimate_queue(1, 1.0, 1, 2, 1);
  for (const double p : {0.0, 100.0, -5.0, nan})
    EXPECT_NE(error_of([&] { wait_at_percentile_s(q, p); }).find("the percentile must be a number between 0 and 100"), std::string::npos)
        << p;
}

}  // namespace
}  // namespace specdec::sim
