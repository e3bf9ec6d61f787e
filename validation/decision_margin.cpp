#include "validation/decision_margin.hpp"

#include <algorithm>
#include <cmath>

#include "reference/acceptance/chance.hpp"
#include "reference/core/error.hpp"
#include "reference/sampling/counter_rng.hpp"
#include "reference/sampling/sampler.hpp"

namespace specdec::validation {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The inverse-CDF draw of sample_from(p, u) with the distance of u to the chosen token's CDF
// interval, accumulated in the same (index) order as sample_from.
Decision categorical(const std::vector<double>& p, double u) {
  Decision d;
  d.kind = DecisionKind::draw;
  d.token = sample_from(p, u);
  double lo = 0.0;
  for (int i = 0; i < d.token; ++i) lo += p[static_cast<size_t>(i)];
  const double hi = lo + p[static_cast<size_t>(d.token)];
  const double below = std::max(0.0, u - lo), above = std::max(0.0, hi - u);
  int prev = -1, next = -1;
  for (int i = d.token - 1; i >= 0 && prev < 0; --i)
    if (p[static_cast<size_t>(i)] > 0) prev = i;
  for (size_t i = static_cast<size_t>(d.token) + 1; i < p.size() && next < 0; ++i)
    if (p[i] > 0) next = static_cast<int>(i);
  // A boundary with no token behind it (the CDF's ends) cannot be crossed.
  const double m_below = prev >= 0 ? below : kInf, m_above = next >= 0 ? above : kInf;
  d.margin = std::min(m_below, m_above);
  d.runner_up = m_below <= m_above ? prev : next;
  return d;
}

// Records what the rejection rule asked of chance, with the margins, drawing the very uniforms
// PhiloxChance would.
class MarginChance final : public Chance {
 public:
  MarginChance(uint64_t seed, uint32_t sequence) : seed_(seed), sequence_(sequence) {}
  bool bernoulli(double prob, uint32_t position, RandomPurpose purpose, uint32_t index) override {
    const double u = uniform(seed_, sequence_, position, purpose, index);
    Decision d;
    d.kind = DecisionKind::test;
    d.position = static_cast<int32_t>(position);
    d.accepted = u < prob;
    d.margin = std::abs(u - std::min(1.0, prob));
    events.push_back(d);
    return d.accepted;
  }
  int categorical(const std::vector<double>& p, uint32_t position, RandomPurpose purpose, uint32_t index) override {
    Decision d = validation::categorical(p, uniform(seed_, sequence_, position, purpose, index));
    d.position = static_cast<int32_t>(position);
    events.push_back(d);
    return d.token;
  }
  std::vector<Decision> events;

 private:
  uint64_t seed_;
  uint32_t sequence_;
};

const float* row_of(const Matrix& m, int r) { return m.data() + static_cast<std::ptrdiff_t>(r) * m.cols(); }

}  // namespace

std::string to_string(DecisionKind kind) {
  switch (kind) {
    case DecisionKind::choice: return "choice";
    case DecisionKind::test: return "test";
    case DecisionKind::draw: return "draw";
  }
  return "decision";
}

bool Decision::same_outcome(const Decision& o) const {
  return kind == o.kind && row == o.row && node == o.node && token == o.token && accepted == o.accepted;
}

std::string Decision::describe() const {
  const std::string at = " at row " + std::to_string(row) + " (position " + std::to_string(position) + ")";
  if (kind == DecisionKind::test) {
    return "acceptance test of node " + std::to_string(node) + " (token " + std::to_string(token) + ")" + at + ": " +
           (accepted ? "accepted" : "rejected");
  }
  return (kind == DecisionKind::choice ? "choice" : "draw") + at + ": token " + std::to_string(token);
}

Decision token_decision(const float* row, int vocab, const SamplingParams& sampling, uint32_t sequence, int32_t position) {
  const uint32_t pos = static_cast<uint32_t>(position);
  if (sampling.mode == SamplingParams::Mode::sample) {
    Decision d = categorical(probabilities(row, vocab, sampling), uniform(sampling.seed, sequence, pos, RandomPurpose::sample, 0));
    d.position = position;
    return d;
  }
  Decision d;
  d.kind = DecisionKind::choice;
  d.position = position;
  d.token = sample_token(row, vocab, sampling, sequence, pos);
  // Scores in logit units: greedy the logits, coupled logit + T·Gumbel over the tokens top-k /
  // top-p leave (the same ordering as logit/T + Gumbel).
  std::vector<double> p;
  if (sampling.mode == SamplingParams::Mode::coupled) p = probabilities(row, vocab, sampling);
  auto score = [&](int i) {
    if (sampling.mode == SamplingParams::Mode::greedy) return static_cast<double>(row[i]);
    return static_cast<double>(row[i]) + sampling.temperature * gumbel(sampling.seed, sequence, pos, static_cast<uint32_t>(i));
  };
  const double best = score(d.token);
  double second = -kInf;
  for (int i = 0; i < vocab; ++i) {
    if (i == d.token || (!p.empty() && p[static_cast<size_t>(i)] == 0.0)) continue;
    const double s = score(i);
    if (d.runner_up < 0 || s > second) {
      second = s;
      d.runner_up = i;
    }
  }
  d.margin = d.runner_up < 0 ? kInf : std::max(0.0, best - second);
  return d;
}

Decision topk_choice(const std::vector<int32_t>& ids, const std::vector<float>& values, int vocab, int32_t position) {
  if (ids.empty() || ids.size() != values.size()) throw Error("topk_choice: a top-k row needs k >= 1 ids and as many values");
  Decision d;
  d.kind = DecisionKind::choice;
  d.position = position;
  d.token = ids[0];
  if (ids.size() >= 2) {
    d.runner_up = ids[1];
    d.margin = static_cast<double>(values[0]) - static_cast<double>(values[1]);
  } else {
    d.margin = vocab == 1 ? kInf : std::numeric_limits<double>::quiet_NaN();
  }
  return d;
}

std::vector<Decision> match_path_decisions(const DraftTree& tree, int32_t root_position,
                                           const std::function<Decision(int row, int32_t position)>& decide) {
  std::vector<Decision> out;
  int point = -1;
  for (;;) {
    Decision d = decide(point + 1, root_position + (point < 0 ? 0 : tree.depth(point)));
    d.row = point + 1;
    out.push_back(d);
    int next = -1;
    for (int c : tree.children(point))
      if (tree.tokens[c] == d.token) {
        next = c;
        break;
      }
    if (next < 0) return out;
    point = next;
  }
}

std::vector<Decision> verify_decisions(const VerifyInput& in) {
  if (!in.tree || !in.target_logits) throw Error("verify_decisions: draft tree and target logits are required");
  const DraftTree& tree = *in.tree;
  const int V = static_cast<int>(in.target_logits->cols());
  if (in.sampling.mode != SamplingParams::Mode::sample) {
    return match_path_decisions(tree, in.root_position, [&](int row, int32_t position) {
      return token_decision(row_of(*in.target_logits, row), V, in.sampling, in.sequence, position);
    });
  }
  std::vector<Decision> out;
  MarginChance chance(in.sampling.seed, in.sequence);
  const VerifyResult r = RejectionAcceptor::verify_with(in, chance);
  size_t test = 0;
  for (Decision& d : chance.events) {
    if (d.kind == DecisionKind::test) {
      d.node = r.decision_nodes.at(test++);
      d.token = tree.tokens[d.node];
      d.row = tree.parents[d.node] + 1;
    } else {
      d.row = r.accepted_nodes.empty() ? 0 : r.accepted_nodes.back() + 1;
    }
    out.push_back(d);
  }
  return out;
}

}  // namespace specdec::validation
