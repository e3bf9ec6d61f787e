#include "validation/tolerance_policy.hpp"

#include <cstdio>

namespace specdec::validation {

namespace {

std::string g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

const TolerancePolicy& TolerancePolicy::defaults() {
  static const TolerancePolicy p;
  return p;
}

std::vector<PolicyRow> policy_table(const TolerancePolicy& p) {
  return {
      {"token ids: emitted tokens, bonus token, draft tokens, tree parents, accepted path", "exact", "0",
       "integers; any difference changes the output or the work done"},
      {"acceptance decisions and the nodes they judged", "exact", "0",
       "the acceptance rule is the same code on every backend; only its inputs can differ"},
      {"acceptance uniforms and Philox counters", "exact (bitwise)", "0",
       "counter-based randomness: a pure function of (seed, sequence, position, purpose, index)"},
      {"positions, number of steps, stop reason", "exact", "0", "they follow from the tokens"},
      {"target logits, full rows", "NMSE per row", g(p.logits_nmse),
       "fp32 reductions in another order differ by rounding only (NMSE far below 1e-9); a wrong kernel gives 1e-2 or more"},
      {"target logits, top-k trace rows", "NMSE over the recorded top-k entries", g(p.logits_nmse),
       "the same bound, on what the trace kept"},
      {"top-k membership, top-k trace rows", "no logit outside the recorded top-k above the k-th value by more than",
       g(p.near_tie_logit_margin), "a token the reference ranked lower cannot overtake it beyond a near-tie"},
      {"logsumexp, top-k trace rows", "absolute difference", g(p.logsumexp_abs), "checks the mass outside the top-k"},
      {"target hidden states (final, aux) fed to drafters; live runs", "NMSE per row", g(p.hidden_nmse),
       "what EAGLE heads consume; traces do not store them"},
      {"draft LM logits; live runs", "NMSE per row", g(p.logits_nmse), "the draft LM runs on the backend under test too"},
      {"sampled draft distributions q", "max absolute difference", g(p.draft_probability_abs),
       "q comes from the drafter's logits after softmax; rounding moves it by ~1e-7"},
      {"near-tie, greedy or coupled choice", "excused if the reference's top-two margin is below (logit units; coupled: of logit + T·Gumbel)",
       g(p.near_tie_logit_margin),
       "flipping needs a logit error of half the margin; the logits bound allows errors of ~1e-3 of the row's RMS"},
      {"near-tie, sampled decision (acceptance test, residual or bonus draw, sequential sample)",
       "excused if the reference's uniform u lies closer than this to the boundary it was tested against (probability units)", g(p.near_tie_probability_margin),
       "a logit error e moves a probability p by about p·e"},
      {"drafter rows of a candidate trace: features fed in, hidden states returned", "NMSE per row", g(p.hidden_nmse),
       "the drafter's inputs and outputs, recorded by the engine, against the reference drafter's"},
      {"drafter rows of a candidate trace: logits returned", "NMSE per row", g(p.logits_nmse), "as the target's logits"},
      {"draft divergence", "excused as a drafter near-tie if every drafter input compared so far is within tolerance", "-",
       "the drafting code is the same on both sides, so only inputs within tolerance reach it"},
      {"draft divergence, candidate trace", "excused as a drafter near-tie if the trace's drafter rows of the step agree within tolerance and, for greedy chains, the reference drafter's margin is below",
       g(p.near_tie_logit_margin), "without the rows a changed draft cannot be told from a drafter bug with self-consistent logits"},
      {"near-ties per run", "at most", std::to_string(p.max_near_ties),
       "rounding explains a few flips; many mean a systematic difference"},
  };
}

std::string policy_markdown(const TolerancePolicy& p) {
  std::string s = "| quantity | rule | bound | why |\n|---|---|---|---|\n";
  for (const PolicyRow& r : policy_table(p)) s += "| " + r.quantity + " | " + r.rule + " | " + r.bound + " | " + r.why + " |\n";
  return s;
}

}  // namespace specdec::validation
