#pragma once
// Batched speculative decoding with continuous batching: a queue of requests, up to
// max_in_flight sequences decoding at once, a finished sequence's slot taken by the next request
// that has arrived (its prefill joins the next step). Each step
//   1. drafts for every sequence that needs a draft (their drafter forwards gathered into one
//      forward_batch per drafter model per round, forward_gather.hpp),
//   2. runs ONE target forward_batch over every sequence's rows: the new ones' prompts and the
//      others' [pending, drafts...] (ragged: each its own token count, tree mask, positions, cache),
//   3. accepts, compacts and emits per sequence (SequenceDecoder, as when decoding alone).
// Each sequence's tokens, logits, decisions and random draws are bitwise those of decoding it
// alone with the same sequence id, whatever the batch size, composition, order, arrival times and
// the other sequences' methods (the tests check this on every backend).
//
// Terms (as serving engines report them): TTFT = first token − arrival; queueing delay =
// admission − arrival; TPOT = (finish − first token) / (tokens − 1); throughput = generated tokens
// of all requests / wall time of the run.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "reference/acceptance/acceptor.hpp"
#include "reference/decoding/decode_observer.hpp"
#include "reference/decoding/forward_gather.hpp"
#include "reference/decoding/generation.hpp"
#include "reference/drafting/proposer.hpp"
#include "reference/model/language_model.hpp"
#include "reference/policies/speculation_policy.hpp"
#include "reference/sampling/sampling_params.hpp"

namespace specdec {

struct BatchRequest {
  std::vector<int32_t> prompt;
  int max_new_tokens = 64;
  SamplingParams sampling;
  bool stop_at_eos = true;
  // The sequence id in the random counters: the request draws what decoding it alone with
  // GenerationOptions::sequence = this id draws.
  uint32_t sequence = 0;
  // Seconds after the run starts at which the request arrives (0: at once). Requests are admitted
  // in queue order, each once it has arrived and a slot is free.
  double arrival_s = 0.0;
};

// What a batched run reports besides each request's tokens.
struct RequestResult {
  GenerationResult generation;
  double arrival_s = 0, admitted_s = 0, first_token_s = 0, finished_s = 0;  // seconds from the run's start
  double ttft_s() const { return first_token_s - arrival_s; }
  double queue_s() const { return admitted_s - arrival_s; }
  // 0 with fewer than two tokens.
  double tpot_s() const;
};

struct BatchOptions {
  int max_in_flight = 8;  // B: sequences decoding at once
  // Gather the drafter forwards of all sequences into forward_batch calls (false: each sequence
  // drafts alone; the output is the same, only the cost differs).
  bool batch_drafts = true;
  // The clock arrivals are measured on, in seconds from the run's start, and how to wait for the
  // next arrival when nothing is in flight. Defaults: the monotonic wall clock and a sleep. Tests
  // pass a clock of their own (e.g. counting steps) to make the composition reproducible.
  std::function<double()> clock;
  std::function<void(double)> wait_until;
  // Called once per request as it finishes (in finishing order, with its index in the queue), so
  // a caller can write each result out while the run goes on instead of holding them to the end.
  std::function<void(std::size_t, const RequestResult&)> on_finished;
  // The speculation policy of request `index` (null function or result: the method's whole shape
  // every step). Policies see the step's batch size (sequences in flight).
  std::function<std::unique_ptr<SpeculationPolicy>(std::size_t)> make_policy;
  // A proposal slower than this switches that sequence's drafter off (0: no budget). In a batch a
  // proposal's time includes waiting for the drafter forwards it shares with other sequences.
  int64_t draft_budget_ns = 0;
};

// Makes the proposer of request `index` on drafters wrapped by `gather` (gather.wrap(draft_lm),
// gather.wrap(head)); null: the request decodes sequentially.
using ProposerFactory = std::function<std::unique_ptr<Proposer>(std::size_t index, ForwardGather& gather)>;

// One step of the batched loop.
struct BatchStep {
  double start_s = 0;     // from the run's start
  double draft_s = 0;     // drafting of every sequence that drafted
  double verify_s = 0;    // the target's forward_batch
  int sequences = 0;      // entries of the target forward_batch
  int prefills = 0;       // of which prompts joining
  int rows = 0;           // tokens the target forward_batch processed
  int drafter_batches = 0;   // forward_batch calls of drafters
  int drafter_forwards = 0;  // forwards they held
  // The target forward_batch's entries in order: the request (its queue index) and the tokens it
  // fed (its prompt, or the pending token + its draft nodes). What batched traces record.
  struct Entry {
    std::size_t request = 0;
    int rows = 0;
  };
  std::vector<Entry> entries;
};

struct BatchResult {
  std::vector<RequestResult> requests;  // in request order
  std::vector<BatchStep> steps;
  double wall_s = 0;
  int max_in_flight_seen = 0;
  // Generated tokens of every request per second of the run.
  double throughput() const;
  // Aggregated over requests (sums of their GenerationStats; AL = 1 + accepted / steps).
  GenerationStats totals() const;
};

// Checks every request (prompt, sampling, capacity against the target's context) before running,
// naming the request. `observer_for(index)` may give a DecodeObserver per request (null: none).
BatchResult decode_batched(const LanguageModel& target, const std::vector<BatchRequest>& requests,
                           const ProposerFactory& make_proposer, const BatchOptions& options,
                           const std::function<DecodeObserver*(std::size_t)>& observer_for = nullptr);

}  // namespace specdec
