// Losslessness of the acceptance rules, computed exactly. On a tiny vocabulary every draft outcome
// is enumerated with its probability, and every random branch of the acceptor (each accept/reject
// test and each residual or bonus draw) is walked with its exact probability by running the real
// acceptance code against a scripted Chance. Completing each emitted prefix by sampling the target,
// the distribution over whole sequences must equal the target's own, to 1e-12.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>

#include "reference/acceptance/acceptor.hpp"
#include "reference/core/error.hpp"
#include "reference/sampling/sampler.hpp"

namespace specdec {
namespace {

constexpr int V = 4;
using Seq = std::vector<int32_t>;

// Deterministic pseudo-random logits for a prefix; `salt` tells target and draft apart.
std::vector<float> logits_for(const Seq& prefix, uint32_t salt) {
  uint64_t h = 1469598103934665603ull ^ salt;
  for (int32_t t : prefix) h = (h ^ static_cast<uint64_t>(t + 1)) * 1099511628211ull;
  std::vector<float> l(V);
  for (int v = 0; v < V; ++v) {
    h = h * 6364136223846793005ull + 1442695040888963407ull;
    l[v] = static_cast<float>(static_cast<double>(h >> 11) / 9007199254740992.0 * 4.0 - 2.0);
  }
  return l;
}

SamplingParams sample_params() {
  SamplingParams s;
  s.mode = SamplingParams::Mode::sample;
  s.temperature = 1.0;
  return s;
}

std::vector<double> target_p(const Seq& prefix) { return probabilities(logits_for(prefix, 1).data(), V, sample_params()); }
std::vector<double> draft_q(const Seq& prefix) { return probabilities(logits_for(prefix, 2).data(), V, sample_params()); }

// Walks every branch: decision i takes script[i] (0 = accept / first token), extended with 0s.
class ScriptedChance final : public Chance {
 public:
  explicit ScriptedChance(std::vector<int> script) : script_(std::move(script)) {}
  bool bernoulli(double prob, uint32_t, RandomPurpose, uint32_t) override {
    const double a = std::min(1.0, prob);
    const int c = next(2);
    probability_ *= c == 0 ? a : 1.0 - a;
    return c == 0;
  }
  int categorical(const std::vector<double>& p, uint32_t, RandomPurpose, uint32_t) override {
    const int c = next(static_cast<int>(p.size()));
    probability_ *= p[c];
    return c;
  }
  double probability() const { return probability_; }
  // The next script in depth-first order, or false when all branches were walked.
  bool advance(std::vector<int>& script) const {
    script = taken_;
    while (!script.empty()) {
      const size_t i = script.size() - 1;
      if (script[i] + 1 < arity_[i]) {
        ++script[i];
        return true;
      }
      script.pop_back();
    }
    return false;
  }

 private:
  int next(int arity) {
    const int c = taken_.size() < script_.size() ? script_[taken_.size()] : 0;
    taken_.push_back(c);
    arity_.push_back(arity);
    return c;
  }
  std::vector<int> script_, taken_, arity_;
  double probability_ = 1.0;
};

// A drafted tree with everything verify needs, built from the prefix-dependent p and q.
struct Drafted {
  DraftTree tree;
  double probability = 1.0;  // of drafting exactly this tree
};

Matrix target_rows(const Seq& prompt, const DraftTree& tree) {
  Matrix m(tree.size() + 1, V);
  for (int r = 0; r <= tree.size(); ++r) {
    Seq s = prompt;
    if (r > 0)
      for (int n : tree.path_to(r - 1)) s.push_back(tree.tokens[n]);
    const auto l = logits_for(s, 1);
    for (int v = 0; v < V; ++v) m(r, v) = l[v];
  }
  return m;
}

std::vector<std::vector<double>> draft_rows(const Seq& prompt, const DraftTree& tree) {
  std::vector<std::vector<double>> q;
  for (int r = 0; r <= tree.size(); ++r) {
    Seq s = prompt;
    if (r > 0)
      for (int n : tree.path_to(r - 1)) s.push_back(tree.tokens[n]);
    q.push_back(draft_q(s));
  }
  return q;
}

// Exact distribution over sequences of length `len` after `prompt`: draft, verify (all random
// branches), then complete by sampling the target.
std::map<Seq, double> speculative_distribution(const Seq& prompt, const std::vector<Drafted>& drafts, bool with_q, int len) {
  std::map<Seq, double> dist;
  std::function<void(Seq, double)> complete = [&](Seq s, double pr) {
    if (static_cast<int>(s.size()) == len) {
      dist[s] += pr;
      return;
    }
    Seq full = prompt;
    full.insert(full.end(), s.begin(), s.end());
    const auto p = target_p(full);
    for (int v = 0; v < V; ++v) {
      Seq t = s;
      t.push_back(v);
      if (p[v] > 0) complete(t, pr * p[v]);
    }
  };
  for (const Drafted& d : drafts) {
    const Matrix logits = target_rows(prompt, d.tree);
    const auto q = draft_rows(prompt, d.tree);
    VerifyInput in;
    in.tree = &d.tree;
    in.target_logits = &logits;
    in.draft_probs = with_q ? &q : nullptr;
    in.sampling = sample_params();
    in.root_position = static_cast<int32_t>(prompt.size());
    std::vector<int> script;
    do {
      ScriptedChance chance(script);
      const VerifyResult r = RejectionAcceptor::verify_with(in, chance);
      if (chance.probability() > 0) {
        Seq e = r.emitted;
        if (static_cast<int>(e.size()) > len) e.resize(len);
        complete(e, d.probability * chance.probability());
      }
      if (!chance.advance(script)) break;
    } while (true);
  }
  return dist;
}

std::map<Seq, double> target_distribution(const Seq& prompt, int len) {
  std::map<Seq, double> dist;
  std::function<void(Seq, double)> rec = [&](Seq s, double pr) {
    if (static_cast<int>(s.size()) == len) {
      dist[s] += pr;
      return;
    }
    Seq full = prompt;
    full.insert(full.end(), s.begin(), s.end());
    const auto p = target_p(full);
    for (int v = 0; v < V; ++v) {
      Seq t = s;
      t.push_back(v);
      rec(t, pr * p[v]);
    }
  };
  rec({}, 1.0);
  return dist;
}

void expect_equal(const std::map<Seq, double>& got, const std::map<Seq, double>& want, const std::string& what) {
  double total = 0, worst = 0;
  for (const auto& [s, pr] : want) {
    const auto it = got.find(s);
    worst = std::max(worst, std::abs((it == got.end() ? 0.0 : it->second) - pr));
  }
  for (const auto& [s, pr] : got) total += pr;
  EXPECT_NEAR(total, 1.0, 1e-12) << what;
  EXPECT_LT(worst, 1e-12) << what << ": max |P_speculative(seq) − P_target(seq)|";
}

int argmax_of(const std::vector<double>& p) { return static_cast<int>(std::max_element(p.begin(), p.end()) - p.begin()); }

const std::vector<Seq> kPrompts = {{0}, {3, 1}, {2, 2, 0}};

TEST(Losslessness, ChainWithFullDraftDistribution) {
  for (const Seq& prompt : kPrompts) {
    for (int K : {1, 2, 3}) {
      std::vector<Drafted> drafts;
      std::function<void(Seq, double)> rec = [&](Seq d, double pr) {
        if (static_cast<int>(d.size()) == K) {
          drafts.push_back({DraftTree::chain(d), pr});
          return;
        }
        Seq full = prompt;
        full.insert(full.end(), d.begin(), d.end());
        const auto q = draft_q(full);
        for (int v = 0; v < V; ++v) {
          Seq e = d;
          e.push_back(v);
          rec(e, pr * q[v]);
        }
      };
      rec({}, 1.0);
      expect_equal(speculative_distribution(prompt, drafts, true, K + 1), target_distribution(prompt, K + 1),
                   "chain K=" + std::to_string(K) + " prompt size " + std::to_string(prompt.size()));
    }
  }
}

TEST(Losslessness, ChainWithOneHotDraft) {
  for (const Seq& prompt : kPrompts) {
    for (int K : {1, 2, 3}) {
      Seq d;
      for (int i = 0; i < K; ++i) {
        Seq full = prompt;
        full.insert(full.end(), d.begin(), d.end());
        d.push_back(argmax_of(draft_q(full)));
      }
      expect_equal(speculative_distribution(prompt, {{DraftTree::chain(d), 1.0}}, false, K + 1),
                   target_distribution(prompt, K + 1), "one-hot chain K=" + std::to_string(K));
    }
  }
}

// Root with two children drawn without replacement from q; each child with one child drawn from q.
TEST(Losslessness, TreeWithChildrenDrawnWithoutReplacement) {
  for (const Seq& prompt : kPrompts) {
    std::vector<Drafted> drafts;
    const auto q0 = draft_q(prompt);
    for (int a = 0; a < V; ++a) {
      for (int b = 0; b < V; ++b) {
        if (a == b) continue;
        const double pab = q0[a] * q0[b] / (1.0 - q0[a]);
        Seq pa = prompt, pb = prompt;
        pa.push_back(a);
        pb.push_back(b);
        const auto qa = draft_q(pa), qb = draft_q(pb);
        for (int c = 0; c < V; ++c)
          for (int e = 0; e < V; ++e) drafts.push_back({DraftTree{{a, b, c, e}, {-1, -1, 0, 1}}, pab * qa[c] * qb[e]});
      }
    }
    expect_equal(speculative_distribution(prompt, drafts, true, 3), target_distribution(prompt, 3), "sampled tree");
  }
}

// EAGLE-2 style deterministic candidates: the top-3 children of the root, the top-2 under the first.
TEST(Losslessness, TreeOfDeterministicCandidates) {
  for (const Seq& prompt : kPrompts) {
    const auto q0 = draft_q(prompt);
    std::vector<int> order(V);
    for (int v = 0; v < V; ++v) order[v] = v;
    std::sort(order.begin(), order.end(), [&](int x, int y) { return q0[x] > q0[y]; });
    Seq p1 = prompt;
    p1.push_back(order[0]);
    const auto q1 = draft_q(p1);
    std::vector<int> order1(V);
    for (int v = 0; v < V; ++v) order1[v] = v;
    std::sort(order1.begin(), order1.end(), [&](int x, int y) { return q1[x] > q1[y]; });
    const DraftTree tree{{order[0], order[1], order[2], order1[0], order1[1]}, {-1, -1, -1, 0, 0}};
    expect_equal(speculative_distribution(prompt, {{tree, 1.0}}, false, 3), target_distribution(prompt, 3), "top-k tree");
  }
}

// The test can fail: verifying a deterministic (argmax) draft as if it had been sampled from q —
// accept with p/q, correct with max(0, p − q) — is a known mistake, and it is caught.
TEST(Losslessness, DetectsAWrongRule) {
  const Seq prompt = {1};
  const DraftTree argmax_draft = DraftTree::chain({argmax_of(draft_q(prompt))});
  const auto wrong = speculative_distribution(prompt, {{argmax_draft, 1.0}}, true, 2);
  const auto want = target_distribution(prompt, 2);
  double worst = 0;
  for (const auto& [s, pr] : want) worst = std::max(worst, std::abs((wrong.count(s) ? wrong.at(s) : 0.0) - pr));
  EXPECT_GT(worst, 1e-3);
}

TEST(Acceptors, GreedyMatchAcceptsTheArgmaxPath) {
  // Target argmax is 2 at the root and 0 after token 2; the tree offers 1 and 2, then 0 and 3 under 2.
  Matrix logits = Matrix::Zero(5, V);
  logits(0, 2) = 5;  // root
  logits(2, 0) = 5;  // after node 1 (token 2)
  logits(3, 1) = 5;  // after node 2 (token 0): bonus 1
  const DraftTree tree{{1, 2, 0, 3}, {-1, -1, 1, 1}};
  VerifyInput in;
  in.tree = &tree;
  in.target_logits = &logits;
  const VerifyResult r = MatchAcceptor().verify(in);
  EXPECT_EQ(r.accepted_nodes, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(r.emitted, (Seq{2, 0, 1}));
  EXPECT_EQ(r.bonus_token, 1);
  EXPECT_EQ(r.decisions, (std::vector<uint8_t>{0, 1, 1}));
}

TEST(Acceptors, GreedyMatchTakesTheArgmaxRowsInsteadOfTheLogits) {
  // Random trees and logits with ties: the argmax rows (ForwardRequest::argmax_only) give the
  // decision the logits give.
  const MatchAcceptor match;
  EXPECT_TRUE(match.takes_argmax(SamplingParams{}));
  EXPECT_FALSE(match.takes_argmax(sample_params()));
  EXPECT_FALSE(RejectionAcceptor().takes_argmax(SamplingParams{}));
  std::mt19937 rng(77);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 6);
    DraftTree tree;
    for (int i = 0; i < n; ++i) {
      tree.tokens.push_back(static_cast<int32_t>(rng() % V));
      tree.parents.push_back(i == 0 ? -1 : static_cast<int32_t>(rng() % (i + 1)) - 1);
    }
    Matrix logits(n + 1, V);
    for (Eigen::Index i = 0; i < logits.size(); ++i) logits.data()[i] = static_cast<float>(rng() % 3);  // ties
    std::vector<int32_t> picks;
    for (int r = 0; r <= n; ++r) picks.push_back(argmax(logits.row(r).data(), V));
    VerifyInput with_logits;
    with_logits.tree = &tree;
    with_logits.target_logits = &logits;
    VerifyInput with_picks = with_logits;
    with_picks.target_logits = nullptr;
    with_picks.target_argmax = &picks;
    with_picks.vocab = V;
    const VerifyResult a = match.verify(with_logits), b = match.verify(with_picks);
    EXPECT_EQ(a.accepted_nodes, b.accepted_nodes) << "trial " << trial << ", seed 77";
    EXPECT_EQ(a.emitted, b.emitted) << "trial " << trial << ", seed 77";
    EXPECT_EQ(a.decisions, b.decisions) << "trial " << trial << ", seed 77";
  }
}

TEST(Acceptors, ArgmaxRowsAreRefusedWhereTheyCannotServe) {
  const DraftTree tree = DraftTree::chain({1, 2});
  std::vector<int32_t> picks = {1, 2, 0};
  VerifyInput in;
  in.tree = &tree;
  in.target_argmax = &picks;
  in.vocab = V;
  EXPECT_NO_THROW(MatchAcceptor().verify(in));
  struct Case {
    std::function<void(VerifyInput&, std::vector<int32_t>&)> spoil;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](VerifyInput& i, std::vector<int32_t>&) { i.sampling = sample_params(); }, "serve greedy sampling only; sample"},
      {[](VerifyInput& i, std::vector<int32_t>&) { i.vocab = 0; }, "need the target vocabulary size"},
      {[](VerifyInput&, std::vector<int32_t>& p) { p.pop_back(); }, "2 target argmax rows for 2 draft nodes"},
      {[](VerifyInput&, std::vector<int32_t>& p) { p[1] = V; }, "target argmax 4 outside the vocabulary [0, 4)"},
      {[](VerifyInput& i, std::vector<int32_t>&) { i.target_argmax = nullptr; }, "target logits (or, for greedy"},
  };
  for (const Case& c : cases) {
    VerifyInput bad = in;
    std::vector<int32_t> p = picks;
    bad.target_argmax = &p;
    c.spoil(bad, p);
    try {
      MatchAcceptor().verify(bad);
      ADD_FAILURE() << "accepted: " << c.message;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << e.what();
    }
  }
  try {
    RejectionAcceptor().verify(in);
    ADD_FAILURE() << "rejection sampling ran without logits";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("rejection sampling needs the target logits"), std::string::npos) << e.what();
  }
}

TEST(Acceptors, RecordsDrawsWithCounters) {
  Matrix logits = Matrix::Zero(3, V);
  const DraftTree tree = DraftTree::chain({1, 2});
  std::vector<std::vector<double>> q(3, std::vector<double>(V, 0.25));
  VerifyInput in;
  in.tree = &tree;
  in.target_logits = &logits;
  in.draft_probs = &q;
  in.sampling = sample_params();
  in.sampling.seed = 42;
  in.root_position = 10;
  const VerifyResult r = RejectionAcceptor().verify(in);
  // p = q everywhere: every draft is accepted (ratio 1) and a bonus is drawn at position 12.
  EXPECT_EQ(r.accepted_nodes.size(), 2u);
  ASSERT_EQ(r.draws.size(), 3u);
  EXPECT_EQ(r.draws[0].position, 10u);
  EXPECT_EQ(r.draws[1].position, 11u);
  EXPECT_EQ(r.draws[2].position, 12u);
  EXPECT_EQ(r.draws[2].purpose, static_cast<uint32_t>(RandomPurpose::sample));
  EXPECT_EQ(r.draws[2].value, uniform(42, 0, 12, RandomPurpose::sample, 0));
}

TEST(Acceptors, RejectBadInput) {
  Matrix logits = Matrix::Zero(2, V);
  const DraftTree tree = DraftTree::chain({1, 2});
  VerifyInput in;
  in.tree = &tree;
  in.target_logits = &logits;
  EXPECT_THROW(MatchAcceptor().verify(in), Error);  // 2 rows for 2 nodes
  const DraftTree bad{{1, 9}, {-1, 0}};
  Matrix ok = Matrix::Zero(3, V);
  in.tree = &bad;
  in.target_logits = &ok;
  EXPECT_THROW(MatchAcceptor().verify(in), Error);  // token 9 outside vocabulary 4
}

}  // namespace
}  // namespace specdec
