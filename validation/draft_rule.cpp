#include "validation/draft_rule.hpp"

#include <algorithm>
#include <map>

#include "reference/core/error.hpp"
#include "traces/batched_trace.hpp"

namespace specdec::validation {

std::vector<int32_t> history_before(const Trace& trace, size_t step) {
  std::vector<int32_t> h = trace.prompt;
  for (size_t s = 0; s < step && s < trace.steps.size(); ++s)
    h.insert(h.end(), trace.steps[s].emitted_tokens.begin(), trace.steps[s].emitted_tokens.end());
  return h;
}

std::vector<RuleStep> rule_drafts(const Trace& trace, const std::function<std::unique_ptr<Proposer>()>& make_proposer,
                                  const std::function<std::unique_ptr<SpeculationPolicy>()>& make_policy,
                                  const GenerationOptions& options, const SamplingParams& sampling) {
  std::vector<RuleStep> out(trace.steps.size());
  if (trace.steps.empty()) return out;
  const std::unique_ptr<Proposer> proposer = make_proposer();
  if (!proposer) throw Error("draft rule: the method has no proposer");
  const std::unique_ptr<SpeculationPolicy> policy = make_policy ? make_policy() : nullptr;
  const int full = proposer->max_depth();
  auto timing = [&](const char* phase, size_t s) {
    const auto it = trace.timing.step_ns.find(phase);
    return it != trace.timing.step_ns.end() && s < it->second.size() ? static_cast<double>(it->second[s]) * 1e-9 : 0.0;
  };
  std::vector<int32_t> history = trace.prompt;
  history.insert(history.end(), trace.steps[0].emitted_tokens.begin(), trace.steps[0].emitted_tokens.end());
  out[0].history = static_cast<int64_t>(trace.prompt.size());
  for (size_t s = 1; s < trace.steps.size(); ++s) {
    RuleStep& r = out[s];
    r.history = static_cast<int64_t>(history.size());
    // As the decoding loop plans a step (reference/decoding/sequence_decoder.cpp).
    StepPlan plan = policy ? policy->plan({static_cast<int>(s) - 1, 1, full}) : StepPlan{full, false, 0};
    plan.depth = std::clamp(plan.depth, 0, full);
    if (plan.depth == 0) {
      r.plain = true;
    } else {
      const int depth = std::min(plan.depth, proposer->max_depth());
      DraftContext ctx;
      ctx.sequence = &history;
      ctx.committed = static_cast<int>(history.size()) - 1;
      ctx.prompt_length = static_cast<int>(trace.prompt.size());
      ctx.max_length = static_cast<int>(trace.prompt.size()) + options.max_new_tokens;
      ctx.sampling = sampling;
      ctx.sequence_id = options.sequence;
      ctx.max_depth = depth < proposer->max_depth() ? depth : 0;
      ctx.stop = plan.stop_rule ? policy.get() : nullptr;
      try {
        r.proposal = proposer->propose(ctx);
      } catch (const std::exception& e) {
        throw Error("the draft rule at step " + std::to_string(s) + ": " + e.what());
      }
      if (r.proposal.tree.size() < plan.min_drafts) r.proposal = Proposal();  // too short: a plain step
    }
    const StepRecord& rec = trace.steps[s];
    if (policy) {  // the policy sees the step as the run went
      const DraftTree tree{rec.draft_tokens, rec.draft_parents};
      specdec::StepOutcome o;
      o.planned_depth = tree.size() > 0 ? plan.depth : 0;
      for (int n = 0; n < tree.size(); ++n) o.drafted_depth = std::max(o.drafted_depth, tree.depth(n));
      o.drafted_nodes = tree.size();
      o.accepted = static_cast<int>(rec.accepted_path.size());
      o.confidences = plan.stop_rule ? &r.proposal.confidences : nullptr;
      o.draft_s = timing("draft", s);
      o.verify_s = timing("verify", s);
      policy->observe(o);
    }
    history.insert(history.end(), rec.emitted_tokens.begin(), rec.emitted_tokens.end());
  }
  return out;
}

std::vector<EarlierResponse> earlier_responses(const BatchedTrace& batch, size_t index) {
  // The batch step each (sequence, step) ran in.
  std::map<std::pair<uint32_t, int64_t>, size_t> ran_in;
  for (size_t t = 0; t < batch.schedule.size(); ++t)
    for (const ScheduledStep& e : batch.schedule[t]) ran_in[{e.sequence, e.step}] = t;
  auto batch_step = [&](size_t q, size_t step) {
    const auto it = ran_in.find({batch.sequences[q].id, static_cast<int64_t>(step)});
    return it == ran_in.end() ? batch.schedule.size() : it->second;
  };
  const Trace& own = batch.sequences.at(index).trace;
  struct Finished {
    size_t batch_step;
    size_t request;
  };
  std::vector<Finished> finished;
  for (size_t q = 0; q < batch.sequences.size(); ++q) {
    const Trace& t = batch.sequences[q].trace;
    if (q == index || t.steps.size() < 2) continue;  // a sequence that never drafted has no response
    finished.push_back({batch_step(q, t.steps.size() - 1), q});
  }
  std::stable_sort(finished.begin(), finished.end(), [](const Finished& a, const Finished& b) { return a.batch_step < b.batch_step; });
  std::vector<EarlierResponse> out;
  for (const Finished& f : finished) {
    const Trace& t = batch.sequences[f.request].trace;
    // Its drafter saw its output up to its last step (the history it last drafted after).
    const auto seen = static_cast<size_t>(t.steps.back().position - static_cast<int64_t>(t.prompt.size()));
    EarlierResponse r;
    r.request = static_cast<int64_t>(f.request);
    r.tokens.assign(t.output.begin(), t.output.begin() + static_cast<std::ptrdiff_t>(std::min(seen, t.output.size())));
    r.before_step = own.steps.size();  // never, unless one of its steps runs after
    for (size_t s = 1; s < own.steps.size(); ++s) {
      if (batch_step(index, s) > f.batch_step) {
        r.before_step = s;
        break;
      }
    }
    out.push_back(std::move(r));
  }
  return out;
}

RuleMatch rule_match(const Proposal& rule) {
  RuleMatch m;
  if (rule.tree.size() == 0) return m;
  m.found = true;
  if (rule.sources.empty()) return m;
  const DraftSource& first = rule.sources.front();
  m.match_length = first.match_length;
  m.copied_from = first.position;
  m.from_responses = first.origin == DraftSource::Origin::responses;
  m.request = first.request;
  if (first.position >= 0 && first.position >= first.match_length) m.match_position = first.position - first.match_length;
  return m;
}

std::optional<size_t> first_rule_difference(const Proposal& rule, const StepRecord& recorded) {
  const size_t n = std::max(rule.tree.tokens.size(), recorded.draft_tokens.size());
  for (size_t i = 0; i < n; ++i) {
    if (i >= rule.tree.tokens.size() || i >= recorded.draft_tokens.size()) return i;
    if (rule.tree.tokens[i] != recorded.draft_tokens[i] || rule.tree.parents[i] != recorded.draft_parents[i]) return i;
  }
  return std::nullopt;
}

std::string draft_list(const std::vector<int32_t>& tokens, const std::vector<int32_t>& parents) {
  std::string s = "[";
  for (size_t i = 0; i < tokens.size(); ++i) s += (i ? " " : "") + std::to_string(tokens[i]);
  s += "]";
  bool chain = true;
  for (size_t i = 0; i < parents.size(); ++i) chain = chain && parents[i] == static_cast<int32_t>(i) - 1;
  if (!chain) {
    s += " (parents";
    for (int32_t p : parents) s += " " + std::to_string(p);
    s += ")";
  }
  return s;
}

namespace {

std::string tokens_at(const std::vector<int32_t>& h, int64_t from, int64_t to) {
  std::string s = "[";
  for (int64_t i = std::max<int64_t>(0, from); i < to && i < static_cast<int64_t>(h.size()); ++i)
    s += (i > std::max<int64_t>(0, from) ? " " : "") + std::to_string(h[static_cast<size_t>(i)]);
  return s + "]";
}

std::string span(int64_t from, int64_t to_inclusive) {
  return from == to_inclusive ? "position " + std::to_string(from) : "positions " + std::to_string(from) + "-" + std::to_string(to_inclusive);
}

}  // namespace

std::string describe_rule(const RuleStep& rule, const std::vector<int32_t>& history) {
  if (rule.plain) return "the speculation policy planned a plain step here, so the rule drafts nothing";
  const RuleMatch m = rule_match(rule.proposal);
  if (!m.found) return "the rule finds no earlier occurrence of the sequence's last tokens and drafts nothing";
  const int64_t L = static_cast<int64_t>(history.size());
  std::string s;
  if (m.match_length > 0) {
    s = "the last " + std::to_string(m.match_length) + " token" + (m.match_length == 1 ? " " : "s ") +
        tokens_at(history, L - m.match_length, L) + " (" + span(L - m.match_length, L - 1) + ") ";
  } else {
    s = "with no suffix matched, ";
  }
  if (m.from_responses) {
    s += (m.match_length > 0 ? "occurred in the response of request " : "it reads the response of request ") + std::to_string(m.request);
    if (m.copied_from >= 0) s += "; it copies from its position " + std::to_string(m.copied_from);
    return s;
  }
  if (m.match_position >= 0) {
    s += "occurred earlier at " + span(m.match_position, m.copied_from - 1) + "; it copies from position " + std::to_string(m.copied_from);
    if (rule.proposal.tree.is_chain()) s += " on: " + tokens_at(history, m.copied_from, m.copied_from + static_cast<int64_t>(rule.proposal.tree.size()));
  } else if (m.copied_from >= 0) {
    s += "matched; it copies from position " + std::to_string(m.copied_from);
  } else {
    s += "matched (the copied position is unknown)";
  }
  return s;
}

}  // namespace specdec::validation
