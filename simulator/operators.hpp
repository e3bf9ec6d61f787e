#pragma once
// The operators of a transformer forward, with the FLOPs and bytes each moves on one device.
// Tensor parallelism (degree tp) splits heads, MLP columns and the vocabulary across devices and
// adds the collectives; KV heads are replicated when tp exceeds their number (multi-head latent
// attention's latent always is: simulator/mla.hpp).
#include <string>
#include <vector>

#include "simulator/kernel_fusion.hpp"
#include "simulator/model_shape.hpp"

namespace specdec::sim {

struct Operator {
  // Names are string literals so that building millions of operator lists in a sweep is cheap.
  const char* name = "";   // e.g. "attention", "mlp.down_proj"
  const char* phase = "";  // "draft", "verify", "decode", "prefill"
  double count = 1;       // runs per step (layers × forwards)
  double kernels = 1;     // dependent kernels one run launches (each takes at least the per-kernel floor)
  double flops = 0;       // per run, per device
  double bytes = 0;       // per run, per device: weights + activations + KV cache
  double weight_bytes = 0;  // part of bytes
  double kv_bytes = 0;      // part of bytes
  double comm_bytes = 0;    // collectives: bytes each device sends (ring factor included)
  double gemm_rows = 0;     // matrix products: rows of the activation operand per weight matrix
                            // (tensor-core tiles round it up); 0 = not a matrix product
  double gemm_cols = 0;     // matrix products: output columns (all of a grouped product's matrices);
                            // 0 = unknown (no column tiles or waves priced)
  double gemm_depth = 0;    // matrix products: the reduction length (bounds split-K)
  // Matrix products over a checkpoint's weights: their class (its dtype's peak prices them);
  // WeightClass::count = none (the run's compute dtype).
  WeightClass weight_class = WeightClass::count;
  bool collective = false;
};

// One forward over `tokens` new tokens per sequence for `batch` sequences, `context` tokens
// already cached per sequence, of which `logit_rows` per sequence need logits.
struct ForwardParams {
  double tokens = 1;
  int batch = 1;
  double context = 0;
  int tp = 1;              // devices of the replica (simulator/parallelism.hpp: N)
  int dp = 1;              // attention data-parallel groups (D); each runs ⌈batch / D⌉ sequences at TP tp / D
  int ep = 1;              // expert-parallel degree (dividing tp; 1 or tp under dp > 1)
  double logit_rows = 1;
  WeightBytes weights;      // bytes per weight element, by class
  double act_bytes = 2;     // bytes per activation element
  double kv_bytes = 0;      // bytes per KV-cache element; 0 = act_bytes
  bool prefill = false;     // a prompt's forward (engines run multi-head latent attention unabsorbed)
  KernelFusion fusion;      // the engine's kernel fusions (simulator/kernel_fusion.hpp)
};

// The forward as one attention group runs it (simulator/parallelism.hpp): ⌈batch / dp⌉ sequences
// at TP tp / dp, no further data or expert parallelism. Every part of a forward but the routed
// experts (embedding, attention, dense MLPs, shared experts, the LM head) is priced at these; with
// dp = 1 they are p's own batch and TP.
ForwardParams attention_group_params(const ForwardParams& p);

// Expected distinct experts a forward reads: `batch` sequences of `tokens` new tokens each, every
// token choosing `per_token` of `experts`. Expert i is chosen by a token routing afresh with
// probability q_i = min(1, k·weight_i/E), the weights those of expert_popularity(E, load_cv)
// (load_cv 0: uniform, q_i = k/E). Within a sequence a token takes its predecessor's experts with
// probability `locality` (else routes afresh); sequences route independently. Uniform routing with
// locality 0 gives E·(1 − (1 − k/E)^(B·T)); one token gives k per sequence when uniform.
// The probability that expert i (chosen by a fresh routing with probability q) is read by none of
// `batch` sequences' `tokens` tokens: (1 − q)^B · (1 − (1 − locality)·q)^(B·(T − 1)).
double expert_miss_probability(double q, double batch, double tokens, double locality);
double expected_experts_touched(double experts, double per_token, double batch, double tokens, double locality,
                                double load_cv);

// `layers` decoder layers of `m` (qkv_in: width of the q/k/v input, H normally, 2H for EAGLE-3
// heads), with norms, attention over the cache (grouped-query, or multi-head latent attention's
// operators from simulator/mla.hpp), MLP (dense or MoE) and TP collectives.
void append_decoder_layers(std::vector<Operator>& ops, const ModelShape& m, double layers, int qkv_in,
                           const ForwardParams& p, const char* phase);
// An engine that quantises activations per token group before products over block-scaled FP8
// weights (kernels.fusion.fp8_activation_quant) launches one more kernel per such product, which
// reads the 16-bit input and writes it at 8 bits: added to `op` when its weights are of that kind.
void add_fp8_activation_quant(Operator& op, const ForwardParams& p);
// A linear layer applied to every new token (e.g. EAGLE's fc), replicated on every device; its
// weights are of class `cls`.
void append_linear(std::vector<Operator>& ops, const char* name, double in, double out,
                   double rows, const ForwardParams& p, const char* phase, double count = 1,
                   WeightClass cls = WeightClass::other);
// Bytes per KV-cache element of a forward.
inline double kv_element_bytes(const ForwardParams& p) { return p.kv_bytes > 0 ? p.kv_bytes : p.act_bytes; }
// Embedding lookup: reads one row per token.
void append_embedding(std::vector<Operator>& ops, int hidden, const ForwardParams& p,
                      const char* phase, double count = 1);
// Final norm, vocab-parallel LM head over `vocab` rows, logit gather and sampling.
void append_lm_head(std::vector<Operator>& ops, int hidden, int vocab, const ForwardParams& p,
                    const char* phase, double count = 1);

// An elementwise or normalisation kernel over `width` elements of each of the forward's
// batch × tokens rows: reads `reads` inputs and writes one, `flops_per_elem` FLOPs per element
// (an RMSNorm: 1 read, 4 FLOPs).
void append_elementwise(std::vector<Operator>& ops, const char* name, double width, double reads,
                        double flops_per_elem, const ForwardParams& p, const char* phase, double count = 1);

// One forward of an MTP module (DeepSeek-V3 and the models that copied it) over p.tokens positions
// per sequence, p.logit_rows of which need logits: the embedding row, enorm and hnorm (RMSNorms of
// the token's embedding and of the previous hidden state), eh_proj (concat 2H -> H, replicated on
// every device), one decoder layer of `layer`'s kind (the target's: its attention over the
// context's cache, its dense MLP or MoE experts, TP collectives), then shared_head.norm and the
// full-vocabulary LM head (vocabulary-parallel), the logit gather and sampling.
std::vector<Operator> mtp_module_forward(const ModelShape& layer, const ForwardParams& p, const char* phase);

// One pass of the first `heads` Medusa heads over p.tokens rows per sequence (the target's final
// hidden state): per head `blocks` residual blocks x + SiLU(W x + b) (W: H × H, replicated), then
// the head's projection H -> V (vocabulary-parallel, as vLLM's ParallelLMHead), the logit gather
// and the top-k that builds the candidates. Every head's weights are read once per pass, whatever
// the rows: heads · blocks · H² + heads · H · V weights per pass.
std::vector<Operator> medusa_heads_forward(int hidden, int vocab, int heads, int blocks, const ForwardParams& p,
                                           const char* phase);

// A full target forward (embedding, L layers, LM head).
std::vector<Operator> model_forward_ops(const ModelShape& m, const ForwardParams& p, const char* phase);

// Multiplies every operator's count by `factor` (e.g. K drafter steps).
void scale_counts(std::vector<Operator>& ops, double factor);

}  // namespace specdec::sim
