#include "reference/acceptance/acceptor.hpp"

#include <string>

#include "reference/core/error.hpp"
#include "reference/sampling/sampler.hpp"

namespace specdec {

namespace {

// The target vocabulary of `in`: the logits' width, or with target_argmax its `vocab`.
int vocab_of(const VerifyInput& in) {
  return in.target_logits ? static_cast<int>(in.target_logits->cols()) : in.vocab;
}

void check_input(const VerifyInput& in) {
  if (!in.tree || (!in.target_logits && !in.target_argmax))
    throw Error("verify: draft tree and target logits (or, for greedy sampling, their argmax) are required");
  const int n = in.tree->size();
  const int V = vocab_of(in);
  if (!in.target_logits) {
    if (in.sampling.mode != SamplingParams::Mode::greedy)
      throw Error("verify: target argmax rows serve greedy sampling only; " + to_string(in.sampling.mode) +
                  " sampling needs the target logits");
    if (V < 1) throw Error("verify: target argmax rows need the target vocabulary size (vocab = " + std::to_string(V) + ")");
    if (static_cast<int>(in.target_argmax->size()) != n + 1)
      throw Error("verify: " + std::to_string(in.target_argmax->size()) + " target argmax rows for " + std::to_string(n) +
                  " draft nodes; expected one at the root plus one after each node (" + std::to_string(n + 1) + ")");
    for (const int32_t t : *in.target_argmax)
      if (t < 0 || t >= V) throw Error("verify: target argmax " + std::to_string(t) + " outside the vocabulary [0, " + std::to_string(V) + ")");
  }
  in.tree->validate(V);
  if (in.target_logits && in.target_logits->rows() != n + 1) {
    throw Error("verify: " + std::to_string(in.target_logits->rows()) + " target logit rows for " + std::to_string(n) +
                " draft nodes; expected one at the root plus one after each node (" + std::to_string(n + 1) + ")");
  }
  if (in.draft_probs && !in.draft_probs->empty()) {
    if (static_cast<int>(in.draft_probs->size()) != n + 1) {
      throw Error("verify: " + std::to_string(in.draft_probs->size()) + " draft distributions; expected " +
                  std::to_string(n + 1) + " (root and after each node), or none for a deterministic drafter");
    }
    for (const auto& q : *in.draft_probs) {
      if (!q.empty() && static_cast<int>(q.size()) != V) {
        throw Error("verify: a draft distribution has " + std::to_string(q.size()) + " entries; the target vocabulary has " +
                    std::to_string(V));
      }
    }
  }
}

void normalise(std::vector<double>& p) {
  double s = 0;
  for (double v : p) s += v;
  if (s > 0)
    for (double& v : p) v /= s;
}

const float* row(const Matrix& m, int r) { return m.data() + static_cast<std::ptrdiff_t>(r) * m.cols(); }

}  // namespace

VerifyResult MatchAcceptor::verify(const VerifyInput& in) const {
  check_input(in);
  const DraftTree& tree = *in.tree;
  const int V = vocab_of(in);
  VerifyResult r;
  int point = -1;  // the accepted node whose children are examined; −1 = root
  for (;;) {
    const uint32_t position = static_cast<uint32_t>(in.root_position + (point < 0 ? 0 : tree.depth(point)));
    const int32_t choice = in.target_logits
                               ? sample_token(row(*in.target_logits, point + 1), V, in.sampling, in.sequence, position)
                               : (*in.target_argmax)[static_cast<std::size_t>(point + 1)];
    const std::vector<int> children = tree.children(point);
    int next = -1;
    for (int c : children) {
      const bool match = tree.tokens[c] == choice;
      r.decisions.push_back(match ? 1 : 0);
      r.decision_nodes.push_back(c);
      if (match) {
        next = c;
        break;
      }
    }
    if (next < 0) {
      r.emitted.push_back(choice);
      if (children.empty()) r.bonus_token = choice;
      return r;
    }
    r.accepted_nodes.push_back(next);
    r.emitted.push_back(choice);
    point = next;
  }
}

VerifyResult RejectionAcceptor::verify_with(const VerifyInput& in, Chance& chance) {
  check_input(in);
  const DraftTree& tree = *in.tree;
  if (!in.target_logits) throw Error("verify: rejection sampling needs the target logits, not only their argmax");
  const int V = static_cast<int>(in.target_logits->cols());
  const bool deterministic = !in.draft_probs || in.draft_probs->empty();
  VerifyResult r;
  int point = -1;
  for (;;) {
    const uint32_t position = static_cast<uint32_t>(in.root_position + (point < 0 ? 0 : tree.depth(point)));
    std::vector<double> p = probabilities(row(*in.target_logits, point + 1), V, in.sampling);
    std::vector<double> q;
    if (!deterministic) q = (*in.draft_probs)[point + 1];
    const std::vector<int> children = tree.children(point);
    if (children.empty()) {  // a leaf: every draft on the path was accepted; bonus token from p
      const int32_t bonus = chance.categorical(p, position, RandomPurpose::sample, 0);
      r.emitted.push_back(bonus);
      r.bonus_token = bonus;
      return r;
    }
    if (!deterministic && q.empty()) throw Error("verify: node " + std::to_string(point) + " has children but no draft distribution");
    int next = -1;
    for (size_t j = 0; j < children.size(); ++j) {
      const int c = children[j];
      const int32_t x = tree.tokens[c];
      const double ratio = deterministic ? p[x] : (q[x] > 0 ? p[x] / q[x] : 1.0);
      const bool accept = chance.bernoulli(ratio, position, RandomPurpose::accept, static_cast<uint32_t>(j));
      r.decisions.push_back(accept ? 1 : 0);
      r.decision_nodes.push_back(c);
      r.accept_probs.push_back(std::min(1.0, ratio));
      if (accept) {
        next = c;
        break;
      }
      if (deterministic) {
        p[x] = 0.0;  // one-hot q: the residual norm(max(0, p − δx)) is p without x
      } else {
        std::vector<double> residual(V);
        double mass = 0;
        for (int v = 0; v < V; ++v) mass += residual[v] = std::max(0.0, p[v] - q[v]);
        if (mass > 0) p = std::move(residual);  // p == q leaves nothing to correct
        q[x] = 0.0;
        normalise(q);
      }
      normalise(p);
    }
    if (next < 0) {
      const int32_t y = chance.categorical(p, position, RandomPurpose::residual, 0);
      r.emitted.push_back(y);
      return r;
    }
    r.accepted_nodes.push_back(next);
    r.emitted.push_back(tree.tokens[next]);
    point = next;
  }
}

VerifyResult RejectionAcceptor::verify(const VerifyInput& in) const {
  PhiloxChance chance(in.sampling.seed, in.sequence);
  VerifyResult r = verify_with(in, chance);
  r.draws = chance.draws();
  return r;
}

std::unique_ptr<TokenAcceptor> default_acceptor(const SamplingParams& sampling) {
  if (sampling.mode == SamplingParams::Mode::sample) return std::make_unique<RejectionAcceptor>();
  return std::make_unique<MatchAcceptor>();
}

}  // namespace specdec
