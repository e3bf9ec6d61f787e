#include "simulator/expert_popularity.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <mutex>
#include <numeric>
#include <string>
#include <utility>

#include <boost/math/special_functions/gamma.hpp>

#include "reference/core/error.hpp"

namespace specdec::sim {

const std::vector<double>& expert_popularity(int experts, double cv) {
  // Written so that NaN fails too.
  if (!(cv >= 0.0 && cv <= kMaxExpertLoadCv))
    throw Error("expert load CV must be in [0, " + std::to_string(kMaxExpertLoadCv) + "], got " + std::to_string(cv));
  if (experts < 1 || experts > 4096)
    throw Error("expert popularity: the number of experts must be in [1, 4096], got " + std::to_string(experts));
  static std::mutex mutex;
  static std::map<std::pair<int, double>, std::vector<double>> cache;  // node addresses stay valid
  const std::lock_guard<std::mutex> lock(mutex);
  auto [it, fresh] = cache.try_emplace({experts, cv});
  std::vector<double>& w = it->second;
  if (!fresh) return w;
  w.assign(experts, 1.0);
  if (cv == 0.0) return w;
  // Gamma(shape a, scale 1/a) has mean 1 and CV 1/√a; its quantiles are gamma_p_inv(a, u) / a.
  const double a = 1.0 / (cv * cv);
  for (int i = 0; i < experts; ++i) w[i] = boost::math::gamma_p_inv(a, (i + 0.5) / experts) / a;
  // The mid-quantiles' mean is not exactly 1: renormalise so the selections still sum to k per token.
  const double mean = std::accumulate(w.begin(), w.end(), 0.0) / experts;
  for (double& x : w) x /= mean;
  return w;
}

RoutingStatistics routing_statistics(const std::vector<double>& weights, double coverage) {
  if (weights.empty()) throw Error("routing statistics: no experts");
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  if (!(total > 0.0)) throw Error("routing statistics: the weights must have a positive sum");
  std::vector<double> share(weights.size());
  for (size_t i = 0; i < weights.size(); ++i) share[i] = weights[i] / total;
  std::sort(share.begin(), share.end(), std::greater<double>());
  RoutingStatistics r;
  double entropy = 0;
  for (double s : share)
    if (s > 0) entropy -= s * std::log(s);
  r.concentration = share.size() > 1 ? 1.0 - entropy / std::log(double(share.size())) : 1.0;
  double held = 0;
  for (double s : share) {
    held += s;
    ++r.experts_for_coverage;
    if (held >= coverage) break;
  }
  r.top_share = share.front();
  return r;
}

}  // namespace specdec::sim
