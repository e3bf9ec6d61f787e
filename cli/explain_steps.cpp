#include "cli/explain_steps.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "reference/core/error.hpp"
#include "reference/sampling/counter_rng.hpp"
#include "reference/sampling/sampler.hpp"

namespace specdec::cli {

namespace {

void check(bool ok, const std::string& what) {
  if (!ok) throw Error("explain: the replayed acceptance disagrees with the acceptor's record (" + what + ")");
}

// Indices of the `n` largest entries of p, ties to the lower index.
std::vector<int32_t> top_indices(const std::vector<double>& p, int n) {
  std::vector<int32_t> idx(p.size());
  std::iota(idx.begin(), idx.end(), 0);
  const size_t k = std::min<size_t>(static_cast<size_t>(n), idx.size());
  std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(),
                    [&](int32_t a, int32_t b) { return p[a] != p[b] ? p[a] > p[b] : a < b; });
  idx.resize(k);
  return idx;
}

std::vector<ProbEntry> top_entries(const std::vector<double>& p, const std::vector<double>* q, int n) {
  std::vector<ProbEntry> out;
  for (int32_t t : top_indices(p, n)) {
    if (p[t] <= 0) break;
    out.push_back({t, p[t], q && !q->empty() ? (*q)[t] : kNone});
  }
  return out;
}

void normalise(std::vector<double>& p) {
  double s = 0;
  for (double v : p) s += v;
  if (s > 0)
    for (double& v : p) v /= s;
}

// Coupled sampling's score of every token the sampler may pick (−inf for the others).
std::vector<double> gumbel_scores(const float* logits, int V, const std::vector<double>& p, const SamplingParams& s,
                                  uint32_t sequence, uint32_t position) {
  std::vector<double> score(V, -INFINITY);
  for (int i = 0; i < V; ++i)
    if (p[i] > 0) score[i] = static_cast<double>(logits[i]) / s.temperature + gumbel(s.seed, sequence, position, static_cast<uint32_t>(i));
  return score;
}

std::vector<ScoreEntry> top_scores(const float* logits, const std::vector<double>& score, const std::vector<double>& p,
                                   const SamplingParams& s, int n) {
  std::vector<ScoreEntry> out;
  for (int32_t t : top_indices(score, n)) {
    if (!std::isfinite(score[t])) break;
    out.push_back({t, score[t], score[t] - static_cast<double>(logits[t]) / s.temperature, p[t]});
  }
  return out;
}

double or_none(double x) { return std::isfinite(x) ? x : kNone; }

// Where the step's drafts were copied from, located in the history they were drafted after.
DraftSources draft_sources(const std::vector<DraftSource>& nodes, const std::vector<int32_t>& history) {
  DraftSources d;
  d.nodes = nodes;
  d.history = static_cast<int64_t>(history.size());
  if (nodes.empty()) return d;
  const DraftSource& first = nodes.front();
  const int64_t L = d.history;
  d.origin = first.origin == DraftSource::Origin::responses ? "responses" : "context";
  d.match_length = first.match_length;
  d.copied_from = first.position;
  d.request = first.origin == DraftSource::Origin::responses ? first.request : -1;
  const int64_t n = std::min<int64_t>(first.match_length, L);
  d.suffix.assign(history.end() - n, history.end());
  if (first.origin != DraftSource::Origin::context || first.position < first.match_length || first.position >= L) return d;
  d.match_start = first.position - first.match_length;
  // The copied positions of this sequence near the occurrence, then a few tokens either side.
  int64_t last = first.position;
  for (const DraftSource& s : nodes) {
    if (s.origin == DraftSource::Origin::context && s.position > last && s.position < L && s.position <= first.position + 16) last = s.position;
  }
  constexpr int64_t kAround = 4;
  const int64_t from = std::max<int64_t>(0, d.match_start - kAround), to = std::min<int64_t>(L, last + 1 + kAround);
  for (int64_t p = from; p < to; ++p) {
    std::string role = p < d.match_start ? "before" : p < first.position ? "match" : "after";
    for (const DraftSource& s : nodes)
      if (s.origin == DraftSource::Origin::context && s.position == p) role = "copied";
    d.window.push_back({history[static_cast<size_t>(p)], p, role});
  }
  return d;
}

}  // namespace

std::vector<double> display_probabilities(const float* logits, int vocab, const SamplingParams& sampling) {
  SamplingParams p = sampling;
  if (p.mode == SamplingParams::Mode::greedy) {
    p = SamplingParams{};
    p.mode = SamplingParams::Mode::sample;
  }
  return probabilities(logits, vocab, p);
}

ExplainRecorder::ExplainRecorder(ExplainRun& run, const SamplingParams& sampling, uint32_t sequence,
                                 std::function<bool(int32_t)> is_eos, int top_n)
    : run_(run), sampling_(sampling), sequence_(sequence), is_eos_(std::move(is_eos)), top_n_(top_n) {
  run_.sampling = sampling;
}

void ExplainRecorder::on_prefill(const std::vector<int32_t>& prompt, int64_t) {
  run_.prompt = prompt;
  if (on_prompt) on_prompt();
}

void ExplainRecorder::on_sequential_step(const SequentialStep& s) {
  StepRecord r;
  r.index = s.index;
  r.sequential = true;
  r.position = s.position;
  r.pending = -1;
  const std::vector<double> p = display_probabilities(s.logits, s.vocab_size, sampling_);
  Point pt;
  pt.node = -1;
  pt.depth = 1;
  pt.position = s.position;
  pt.reached = true;
  pt.top = top_entries(p, nullptr, top_n_);
  r.points.push_back(pt);
  FinalToken& f = r.final;
  f.token = s.token;
  f.kind = std::string("target");  // not = "…": GCC 12 warns falsely (-Wrestrict)
  f.position = s.position;
  f.p = p[s.token];
  const uint32_t pos = static_cast<uint32_t>(s.position);
  switch (sampling_.mode) {
    case SamplingParams::Mode::greedy:
      f.from = std::string("argmax");
      break;
    case SamplingParams::Mode::sample:
      f.from = std::string("p");
      f.u = uniform(sampling_.seed, sequence_, pos, RandomPurpose::sample, 0);
      f.distribution = pt.top;
      check(sample_from(p, f.u) == s.token, "sequential sample");
      break;
    case SamplingParams::Mode::coupled: {
      f.from = std::string("gumbel-argmax");
      const std::vector<double> score = gumbel_scores(s.logits, s.vocab_size, p, sampling_, sequence_, pos);
      f.score = score[s.token];
      f.scores = top_scores(s.logits, score, p, sampling_, top_n_);
      break;
    }
  }
  r.emitted = {s.token};
  r.produced = 1;
  r.drafter_forwards = 0;
  r.target_rows = s.index == 0 ? static_cast<int>(run_.prompt.size()) : 1;  // the prefill reads the whole prompt
  r.target_ns = s.step_ns;
  finish_step(std::move(r));
}

void ExplainRecorder::on_speculative_step(const SpeculativeStep& s) {
  const DraftTree& tree = *s.tree;
  const VerifyResult& v = *s.verify;
  const Matrix& L = *s.target_logits;
  const int V = static_cast<int>(L.cols());
  const int N = tree.size();
  static const std::vector<std::vector<double>> no_q;
  const std::vector<std::vector<double>>& Q = s.draft_probs ? *s.draft_probs : no_q;
  const bool deterministic = Q.empty();
  auto logits = [&](int row) { return L.data() + static_cast<std::ptrdiff_t>(row) * L.cols(); };
  auto q_row = [&](int row) -> const std::vector<double>* { return deterministic || Q[row].empty() ? nullptr : &Q[row]; };

  StepRecord r;
  r.index = s.index;
  r.position = s.root_position;
  r.pending = s.pending_token;
  r.tokens = tree.tokens;
  r.parents = tree.parents;
  r.chain = tree.is_chain();
  for (int n = 0; n < N; ++n) r.depths.push_back(tree.depth(n));
  r.status.assign(N, "unreached");
  std::vector<std::vector<double>> shown(N + 1);
  for (int row = 0; row <= N; ++row) {
    Point pt;
    pt.node = row - 1;
    pt.depth = row == 0 ? 1 : tree.depth(row - 1) + 1;
    pt.position = s.root_position + pt.depth - 1;
    shown[row] = display_probabilities(logits(row), V, sampling_);
    pt.top = top_entries(shown[row], q_row(row), top_n_);
    r.points.push_back(std::move(pt));
  }

  // The test of child c at point `row`: its token, p and (for a draft distribution) q.
  auto node_test = [&](int row, int c) {
    NodeTest t;
    t.node = c;
    t.token = tree.tokens[c];
    t.p = shown[row][t.token];
    t.q = q_row(row) ? (*q_row(row))[t.token] : kNone;
    return t;
  };

  size_t dec = 0, draw = 0;
  int point = -1;
  FinalToken& f = r.final;
  const bool sample = sampling_.mode == SamplingParams::Mode::sample;
  for (;;) {
    const int row = point + 1;
    Point& pt = r.points[row];
    pt.reached = true;
    const uint32_t position = static_cast<uint32_t>(pt.position);
    const std::vector<int> children = tree.children(point);
    int next = -1;
    if (sample) {
      std::vector<double> p = shown[row];  // sample mode: the sampling distribution itself
      std::vector<double> q;
      if (q_row(row)) q = *q_row(row);
      if (!deterministic && !children.empty()) check(!q.empty(), "a point with children has no draft distribution");
      std::vector<int32_t> removed;
      for (int c : children) {
        const int32_t x = tree.tokens[c];
        NodeTest t = node_test(row, c);
        t.removed = removed;
        t.p_used = p[x];
        t.q_used = q.empty() ? kNone : q[x];
        const double ratio = deterministic ? p[x] : (q[x] > 0 ? p[x] / q[x] : 1.0);
        t.accept_prob = std::min(1.0, ratio);
        check(dec < v.decisions.size() && v.decision_nodes[dec] == c, "decision order");
        check(dec < v.accept_probs.size() && v.accept_probs[dec] == t.accept_prob, "acceptance probability");
        check(draw < v.draws.size(), "uniform draws");
        t.u = v.draws[draw++].value;
        t.accepted = v.decisions[dec++] != 0;
        check((t.u < ratio) == t.accepted, "accept decision");
        r.status[c] = t.accepted ? "accepted" : "rejected";
        pt.tests.push_back(t);
        if (t.accepted) {
          next = c;
          break;
        }
        removed.push_back(x);
        if (deterministic) {
          p[x] = 0.0;
        } else {
          std::vector<double> residual(V);
          double mass = 0;
          for (int k = 0; k < V; ++k) mass += residual[k] = std::max(0.0, p[k] - q[k]);
          if (mass > 0) p = std::move(residual);
          q[x] = 0.0;
          normalise(q);
        }
        normalise(p);
      }
      if (next < 0) {
        f.kind = children.empty() ? "bonus" : "correction";
        f.from = children.empty() ? "p" : "residual";
        f.point = point;
        f.position = pt.position;
        check(draw < v.draws.size(), "final uniform");
        f.u = v.draws[draw++].value;
        f.token = v.emitted.back();
        f.p = p[f.token];
        f.distribution = top_entries(p, nullptr, top_n_);
        check(sample_from(p, f.u) == f.token, "final token");
        break;
      }
    } else {
      const float* lg = logits(row);
      const int32_t choice = sample_token(lg, V, sampling_, sequence_, position);
      std::vector<double> score;
      if (sampling_.mode == SamplingParams::Mode::coupled) {
        score = gumbel_scores(lg, V, probabilities(lg, V, sampling_), sampling_, sequence_, position);
      }
      for (int c : children) {
        const int32_t x = tree.tokens[c];
        NodeTest t = node_test(row, c);
        t.choice = choice;
        t.choice_p = shown[row][choice];
        if (!score.empty()) {
          t.score = or_none(score[x]);
          t.choice_score = score[choice];
        }
        t.accepted = x == choice;
        check(dec < v.decisions.size() && v.decision_nodes[dec] == c && (v.decisions[dec] != 0) == t.accepted, "match decision");
        ++dec;
        r.status[c] = t.accepted ? "accepted" : "rejected";
        pt.tests.push_back(t);
        if (t.accepted) {
          next = c;
          break;
        }
      }
      if (next < 0) {
        f.kind = children.empty() ? "bonus" : "correction";
        f.from = score.empty() ? "argmax" : "gumbel-argmax";
        f.point = point;
        f.position = pt.position;
        f.token = choice;
        f.p = shown[row][choice];
        check(choice == v.emitted.back(), "final token");
        if (!score.empty()) {
          f.score = score[choice];
          f.scores = top_scores(lg, score, probabilities(lg, V, sampling_), sampling_, top_n_);
        }
        break;
      }
    }
    point = next;
  }
  check(dec == v.decisions.size(), "number of decisions");

  r.emitted = s.emitted;
  r.produced = static_cast<int>(v.emitted.size());
  if (r.emitted.size() < v.emitted.size()) {
    r.cut = !r.emitted.empty() && is_eos_ && is_eos_(r.emitted.back()) ? "eos" : "max-new-tokens";
    for (size_t i = r.emitted.size(); i < v.accepted_nodes.size(); ++i) r.status[v.accepted_nodes[i]] = "discarded";
  }
  r.drafter_forwards = s.drafter_forwards;
  r.target_rows = static_cast<int>(L.rows());
  r.draft_ns = s.draft_ns;
  r.target_ns = s.verify_ns;
  if (s.sources && !s.sources->empty()) {
    // The history the drafts were copied from: the prompt and the output before this step.
    std::vector<int32_t> history = run_.prompt;
    for (const StepRecord& earlier : run_.steps) history.insert(history.end(), earlier.emitted.begin(), earlier.emitted.end());
    r.sources = draft_sources(*s.sources, history);
  }
  finish_step(std::move(r));
}

void ExplainRecorder::finish_step(StepRecord r) {
  const StepRecord* prev = run_.steps.empty() ? nullptr : &run_.steps.back();
  r.total_tokens = (prev ? prev->total_tokens : 0) + static_cast<int>(r.emitted.size());
  r.total_target_forwards = (prev ? prev->total_target_forwards : 0) + 1;  // the prefill, then one per step
  r.total_drafter_forwards = (prev ? prev->total_drafter_forwards : 0) + r.drafter_forwards;
  r.full_steps = prev ? prev->full_steps : 0;
  r.full_step_tokens = prev ? prev->full_step_tokens : 0;
  if (!r.sequential && r.complete()) {
    ++r.full_steps;
    r.full_step_tokens += r.produced;
    run_.drafted_full += static_cast<int>(r.tokens.size());
    for (const std::string& st : r.status) run_.accepted_full += st == "accepted";
  }
  run_.steps.push_back(std::move(r));
  if (on_step) on_step(run_.steps.back());
}

void ExplainRecorder::on_finish(const std::vector<int32_t>& output, const std::string& stop_reason) {
  run_.output = output;
  run_.stop_reason = stop_reason;
  if (on_done) on_done();
}

}  // namespace specdec::cli
