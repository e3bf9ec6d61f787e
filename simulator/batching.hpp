#pragma once
// Batching with ragged acceptance: sequences in one batch accept different numbers of drafts at
// every step, so they finish after different numbers of steps.
//
//   static      B sequences start together and the batch runs until its slowest sequence has
//               emitted output_len tokens (finished sequences keep their slot). Steps to emit N
//               tokens are a sum of per-step token counts (mean μ, variance σ²): about
//               (N + o)/μ with variance N·σ²/μ³ (renewal theory; o = (E[X²] − μ)/(2μ) is the mean
//               overshoot of the last step), so the batch runs E[max of B] ≈
//               (N + o)/μ + e_B·√(N·σ²/μ³) steps, e_B the expected maximum of B standard normals.
//               Sequential decoding has σ = 0: no raggedness.
//   continuous  C sequences are always in flight (concurrency C; a finished request is replaced at
//               once). A step emits C·μ tokens on average and carries the prefills of the
//               C·μ/N requests that replace finished ones (prefill_seconds_per_prompt each).
//
// Under an open load (requests arriving at λ per second, as a capacity plan's replica sees them)
// the prompts a step carries depend on the step's own length: step_under_load solves for it.
//
// Both report throughput and per-request TPOT at the batch or concurrency given as the
// workload's batch; speedups are against sequential decoding batched the same way.
#include <string>
#include <vector>

#include "simulator/predictor.hpp"

namespace specdec::sim {

enum class Batching { static_batch, continuous };

Batching parse_batching(const std::string& name, const std::string& source);
std::string batching_name(Batching b);

// P(a step emits exactly j tokens), j = 1..K+1 (index j − 1), of the scenario's chain or tree
// under its acceptance model; sequential decoding gives {1}. Throws when the acceptance data does
// not give it (a measured AL alone, a table without every K up to the plan's).
std::vector<double> tokens_per_step_distribution(const Scenario& s);

// Expected maximum of n independent standard normals: ∫ x · n·φ(x)·Φ(x)^(n−1) dx, integrated
// numerically (0 at n = 1, 1/√π at n = 2).
double expected_max_of_normals(int n);

struct BatchingPrediction {
  Batching mode = Batching::continuous;
  int sequences = 1;               // B (static) or C (continuous)
  double tokens_per_step = 1;      // μ, counting the bonus token
  double tokens_per_step_sd = 0;   // σ
  double step_s = 0;               // one decoding step of the whole batch
  double prefill_per_step_s = 0;   // continuous: interleaved prefill per step
  double steps = 0;                // static: expected steps until the batch ends;
                                   // continuous: output_len / μ per request
  double ragged_factor = 1;        // static: expected steps / (output_len / μ); 1 = no raggedness
  double tpot_s = 0;               // per request: time to its last token / output_len
  double throughput_tokens_per_s = 0;  // useful output tokens per second per replica
  double sequential_tpot_s = 0;
  double sequential_throughput_tokens_per_s = 0;
  double speedup = 1;              // throughput over sequential decoding batched the same way
};

BatchingPrediction predict_batching(const Scenario& s, Batching mode);

// The time one prompt's prefill (the target's and, for a method with a drafter model, the drafter's
// forward over the prompt) adds to the decode steps of the requests already running. An engine that
// interleaves prefill (EngineSpec::interleaves_prefill) chunks the prompt's rows into the steps'
// target forwards: what the rows add to the step's forward (interleaved_prefill_s: the weights are
// already read for the decode rows), no step overhead of its own. One that does not runs it as a
// forward of its own between two steps, which stalls every running sequence for the whole forward
// and its step overhead.
double prefill_seconds_per_prompt(const Scenario& s);

// A replica's decode step when prompts arrive at `prompts_per_s` (λ) and each adds `prefill_s` (c,
// prefill_seconds_per_prompt) to the steps. A step of length T carries the prompts that arrived during
// it, λ·T of them, so T is a fixed point:
//   T = D + λ·T·c   =>   T = D / (1 − λ·c)   when λ·c < 1,
// λ·c the share of the replica's time its prompts take. At λ·c >= 1 there is no solution: the prompts
// alone need the whole replica, which cannot keep up (keeps_up false, the step infinite).
struct StepUnderLoad {
  double decode_step_s = 0;         // D: the step without prompts
  double prefill_s_per_prompt = 0;  // c
  double prompts_per_s = 0;         // λ
  double prefill_share = 0;         // λ·c
  bool keeps_up = true;             // λ·c < 1
  double step_s = 0;                // T (infinite when it cannot keep up)
  double prompts_per_step = 0;      // λ·T
  double prefill_tokens_per_step = 0;  // λ·T·prompt_len
  double prefill_s_per_step = 0;    // λ·T·c = T − D
};
// D, c and λ must be finite, D > 0, c and λ >= 0; `prompt_len` >= 1.
StepUnderLoad step_under_load(double decode_step_s, double prefill_s, double prompts_per_s, int prompt_len);

}  // namespace specdec::sim
