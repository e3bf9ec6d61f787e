#pragma once
// Queueing at one serving replica: requests wait for one of its batch slots. A replica running
// continuous batching is a multi-server queue, G/G/c: arrivals at rate λ whose interarrival times
// have squared coefficient of variation C_a² (1: Poisson, the M/G/c queue; above 1: bursty), c
// servers (the batch slots; a request holds one from admission to its last token), a general
// service time of mean S and squared coefficient of variation C_s², first come first served,
// nobody gives up.
//
//   a = λ·S                offered load (Erlangs); ρ = a / c the utilisation, stable only below 1
//   P(wait) = ErlangC(c, a)  from the Erlang B recursion B(0) = 1, B(k) = a·B(k−1) / (k + a·B(k−1))
//                          and C = c·B / (c − a·(1 − B)): every term in [0, 1], so no factorial and
//                          no overflow for any c
//   W_q ≈ C·S / (c − a) · (C_a² + C_s²) / 2   (Allen–Cunneen; exact for M/M/c, where C_a² = C_s² = 1;
//                          P(wait) is kept at Erlang C, as the approximation does)
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
  double arrival_scv = 1;       // C_a² (1: Poisson)
  double offered_erlangs = 0;   // a = λ·S
  double utilization = 0;       // ρ = a / c
  double p_wait = 0;            // ErlangC(c, a)
  double mean_wait_s = 0;       // Allen–Cunneen W_q; infinite when unstable
  bool stable() const { return utilization < 1; }
};

// The queue of `servers` slots fed `arrivals_per_s` (>= 0) requests with interarrival times of
// squared coefficient of variation `arrival_scv` (>= 0; 1 for Poisson), of mean service `service_s`
// (> 0) and squared coefficient of variation `service_scv` (>= 0); all finite.
QueueEstimate estimate_queue(double arrivals_per_s, double arrival_scv, double service_s, int servers, double service_scv);

// The squared coefficient of variation of the arrivals one of `replicas` replicas sees when a
// stream of interarrival SCV `arrival_scv` is split among them at random, each request to each
// replica with probability 1 / replicas: C² = 1 + (C_a² − 1) / replicas (the thinning of a renewal
// process). Splitting brings any stream towards Poisson; a balancer that deals requests in turn
// smooths it further, so this is the burstier, cautious case.
double replica_arrival_scv(double arrival_scv, double replicas);

// The wait not exceeded by `percentile` percent of requests (0 < percentile < 100), from the tail
// above: 0 when at least that share does not wait at all; infinite when the queue is unstable.
double wait_at_percentile_s(const QueueEstimate& q, double percentile);

}  // namespace specdec::sim
