#pragma once
// How one model replica's devices share the work: tensor parallelism, data-parallel attention and
// expert parallelism (docs/simulator.md, section "Parallel layouts").
//
// Terms (N devices of one replica, the command line's --tp):
//   attention DP D   the replica's sequences are split over D attention groups; each group runs
//                    attention (and every other non-expert part: embedding, dense MLPs, shared
//                    experts, the LM head) for its own ⌈B / D⌉ sequences with the full attention
//                    weights split over its Ta = N / D devices, and keeps only its own sequences'
//                    KV cache. SGLang --enable-dp-attention --dp D (attention TP = tp / dp: its
//                    docs/advanced_features/dp_dpa_smg_guide), vLLM --data-parallel-size D with
//                    --tensor-parallel-size Ta (docs serving/data_parallel_deployment).
//   EP P             the routed experts are split into P ranks of E / P whole experts, each rank's
//                    experts column-split over its Te = N / P devices (expert TP). P = N: each
//                    device holds E / P whole experts (vLLM's EP size is DP × TP, docs
//                    serving/expert_parallel_deployment; SGLang's DeepEP --ep-size is its --tp).
//                    1 < P < N with tensor-parallel attention (D = 1): TensorRT-LLM's
//                    moe_expert_parallel_size × moe_tensor_parallel_size = tp_size, SGLang's
//                    --ep-size below --tp (moe TP = tp / ep); every device holds every token after
//                    attention, so no dispatch: the layer's all-reduce sums the ranks' partial
//                    outputs as under plain TP. Without EP the routed experts are column-split over
//                    all N devices (vLLM: "expert layers form a (DP × TP) sized tensor parallel
//                    group").
// D = P = 1 is plain tensor parallelism, priced exactly as before these terms existed.
#include <string>

#include "simulator/model_shape.hpp"
#include "simulator/option_spelling.hpp"

namespace specdec::sim {

struct Parallelism {
  int ranks = 1;         // N: devices of one replica (--tp)
  int dp_attention = 1;  // D: attention data-parallel groups
  int ep = 1;            // P: expert-parallel degree (dividing N; 1 or N under DP attention)
  int attention_tp() const { return ranks / dp_attention; }  // Ta
  int expert_tp() const { return ranks / ep; }               // Te: devices of one EP rank
  bool plain() const { return dp_attention == 1 && ep == 1; }
};

// Throws specdec::Error (naming options as `spelling` writes them) unless the layout is one the
// engines run: D and P at least 1, D and P dividing N, P either 1 or N under DP attention, P
// dividing the target's routed experts, EP only on a mixture-of-experts target.
void validate_parallelism(const Parallelism& par, const ModelShape& target,
                          const OptionSpelling& spelling = kCommandLineSpelling);

// "TP 8" for plain tensor parallelism; "8 devices: attention DP 8 x TP 1, experts EP 8" or
// "8 devices: attention DP 1 x TP 8, experts EP 2 x TP 4" otherwise.
std::string describe_parallelism(const Parallelism& par);

// Sequences of one attention group: ⌈batch / D⌉, the busiest group (the slowest sets the step).
int sequences_per_attention_group(int batch, int dp_attention);

// The expert load of the busiest of P expert-parallel devices in one forward of `batch` sequences
// × `tokens` tokens, each token choosing `per_token` of `experts` with the popularity of
// expert_popularity(E, load_cv) and the within-sequence locality of expected_experts_touched.
// Device r holds the experts of popularity rank r, r + P, r + 2P, ... (a placement that spreads the
// popular experts, as EPLB aims to, without redundant copies) [approximate: a placement that ignores
// popularity is more uneven]. Uniform routing gives every device E/P · (1 − miss) experts and
// B·T·k / P token-expert rows.
struct ExpertRankLoad {
  double touched = 0;  // distinct experts the device reads
  double rows = 0;     // token-expert pairs the device computes (its grouped GEMM's rows, all experts)
};
ExpertRankLoad busiest_expert_rank(double experts, double per_token, int ep, double batch, double tokens,
                                   double locality, double load_cv);

// The devices other than the token's own that one token's `per_token` distinct experts live on,
// expected under uniform routing: (P − 1) · (1 − C(E − E/P, k) / C(E, k)). A token is sent to a
// device once however many of its experts that device holds (DeepEP's dispatch layout counts tokens
// per rank, not per expert), and its one partial sum per device comes back in the combine.
double remote_ranks_per_token(double experts, double per_token, int ep);

}  // namespace specdec::sim
