#include "reference/decoding/batched.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include "reference/core/error.hpp"
#include "reference/decoding/sequence_decoder.hpp"

namespace specdec {

double RequestResult::tpot_s() const {
  const auto n = generation.tokens.size();
  return n >= 2 ? (finished_s - first_token_s) / static_cast<double>(n - 1) : 0.0;
}

double BatchResult::throughput() const {
  std::size_t tokens = 0;
  for (const RequestResult& r : requests) tokens += r.generation.tokens.size();
  return wall_s > 0 ? static_cast<double>(tokens) / wall_s : 0.0;
}

GenerationStats BatchResult::totals() const {
  GenerationStats t;
  auto add = [](std::vector<int>& into, const std::vector<int>& from) {
    if (into.size() < from.size()) into.resize(from.size(), 0);
    for (std::size_t i = 0; i < from.size(); ++i) into[i] += from[i];
  };
  for (const RequestResult& r : requests) {
    const GenerationStats& s = r.generation.stats;
    t.target_forwards += s.target_forwards;
    t.drafter_forwards += s.drafter_forwards;
    t.prefill_ns += s.prefill_ns;
    t.decode_ns += s.decode_ns;
    t.steps += s.steps;
    t.drafted_tokens += s.drafted_tokens;
    t.accepted_tokens += s.accepted_tokens;
    t.emitted_in_steps += s.emitted_in_steps;
    add(t.depth_attempts, s.depth_attempts);
    add(t.depth_accepts, s.depth_accepts);
    add(t.accepted_per_step, s.accepted_per_step);
    add(t.draft_depth_per_step, s.draft_depth_per_step);
  }
  return t;
}

namespace {

// One sequence in flight: its cache, drafter and decoder.
struct Slot {
  std::size_t index = 0;  // into the request queue
  std::unique_ptr<KVCache> cache;
  std::unique_ptr<Proposer> proposer;
  std::unique_ptr<SpeculationPolicy> policy;
  std::unique_ptr<TokenAcceptor> acceptor;
  std::unique_ptr<SequenceDecoder> decoder;
  bool first_token_seen = false;
};

}  // namespace

BatchResult decode_batched(const LanguageModel& target, const std::vector<BatchRequest>& requests,
                           const ProposerFactory& make_proposer, const BatchOptions& options,
                           const std::function<DecodeObserver*(std::size_t)>& observer_for) {
  if (options.max_in_flight < 1) {
    throw Error("batched decoding: max_in_flight must be >= 1 (got " + std::to_string(options.max_in_flight) + ")");
  }
  const ModelConfig& c = target.config();
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const BatchRequest& r = requests[i];
    try {
      checked_capacity(r.prompt.size(), r.max_new_tokens, 0, c.max_position_embeddings);
      r.sampling.validate();
      for (int32_t t : r.prompt) {
        if (t < 0 || t >= c.vocab_size) {
          throw Error("prompt token id " + std::to_string(t) + " outside the vocabulary [0, " +
                      std::to_string(c.vocab_size) + ")");
        }
      }
      if (!(r.arrival_s >= 0.0)) throw Error("arrival time must be >= 0 seconds");
    } catch (const Error& e) {
      throw Error("batched decoding: request " + std::to_string(i) + ": " + e.what());
    }
  }

  const int64_t start_ns = monotonic_ns();
  const std::function<double()> clock =
      options.clock ? options.clock : [start_ns] { return static_cast<double>(monotonic_ns() - start_ns) * 1e-9; };
  const std::function<void(double)> wait_until =
      options.wait_until ? options.wait_until : [&clock](double s) {
        const double now = clock();
        if (s > now) std::this_thread::sleep_for(std::chrono::duration<double>(s - now));
      };

  BatchResult result;
  result.requests.resize(requests.size());
  ForwardGather gather;
  std::vector<Slot> slots;  // in admission order
  std::size_t next = 0;

  while (next < requests.size() || !slots.empty()) {
    // Admit the requests that have arrived, in queue order, while slots are free.
    double now = clock();
    if (slots.empty() && next < requests.size() && requests[next].arrival_s > now) {
      wait_until(requests[next].arrival_s);
      now = clock();
    }
    while (static_cast<int>(slots.size()) < options.max_in_flight && next < requests.size() &&
           requests[next].arrival_s <= now) {
      const BatchRequest& r = requests[next];
      Slot s;
      s.index = next;
      s.proposer = make_proposer ? make_proposer(next, gather) : nullptr;
      GenerationOptions g;
      g.max_new_tokens = r.max_new_tokens;
      g.stop_at_eos = r.stop_at_eos;
      g.sequence = r.sequence;
      s.cache = target.new_cache(decoder_cache_capacity(target, s.proposer.get(), r.prompt.size(), g));
      s.acceptor = default_acceptor(r.sampling);
      DecodeObserver* observer = observer_for ? observer_for(next) : nullptr;
      SpeculationControl control;
      if (s.proposer) {
        if (options.make_policy) s.policy = options.make_policy(next);
        control.policy = s.policy.get();
        control.draft_budget_ns = options.draft_budget_ns;
      }
      s.decoder = std::make_unique<SequenceDecoder>(target, *s.cache, s.proposer.get(), *s.acceptor, r.prompt,
                                                    r.sampling, g, observer, std::move(control));
      result.requests[next].arrival_s = r.arrival_s;
      result.requests[next].admitted_s = std::max(now, r.arrival_s);
      slots.push_back(std::move(s));
      ++next;
    }
    if (slots.empty()) continue;  // the next request has not arrived yet
    result.max_in_flight_seen = std::max(result.max_in_flight_seen, static_cast<int>(slots.size()));

    BatchStep step;
    const int64_t step_start = monotonic_ns();
    step.start_s = clock();

    // 1. Draft for every sequence that needs a draft. Only sequences with a drafter run as
    // gathered tasks (a thread each); sequential ones just set up their one-row verify, and a
    // lone drafter has nothing to batch with.
    std::vector<SequenceDecoder*> drafting;
    const int in_flight = static_cast<int>(slots.size());  // the batch size policies see
    for (Slot& s : slots) {
      if (s.decoder->phase() != SequenceDecoder::Phase::draft) continue;
      if (s.decoder->has_drafter()) {
        drafting.push_back(s.decoder.get());
      } else {
        s.decoder->draft();
      }
    }
    const int batches_before = gather.batches(), forwards_before = gather.forwards();
    if (options.batch_drafts && drafting.size() > 1) {
      std::vector<std::function<void()>> tasks;
      for (SequenceDecoder* d : drafting) tasks.emplace_back([d, in_flight] { d->draft(in_flight); });
      gather.run(tasks);
    } else {
      for (SequenceDecoder* d : drafting) d->draft(in_flight);
    }
    step.drafter_batches = gather.batches() - batches_before;
    step.drafter_forwards = gather.forwards() - forwards_before;
    const int64_t verify_start = monotonic_ns();
    step.draft_s = static_cast<double>(verify_start - step_start) * 1e-9;

    // 2. One target forward over every sequence's rows.
    std::vector<BatchEntry> batch;
    for (Slot& s : slots) {
      const ForwardRequest& req = s.decoder->request();
      batch.push_back({s.cache.get(), &req});
      step.rows += static_cast<int>(req.tokens.size());
      step.entries.push_back({s.index, static_cast<int>(req.tokens.size())});
      if (s.decoder->phase() == SequenceDecoder::Phase::prefill) ++step.prefills;
    }
    step.sequences = static_cast<int>(batch.size());
    std::vector<ForwardResult> out = target.forward_batch(batch);
    const int64_t forward_ns = monotonic_ns() - verify_start;
    step.verify_s = static_cast<double>(forward_ns) * 1e-9;

    // 3. Accept, compact and emit per sequence; retire the finished ones.
    for (std::size_t i = 0; i < slots.size(); ++i) slots[i].decoder->absorb(std::move(out[i]), forward_ns);
    result.steps.push_back(step);
    // Tokens reach the user when the step ends (as engines stream them).
    const double end = clock();
    std::vector<Slot> still;
    for (Slot& s : slots) {
      RequestResult& rr = result.requests[s.index];
      if (!s.first_token_seen && !s.decoder->result().tokens.empty()) {
        s.first_token_seen = true;
        rr.first_token_s = end;
      }
      if (s.decoder->done()) {
        rr.generation = s.decoder->result();
        rr.finished_s = end;
        if (rr.generation.tokens.empty()) rr.first_token_s = end;  // max_new_tokens 0
        if (options.on_finished) options.on_finished(s.index, rr);
      } else {
        still.push_back(std::move(s));
      }
    }
    slots = std::move(still);
  }
  result.wall_s = clock();
  return result;
}

}  // namespace specdec
