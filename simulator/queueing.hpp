#pragma once
// Queueing at one serving replica: requests wait for one of its batch slots. A replica running
// continuous batching is a multi-server queue, M/G/c: Poisson arrivals at rate λ, c servers (the
// batch slots; a request holds one from admission to its last token), a general service time of
// mean S and squared coefficient of variation C_s², first come first served, nobody gives up.
//
//   a = λ·S                offered load (Erlangs); ρ = a / c the utilisation, stable only below 1
//   P(wait) = ErlangC(c, a)  from the Erlang B recursion B(0) = 1, B(k) = a·B(k−1) / (k + a·B(k−1))
//                          and C = c·B / (c − a·(1 − B)): every term in [0, 1], so no factorial and
//                          no overflow for any c
//   W_q ≈ C·S / (c − a) · (C_a² + C_s²) / 2, C_a² = 1 for Poisson arrivals   (Allen–Cunneen; exact
//                          for M/M/c, where C_s² = 1)
//   P(W > t) ≈ C·exp(−C·t / W_q)   the M/M/c shape (the wait of those who wait is exponential, rate
//                          cμ − λ = (c − a)/S), its rate scaled so that its mean is W_q; exact for M/M/c
//
// Sources: L. Kleinrock, Queueing Systems, Vol. 1: Theory, Wiley 1975, ch. 3 (M/M/m, Erlang's C
// formula); D. Gross and C. M. Harris, Fundamentals of Queueing Theory (M/M/c's waiting-time
// distribution); A. O. Allen, Probability, Statistics, and Queueing Theory with Computer Science
// Applications, 2nd ed., Academic Press 1990 (the Allen–Cunneen approximation for GI/G/c).

namespace specdec::sim {

// Erlang's loss formula: the share of arrivals that find all `servers` busy when none may wait.
// `servers` in 1..kMaxSimulatedBatch, `offered_erlangs` >= 0 and finite; otherwise an Error.
double erlang_b(int servers, double offered_erlangs);

// Erlang's delay formula: the probability that an arrival waits (M/M/c). 1 when the load is at or
// beyond the servers (offered_erlangs >= servers): then every arrival waits, for ever.
double erlang_c(int servers, double offered_erlangs);

struct QueueEstimate {
  int servers = 1;
  double service_s = 0;         // S, mean
  double service_scv = 0;       // C_s²
  double offered_erlangs = 0;   // a = λ·S
  double utilization = 0;       // ρ = a / c
  double p_wait = 0;            // ErlangC(c, a)
  double mean_wait_s = 0;       // Allen–Cunneen W_q; infinite when unstable
  bool stable() const { return utilization < 1; }
};

// The queue of `servers` slots fed `arrivals_per_s` (>= 0) requests of mean service `service_s`
// (> 0) and squared coefficient of variation `service_scv` (>= 0); all finite.
QueueEstimate estimate_queue(double arrivals_per_s, double service_s, int servers, double service_scv);

// The wait not exceeded by `percentile` percent of requests (0 < percentile < 100), from the tail
// above: 0 when at least that share does not wait at all; infinite when the queue is unstable.
double wait_at_percentile_s(const QueueEstimate& q, double percentile);

}  // namespace specdec::sim
