#pragma once
// Options and results shared by every decoding algorithm.
#include <cstdint>
#include <string>
#include <vector>

namespace specdec {

struct GenerationOptions {
  int max_new_tokens = 64;
  bool stop_at_eos = true;
  uint32_t sequence = 0;    // sequence id in the random counters (batch slot)
  int cache_capacity = 0;   // 0 = prompt length + max_new_tokens (+ method headroom)
};

// The positions a run may occupy: prompt + max_new_tokens + `headroom` (the draft slots a method
// adds beyond the sequence), computed without overflow. Throws a specdec::Error when the prompt is
// empty, max_new_tokens is negative, the sequence (prompt + max_new_tokens) would pass the model's
// context length (`context`, max_position_embeddings; 0 = unknown, unchecked) or the total passes
// kMaxPositions. Every decoding loop sizes its caches with it.
inline constexpr int64_t kMaxPositions = int64_t{1} << 24;  // 16 Mi: far past any Llama context
int checked_capacity(std::size_t prompt_len, int max_new_tokens, int headroom, int context);

struct GenerationStats {
  int target_forwards = 0;   // prefill counts as one
  int drafter_forwards = 0;
  int64_t prefill_ns = 0;
  int64_t decode_ns = 0;     // everything after the prefill
  // Steps after the prefill: verification steps, or for sequential decoding its decode forwards
  // (one token each, so its AL is 1.00). The draft counts below are zero for sequential decoding.
  int steps = 0;
  int drafted_tokens = 0;    // draft nodes proposed
  int accepted_tokens = 0;   // draft nodes accepted
  int emitted_in_steps = 0;  // tokens emitted by steps (accepted + one each), before cuts
  // Per draft depth d (index d − 1): steps whose draft reached depth d with every shallower
  // draft accepted, and how many of those accepted a node at depth d.
  std::vector<int> depth_attempts, depth_accepts;
  // Speculative steps by how many draft nodes they accepted: accepted_per_step[n] steps accepted n
  // (vLLM's per-request acceptance histogram). Empty for sequential decoding.
  std::vector<int> accepted_per_step;
  // Speculative steps by the depth they drafted to: draft_depth_per_step[d] steps drafted d deep
  // (0: a plain step, chosen by the speculation policy or after every drafter failed). Empty for
  // sequential decoding.
  std::vector<int> draft_depth_per_step;

  // Acceptance length: tokens emitted per verification step, counting the bonus/correction token
  // (plain decoding = 1.00). 0 when no step ran.
  double acceptance_length() const;
  // Conditional acceptance rate at draft depth d (1-based): accepts / attempts.
  std::vector<double> acceptance_by_depth() const;
  // Mean depth drafted per speculative step (plain steps count 0); 0 when none ran.
  double mean_draft_depth() const;
};

// A drafter switched off during a run (SpeculationControl): the output is unchanged, the cost is not.
struct DrafterFallback {
  int step = 0;              // the decoding step it failed in (1-based, as GenerationStats::steps)
  std::string drafter;       // Proposer::name()
  std::string reason;        // "threw: ...", "took 12.3 ms, over the 10 ms budget"
  std::string next;          // the drafter used from then on, or "plain decoding"
};

struct GenerationResult {
  std::vector<int32_t> tokens;      // generated tokens only (the prompt excluded)
  std::string stop_reason;          // "max_tokens" | "eos"
  GenerationStats stats;
  std::vector<DrafterFallback> fallbacks;  // in order; empty when every drafter held

  // Decode speed: tokens produced by decode forwards (all but the first, which the prefill gives)
  // per second of decode time. 0 when fewer than two tokens were generated.
  double decode_tokens_per_second() const;
};

}  // namespace specdec
