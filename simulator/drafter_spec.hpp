#pragma once
// Drafter specs (simulator/specs/drafters/*.json): which method, how many layers, which draft
// vocabulary, and either the shape overrides of an EAGLE-style head (defaults: the target's layer
// shape) or the model spec of a draft LM. MTP modules (one decoder layer of the target's own kind
// each, `num_modules` of them) and Medusa heads (`num_heads` heads of `num_layers` residual blocks)
// take their shapes from the target they ship with. A draft-free method (n-gram lookup, suffix
// decoding) has no model: its spec holds its acceptance by prompt category instead, each with its
// provenance; MTP and Medusa specs may hold the published acceptance of their checkpoints the same
// way.
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
// code edits copy most of it, open chat little), or an MTP / Medusa checkpoint's published
// acceptance on a benchmark. Exactly one acceptance form, as on the command line: alpha (i.i.d.),
// acceptance (per-position conditional), acceptance_by_depth (P(accepted >= d)), acceptance_table
// ({K: AL}, only those K answered), tree_acceptance (per depth, per rank) or a measured tree AL
// (`tree`, a built-in tree's name, with `al`: the AL measured on exactly that tree).
struct CategoryAcceptance {
  std::string name;
  std::string description;  // the prompts: what the output repeats
  std::string kind;         // "measured" (by whom: `source`) or "prior" (an assumption: `source` says whose)
  std::string source;       // where the numbers come from, with the setup they were measured in
  AcceptancePtr model;      // among the steps that draft when match_rate is given, else over all steps;
                            // null for a measured tree AL (`tree` and `al`)
  std::string tree;         // a measured tree AL: the built-in tree it was measured on
  double al = 0;            // ... and its AL, counting the bonus token
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
  int num_modules = 0;        // MTP: modules in the checkpoint (step i uses module i mod n); default 1
  int num_heads = 0;          // Medusa: heads in the checkpoint (the deepest draft it can make)
  std::string model;          // draft_model: name of a model spec (or a config.json path)
  // EAGLE heads: overrides of hidden_size, intermediate_size, heads, ...; MTP and Medusa: the
  // hidden_size and vocab_size of the target the checkpoint was trained with (checked, not overrides).
  nlohmann::json config;
  // Why the simulator cannot price this checkpoint (e.g. its target's attention kind); resolving it
  // is refused with this reason. Empty: priced.
  std::string not_priced;
  // Draft-free methods: acceptance by prompt category; drafters with a model: their published
  // acceptance (MTP and Medusa checkpoints' papers, EAGLE heads' papers and engines' measurements).
  std::map<std::string, CategoryAcceptance> categories;
  // The category `specdec simulate` uses when no acceptance is given (never for draft-free methods,
  // whose acceptance depends on how much the output repeats the prompt). Empty: none.
  std::string default_category;

  // The category by name; throws naming the categories this spec has (with their kind) otherwise.
  const CategoryAcceptance& category(const std::string& name) const;
  // "blazedit (measured), magpie-turn1 (measured), ..." or "none".
  std::string category_list() const;
};

// The resolved drafter the cost model uses.
struct Drafter {
  std::string name;
  std::string target;      // the model spec it was trained for (the spec's "target"; empty: any)
  Method method = Method::eagle1;
  ModelShape shape;        // one layer's shape (EAGLE heads) or the whole draft LM
  int num_layers = 1;
  int lm_head_vocab = 0;   // rows of the LM head it evaluates (draft vocab, or the target's V)
  int fc_in = 0;           // fc input width (EAGLE-1: 2H, EAGLE-3/P-EAGLE: 3·Ht); 0 = none
  int qkv_in = 0;          // layer-0 q/k/v input width (EAGLE-3/P-EAGLE: 2H)
  int trained_depth = 0;
  bool draft_free = false;  // no model: nothing to forward, price or hold in memory
  // MTP: modules held (`shape` is the target's layer shape, MoE included; fc_in = 2H eh_proj;
  // lm_head_vocab = the target's V, through shared_head.norm and the target's head).
  int num_modules = 0;
  // Medusa: heads held; num_layers = residual blocks per head; shape.hidden_size / vocab_size the target's.
  int num_heads = 0;
};

DrafterSpec parse_drafter_spec(const nlohmann::json& j, const std::string& source);
DrafterSpec load_drafter_spec(const std::filesystem::path& path);

// Resolves a spec against the target (a draft-free spec resolves to a Drafter without a model): EAGLE heads take the target's layer shape unless
// overridden; draft LMs come from `draft_model_shape` (required for draft_model). Checks that the
// vocabularies agree and the hidden sizes fit; throws specdec::Error otherwise.
Drafter resolve_drafter(const DrafterSpec& spec, const ModelShape& target,
                        const ModelShape* draft_model_shape = nullptr);

}  // namespace specdec::sim
