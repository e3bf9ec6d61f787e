#include "simulator/parallelism.hpp"

#include <algorithm>
#include <cmath>

#include "reference/core/error.hpp"
#include "simulator/expert_popularity.hpp"
#include "simulator/operators.hpp"

namespace specdec::sim {

void validate_parallelism(const Parallelism& par, const ModelShape& target, const OptionSpelling& sp) {
  const std::string n = std::to_string(par.ranks);
  const std::string dp = sp("dp-attention", std::to_string(par.dp_attention));
  const std::string ep = sp("ep", std::to_string(par.ep));
  if (par.dp_attention < 1) throw Error(dp + ": the attention data-parallel degree must be >= 1 (1: none)");
  if (par.ep < 1) throw Error(ep + ": the expert-parallel degree must be >= 1 (1: none)");
  if (par.ranks % par.dp_attention != 0)
    throw Error(dp + " does not divide the replica's " + n + " devices (" + sp("tp", n) +
                "): each of the D attention groups runs attention at TP N / D, so D x (attention TP) must equal the "
                "devices");
  if (par.ep > 1 && !target.is_moe())
    throw Error(ep + ": model '" + target.name +
                "' is dense (no routed experts), so there is nothing to place by expert parallelism; give " +
                sp("ep", "1"));
  if (par.ranks % par.ep != 0)
    throw Error(ep + " does not divide the replica's " + n + " devices (" + sp("tp", n) +
                "): the experts are split into EP ranks of N / EP devices each, which column-split their experts");
  if (par.dp_attention > 1 && par.ep != 1 && par.ep != par.ranks)
    throw Error(ep + " with " + dp + " must be 1 or the replica's " + n + " devices (" + sp("tp", n) +
                "): under data-parallel attention the engines' expert parallelism spans every device (vLLM's EP size "
                "is DP x TP; SGLang's DeepEP dispatch takes --ep-size = --tp); EP ranks of several devices are run "
                "with tensor-parallel attention (" + sp("dp-attention", "1") + ")");
  if (par.ep > 1 && target.num_experts % par.ep != 0)
    throw Error(ep + " does not divide the " + std::to_string(target.num_experts) + " routed experts of model '" +
                target.name + "': each device holds E / EP whole experts");
}

std::string describe_parallelism(const Parallelism& par) {
  if (par.plain()) return "TP " + std::to_string(par.ranks);
  std::string s = std::to_string(par.ranks) + " devices: attention DP " + std::to_string(par.dp_attention) + " x TP " +
                  std::to_string(par.attention_tp()) + ", experts ";
  if (par.ep == 1) return s + "TP " + std::to_string(par.ranks);
  return s + "EP " + std::to_string(par.ep) + (par.expert_tp() > 1 ? " x TP " + std::to_string(par.expert_tp()) : "");
}

int sequences_per_attention_group(int batch, int dp_attention) {
  return (batch + dp_attention - 1) / std::max(dp_attention, 1);
}

ExpertRankLoad busiest_expert_rank(double experts, double per_token, int ep, double batch, double tokens,
                                   double locality, double load_cv) {
  ExpertRankLoad best;
  if (experts <= 0 || per_token <= 0 || batch <= 0 || tokens <= 0 || ep < 1) return best;
  const double rows = batch * tokens;  // tokens routed in the forward, all attention groups together
  if (load_cv == 0.0) {
    const double q = std::min(per_token / experts, 1.0);
    best.touched = experts / ep * (1.0 - expert_miss_probability(q, batch, tokens, locality));
    best.rows = rows * per_token / ep;
    return best;
  }
  // Popularity rank j (coldest first) lives on device j mod P; device P − 1 holds the hottest of
  // each stride. The busiest device is the one with the most token-expert rows.
  const std::vector<double>& w = expert_popularity(int(experts), load_cv);
  for (int r = 0; r < ep; ++r) {
    ExpertRankLoad load;
    for (size_t j = size_t(r); j < w.size(); j += size_t(ep)) {
      const double q = std::min(per_token * w[j] / experts, 1.0);
      load.touched += 1.0 - expert_miss_probability(q, batch, tokens, locality);
      load.rows += rows * q;
    }
    if (load.rows > best.rows) best = load;
  }
  return best;
}

double remote_ranks_per_token(double experts, double per_token, int ep) {
  if (ep <= 1) return 0.0;
  // A token's k distinct experts miss one given device's E/P experts with probability
  // C(E − E/P, k) / C(E, k) = Π_{i<k} (E − E/P − i) / (E − i).
  const double local = experts / ep;
  double miss = 1.0;
  for (int i = 0; i < int(per_token); ++i) miss *= std::max(experts - local - i, 0.0) / (experts - i);
  return (ep - 1) * (1.0 - miss);
}

}  // namespace specdec::sim
