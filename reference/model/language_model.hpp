#pragma once
// The model interface the decoding algorithms are written against. A backend (reference, cpu,
// cuda) implements it; algorithms never see how the forward is computed.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "reference/core/tensor.hpp"
#include "reference/model/attention_mask.hpp"
#include "reference/model/kv_cache.hpp"
#include "reference/model/model_config.hpp"

namespace specdec {

// One forward call: T new tokens appended to the cache at explicit positions under an explicit mask.
struct ForwardRequest {
  std::vector<int32_t> tokens;        // (T)
  std::vector<int32_t> positions;     // (T) absolute positions for RoPE; empty = cache length + t
  std::optional<AttentionMask> mask;  // (T, C + T); absent = causal
  std::vector<int> logit_rows;        // rows (of the T) whose logits are returned, in this order
  bool final_hidden = false;          // return the last hidden state after the final norm (EAGLE-1)
  // Hidden states to return, as indices into Hugging Face's output_hidden_states: i < L is the
  // state entering layer i (0 = embeddings), L is the output after the final norm (EAGLE-3).
  std::vector<int> aux_layers;
  // Return only each logit row's greedy choice (argmax, ties to the lower index: sample_token in
  // greedy mode) in ForwardResult::argmax, not the rows: a backend may pick where the logits are
  // (a GPU then sends R ids to the host instead of R·V floats). A row with a NaN or nothing above
  // -inf is refused as argmax refuses it.
  bool argmax_only = false;
  // Return the residual stream inside every layer (ForwardResult::layer_states), for naming the
  // first layer where another engine departs. The reference backend returns them; others may not.
  bool layer_states = false;

  // A causal chain of tokens continuing the cache, with logits for every row.
  static ForwardRequest chain(std::vector<int32_t> tokens);
};

struct ForwardResult {
  Matrix logits;        // (logit_rows.size(), V); empty with argmax_only
  std::vector<int32_t> argmax;  // (logit_rows.size()) with argmax_only
  Matrix final_hidden;  // (T, H) when requested
  Matrix aux_hidden;    // (T, aux_layers.size() · H), concatenated in the order requested
  // With layer_states: L · 4 matrices (T, H), entry 4·l + u for layer l and sub-step u of
  // kLayerStateNames: the input norm's output, the stream after the attention block (residual
  // added), the post-attention norm's output, the stream after the MLP block (the layer's output).
  std::vector<Matrix> layer_states;
};

inline constexpr const char* kLayerStateNames[4] = {"input_norm", "attention", "post_attention_norm", "mlp"};

// One sequence of a batched forward: its own cache and its own request (ragged: each entry has its
// own token count, positions, mask and cache length).
struct BatchEntry {
  KVCache* cache = nullptr;
  const ForwardRequest* request = nullptr;
};

// Throws specdec::Error unless every entry has a cache and a request and no cache appears twice
// (two entries appending to one cache would depend on their order). `where` starts the message.
void check_batch_entries(const std::vector<BatchEntry>& batch, const std::string& where);

class LanguageModel {
 public:
  virtual ~LanguageModel() = default;
  virtual const ModelConfig& config() const = 0;
  virtual std::unique_ptr<KVCache> new_cache(int capacity) const = 0;
  // Appends the request's tokens to `cache` (which must come from this model's new_cache).
  virtual ForwardResult forward(KVCache& cache, const ForwardRequest& request) const = 0;
  // Several sequences in one call, each appended to its own cache. results[i] is bitwise what
  // forward(*batch[i].cache, *batch[i].request) returns, whatever the other entries are (the
  // batch-invariance every backend keeps). This default computes the entries one by one (the
  // reference: the truth); the cpu and cuda backends read each weight once for all rows of all
  // entries, with attention per entry over its own cache. A request that fails its checks throws
  // before any cache is touched.
  virtual std::vector<ForwardResult> forward_batch(const std::vector<BatchEntry>& batch) const;
};

}  // namespace specdec
