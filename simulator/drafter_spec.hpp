#pragma once
// Drafter specs (simulator/specs/drafters/*.json): which method, how many layers, which draft
// vocabulary, and either the shape overrides of an EAGLE-style head (defaults: the target's layer
// shape) or the model spec of a draft LM.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "simulator/method.hpp"
#include "simulator/model_shape.hpp"

namespace specdec::sim {

struct DrafterSpec {
  std::string name;
  std::string source;
  Method method = Method::eagle1;
  std::string target;         // intended target model (informational)
  int num_layers = 1;         // EAGLE heads: 1 (EAGLE-1/3) or N (P-EAGLE)
  int draft_vocab_size = 0;   // 0 = the target's vocabulary
  int trained_depth = 0;      // P-EAGLE: largest K trained for (0 = unknown)
  std::string model;          // draft_model: name of a model spec (or a config.json path)
  nlohmann::json config;      // EAGLE heads: overrides of hidden_size, intermediate_size, heads, ...
};

// The resolved drafter the cost model uses.
struct Drafter {
  std::string name;
  Method method = Method::eagle1;
  ModelShape shape;        // one layer's shape (EAGLE heads) or the whole draft LM
  int num_layers = 1;
  int lm_head_vocab = 0;   // rows of the LM head it evaluates (draft vocab, or the target's V)
  int fc_in = 0;           // fc input width (EAGLE-1: 2H, EAGLE-3/P-EAGLE: 3·Ht); 0 = none
  int qkv_in = 0;          // layer-0 q/k/v input width (EAGLE-3/P-EAGLE: 2H)
  int trained_depth = 0;
};

DrafterSpec parse_drafter_spec(const nlohmann::json& j, const std::string& source);
DrafterSpec load_drafter_spec(const std::filesystem::path& path);

// Resolves a spec against the target: EAGLE heads take the target's layer shape unless
// overridden; draft LMs come from `draft_model_shape` (required for draft_model). Checks that the
// vocabularies agree and the hidden sizes fit; throws specdec::Error otherwise.
Drafter resolve_drafter(const DrafterSpec& spec, const ModelShape& target,
                        const ModelShape* draft_model_shape = nullptr);

}  // namespace specdec::sim
