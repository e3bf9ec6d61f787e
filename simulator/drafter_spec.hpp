#pragma once
// Drafter specs (simulator/specs/drafters/*.json): which method, how many layers, which draft
// vocabulary, and either the shape overrides of an EAGLE-style head (defaults: the target's layer
// shape) or the model spec of a draft LM. A draft-free method (n-gram lookup, suffix decoding) has
// no model: its spec holds its acceptance by prompt category instead, each with its provenance.
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "simulator/acceptance.hpp"
#include "simulator/method.hpp"
#include "simulator/model_shape.hpp"

namespace specdec::sim {

// A draft-free method's acceptance on one prompt category (how much the output repeats the input:
// code edits copy most of it, open chat little). Exactly one acceptance form, as on the command
// line: alpha (i.i.d.), acceptance (per-position conditional), acceptance_by_depth (P(accepted >=
// d)) or acceptance_table ({K: AL}, only those K answered).
struct CategoryAcceptance {
  std::string name;
  std::string description;  // the prompts: what the output repeats
  std::string kind;         // "measured" (by whom: `source`) or "prior" (an assumption: `source` says whose)
  std::string source;       // where the numbers come from, with the setup they were measured in
  AcceptancePtr model;      // among the steps that draft when match_rate is given, else over all steps
  // The share of steps that draft (a match was found); the rest verify the bonus token alone. Unset:
  // the model covers every step and every step is priced as verifying its full draft.
  std::optional<double> match_rate;
  // The model with the match rate applied, described with the category's provenance.
  AcceptancePtr acceptance(const std::string& method) const;
};

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
  std::map<std::string, CategoryAcceptance> categories;  // draft-free methods: acceptance by prompt category

  // The category by name; throws naming the categories this spec has (with their kind) otherwise.
  const CategoryAcceptance& category(const std::string& name) const;
  // "blazedit (measured), magpie-turn1 (measured), ..." or "none".
  std::string category_list() const;
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
  bool draft_free = false;  // no model: nothing to forward, price or hold in memory
};

DrafterSpec parse_drafter_spec(const nlohmann::json& j, const std::string& source);
DrafterSpec load_drafter_spec(const std::filesystem::path& path);

// Resolves a spec against the target (a draft-free spec resolves to a Drafter without a model): EAGLE heads take the target's layer shape unless
// overridden; draft LMs come from `draft_model_shape` (required for draft_model). Checks that the
// vocabularies agree and the hidden sizes fit; throws specdec::Error otherwise.
Drafter resolve_drafter(const DrafterSpec& spec, const ModelShape& target,
                        const ModelShape* draft_model_shape = nullptr);

}  // namespace specdec::sim
