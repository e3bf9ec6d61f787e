#include "runtime/batch_report.hpp"

#include <algorithm>
#include <map>

#include "runtime/method_runner.hpp"
#include "runtime/speculation_report.hpp"

namespace specdec {

using json = nlohmann::json;

namespace {

double percentile(const std::vector<double>& sorted, double q) {
  const double rank = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(rank);
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - static_cast<double>(lo));
}

}  // namespace

Distribution distribution(std::vector<double> v) {
  Distribution d;
  d.n = v.size();
  if (v.empty()) return d;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  d.mean = sum / static_cast<double>(v.size());
  d.p50 = percentile(v, 0.50);
  d.p90 = percentile(v, 0.90);
  d.p99 = percentile(v, 0.99);
  return d;
}

json to_json(const Distribution& d) {
  return {{"n", d.n}, {"mean", d.mean}, {"p50", d.p50}, {"p90", d.p90}, {"p99", d.p99}};
}

json request_json(std::size_t index, const BatchRequest& request, const RequestResult& r, const text::Tokenizer* tokenizer) {
  const GenerationResult& g = r.generation;
  const GenerationStats& s = g.stats;
  json j = {{"request", index},
            {"sequence", request.sequence},
            {"prompt_length", request.prompt.size()},
            {"output_tokens", g.tokens},
            {"generated_tokens", g.tokens.size()},
            {"stop_reason", g.stop_reason},
            {"steps", s.steps},
            {"drafted_tokens", s.drafted_tokens},
            {"accepted_tokens", s.accepted_tokens},
            {"acceptance_length", s.steps ? s.acceptance_length() : 1.0},
            {"acceptance_by_position", s.acceptance_by_depth()},
            {"accepted_per_step", s.accepted_per_step},
            {"mean_draft_depth", s.mean_draft_depth()},
            {"draft_depth_per_step", s.draft_depth_per_step},
            {"fallbacks", fallbacks_json(g.fallbacks)},
            {"arrival_s", r.arrival_s},
            {"timing",
             {{"admitted_s", r.admitted_s},
              {"first_token_s", r.first_token_s},
              {"finished_s", r.finished_s},
              {"ttft_s", r.ttft_s()},
              {"tpot_s", r.tpot_s()},
              {"queue_s", r.queue_s()}}}};
  if (tokenizer) j["output_text"] = tokenizer->decode(g.tokens);
  return j;
}

json batch_summary_json(const BatchResult& result, const BatchSetup& setup) {
  const DecodeArgs& a = *setup.args;
  const GenerationStats t = result.totals();
  std::size_t tokens = 0;
  std::map<std::string, int> stops;
  std::vector<double> ttft, tpot, queue, request_depths;
  std::size_t fallback_count = 0;
  for (const RequestResult& r : result.requests) {
    tokens += r.generation.tokens.size();
    request_depths.push_back(r.generation.stats.mean_draft_depth());
    fallback_count += r.generation.fallbacks.size();
    ++stops[r.generation.stop_reason];
    ttft.push_back(r.ttft_s());
    queue.push_back(r.queue_s());
    if (r.generation.tokens.size() >= 2) tpot.push_back(r.tpot_s());  // TPOT needs two tokens
  }
  int64_t rows = 0, sequences = 0, drafter_batches = 0;
  double draft_s = 0, verify_s = 0;
  for (const BatchStep& s : result.steps) {
    rows += s.rows;
    sequences += s.sequences;
    drafter_batches += s.drafter_batches;
    draft_s += s.draft_s;
    verify_s += s.verify_s;
  }
  const double steps = static_cast<double>(result.steps.size());
  const auto per_step = [&](double x) { return steps > 0 ? x / steps : 0.0; };
  const double requests = static_cast<double>(result.requests.size());
  return {
      {"model", a.model},
      {"backend", a.backend},
      {"method", method_json(a)},
      {"sampling", sampling_params(a)},
      {"max_new_tokens", a.max_new_tokens},
      {"ignore_eos", a.ignore_eos},
      {"concurrency", setup.concurrency},
      {"rate", setup.rate ? json(*setup.rate) : json(nullptr)},
      {"requests", result.requests.size()},
      {"generated_tokens", tokens},
      {"stop_reasons", stops},
      // Acceptance pooled over requests: AL = emitted / verification steps (bonus included).
      {"sequence_steps", t.steps},
      {"drafted_tokens", t.drafted_tokens},
      {"accepted_tokens", t.accepted_tokens},
      {"acceptance_length", t.steps ? t.acceptance_length() : 1.0},
      {"acceptance_by_position", t.acceptance_by_depth()},
      {"depth_attempts", t.depth_attempts},
      {"depth_accepts", t.depth_accepts},
      {"accepted_per_step", t.accepted_per_step},
      // The speculation policy of every request, and the depth drafted per step pooled over them
      // (each request's own mean is in its line).
      {"policy", a.policy.to_json()},
      {"draft_budget_ms", a.draft_budget_ms},
      {"mean_draft_depth", t.mean_draft_depth()},
      {"draft_depth_per_step", t.draft_depth_per_step},
      {"request_mean_draft_depth", to_json(distribution(request_depths))},
      {"fallbacks", fallback_count},
      // The batched loop: one target forward_batch per step over every sequence in flight.
      {"steps", result.steps.size()},
      {"rows_per_step", per_step(static_cast<double>(rows))},
      {"sequences_per_step", per_step(static_cast<double>(sequences))},
      {"max_in_flight_seen", result.max_in_flight_seen},
      {"drafter_forwards", t.drafter_forwards},
      {"drafter_batches", drafter_batches},
      {"timing",
       {{"wall_s", result.wall_s},
        {"throughput_tok_s", result.throughput()},
        {"throughput_req_s", result.wall_s > 0 ? requests / result.wall_s : 0.0},
        {"ttft_s", to_json(distribution(ttft))},
        {"tpot_s", to_json(distribution(tpot))},
        {"queue_s", to_json(distribution(queue))},
        {"draft_s_per_step", per_step(draft_s)},
        {"verify_s_per_step", per_step(verify_s)}}},
  };
}

}  // namespace specdec
