#include "simulator/queueing.hpp"

#include <cmath>
#include <limits>
#include <sstream>

#include "reference/core/error.hpp"
#include "reference/core/format.hpp"
#include "reference/core/input_limits.hpp"

namespace specdec::sim {

namespace {

void check_servers(int servers) {
  if (servers < 1 || servers > kMaxSimulatedBatch)
    throw Error("queueing: the number of servers (batch slots) must be in 1.." + std::to_string(kMaxSimulatedBatch) + ", got " +
                std::to_string(servers));
}

// Written so that NaN fails too.
void check_non_negative(double v, const char* what) {
  if (!(v >= 0 && std::isfinite(v))) throw Error(std::string("queueing: ") + what + " must be a finite number >= 0, got " + format_double(v));
}

}  // namespace

double erlang_b(int servers, double offered_erlangs) {
  check_servers(servers);
  check_non_negative(offered_erlangs, "the offered load (Erlangs)");
  // B(k) = a·B(k−1) / (k + a·B(k−1)): each step stays in [0, 1], where a^c / c! would overflow by c = 171.
  double b = 1;
  for (int k = 1; k <= servers; ++k) b = offered_erlangs * b / (k + offered_erlangs * b);
  return b;
}

double erlang_c(int servers, double offered_erlangs) {
  const double b = erlang_b(servers, offered_erlangs);
  if (offered_erlangs >= servers) return 1;  // no steady state: every arrival waits
  return servers * b / (servers - offered_erlangs * (1 - b));
}

QueueEstimate estimate_queue(double arrivals_per_s, double arrival_scv, double service_s, int servers, double service_scv) {
  check_non_negative(arrivals_per_s, "the arrival rate (requests/s)");
  check_non_negative(arrival_scv, "the interarrival times' squared coefficient of variation");
  if (!(service_s > 0 && std::isfinite(service_s)))
    throw Error("queueing: the mean service time must be a finite number > 0 seconds, got " + format_double(service_s));
  check_non_negative(service_scv, "the service time's squared coefficient of variation");
  check_servers(servers);
  QueueEstimate q;
  q.servers = servers;
  q.service_s = service_s;
  q.service_scv = service_scv;
  q.arrival_scv = arrival_scv;
  q.offered_erlangs = arrivals_per_s * service_s;
  if (!std::isfinite(q.offered_erlangs)) throw Error("queueing: the offered load λ·S is not finite (" + format_double(arrivals_per_s) + " requests/s)");
  q.utilization = q.offered_erlangs / servers;
  q.p_wait = erlang_c(servers, q.offered_erlangs);
  q.mean_wait_s = q.stable() ? q.p_wait * service_s / (servers - q.offered_erlangs) * (arrival_scv + service_scv) / 2
                             : std::numeric_limits<double>::infinity();
  return q;
}

double replica_arrival_scv(double arrival_scv, double replicas) {
  check_non_negative(arrival_scv, "the interarrival times' squared coefficient of variation");
  if (!(replicas >= 1 && std::isfinite(replicas)))
    throw Error("queueing: the number of replicas must be a finite number >= 1, got " + format_double(replicas));
  return 1 + (arrival_scv - 1) / replicas;
}

double wait_at_percentile_s(const QueueEstimate& q, double percentile) {
  if (!(percentile > 0 && percentile < 100))
    throw Error("queueing: the percentile must be a number between 0 and 100 (exclusive), got " + format_double(percentile));
  if (!q.stable()) return std::numeric_limits<double>::infinity();
  const double beyond = 1 - percentile / 100;  // the share allowed to wait longer
  if (q.p_wait <= beyond) return 0;
  // P(W > t) = C·exp(−θt), θ = C / W_q = (c − a) / (S·(C_a² + C_s²)/2): M/M/c's rate, scaled to the mean.
  const double variability = (q.arrival_scv + q.service_scv) / 2;
  if (!(variability > 0)) return 0;  // deterministic arrivals and service: nobody waits
  const double theta = (q.servers - q.offered_erlangs) / (q.service_s * variability);
  return std::log(q.p_wait / beyond) / theta;
}

}  // namespace specdec::sim
