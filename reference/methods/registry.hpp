#pragma once
// The methods specdec decodes with, as data: one entry per method (one file each beside this one)
// naming it, its aliases, the drafter it needs, the shapes it takes, how its Proposer is made and
// the drafter forwards of one step. Every consumer — command-line options and help, sweeps, trace
// configs and checks, the Python module, the simulator, explain — reads this table; adding a
// method is its proposer, its entry and a row in the method tests (docs/drafters.md).
#include <memory>
#include <string>
#include <vector>

#include "reference/drafters/eagle_config.hpp"
#include "reference/drafting/proposer.hpp"
#include "reference/methods/draft_schedule.hpp"
#include "reference/methods/method_spec.hpp"
#include "reference/model/language_model.hpp"

namespace specdec {

class EagleHead;
class MedusaHeads;

// The drafter a method drafts with.
struct DrafterNeed {
  // none: the method does not draft (sequential); context: it drafts from the tokens it has seen
  // (n-gram lookup, suffix decoding: no model, no --drafter); the others load a checkpoint:
  // eagle_head is an EAGLE-family head bound to the target (EAGLE-1/3, P-EAGLE, MTP modules),
  // medusa_heads K Medusa heads on the target's last hidden state.
  enum class Kind { none, context, language_model, eagle_head, medusa_heads };
  Kind kind = Kind::none;
  EagleKind head = EagleKind::eagle1;  // eagle_head: which head kind
  std::string description;             // "a small model sharing the target's vocabulary", "an EAGLE-3 head"
  std::string bundled_dir;             // the bundled drafter's folder beside the target (models/)
  // Whether the drafter is a checkpoint given with --drafter DIR.
  bool loads_checkpoint() const {
    return kind == Kind::language_model || kind == Kind::eagle_head || kind == Kind::medusa_heads;
  }
};

// One parameter of a method beyond the shape options (MethodSpec::params): its name in every
// form (--method NAME,key=value; JSON), range and default, and what it is in the engine it comes from.
struct MethodParam {
  std::string name;
  bool integer = true;
  double default_value = 0, min = 0, max = 0;
  std::string doc;  // "vLLM prompt_lookup_min: the shortest n-gram matched"
  // Non-empty: a named choice instead of a number — the value is one of these strings, the first
  // the default (MTP's variant=checkpoint|vllm|sglang).
  std::vector<std::string> choices;

  bool is_choice() const { return !choices.empty(); }
  // "integer", "number" or "choice" (methods --json, trace checks).
  std::string kind() const { return is_choice() ? "choice" : integer ? "integer" : "number"; }
  // The default as JSON: the first choice, else the number (an integer when integer).
  nlohmann::json default_json() const;
};

// What a proposer is made from: the target's config and the loaded drafter (the one the method's
// DrafterNeed names; the other pointer is null), for sequences of up to `capacity` tokens.
struct ProposerInputs {
  const ModelConfig* target = nullptr;
  const LanguageModel* draft_lm = nullptr;
  const EagleHead* head = nullptr;
  // MTP checkpoints of n > 1 modules: modules 1..n−1 (head is module 0); empty otherwise.
  std::vector<const EagleHead*> extra_modules;
  const MedusaHeads* medusa = nullptr;
  int capacity = 0;
  // The run's shared state (MethodEntry::make_run_state); make_method_proposer makes a fresh one
  // (a run of one sequence) when null.
  std::shared_ptr<MethodRunState> run_state;
};

// The draft shapes a method takes (MethodSpec::tree and force_depth).
struct ShapeSupport {
  bool chain = false;
  bool static_tree = false;
  bool dynamic_tree = false;
  bool force_depth = false;
};

struct MethodEntry {
  std::string name;                  // in every command, file and column
  std::vector<std::string> aliases;  // other spellings accepted on input (older names, the papers')
  std::string title;                 // "EAGLE-3"
  std::string summary;               // one line: what it drafts with and how
  DrafterNeed drafter;
  ShapeSupport shapes;
  std::vector<MethodParam> params;
  // The state the sequences of one run share (null: none).
  std::shared_ptr<MethodRunState> (*make_run_state)(const MethodSpec& spec) = nullptr;
  // The method's proposer (null for sequential decoding). `spec` has been checked.
  std::unique_ptr<Proposer> (*make_proposer)(const MethodSpec& spec, const ProposerInputs& in) = nullptr;
  // Methods whose measured engine overheads stand in for this one's, nearest first, when an engine
  // spec has none of its own (the simulator): the same drafting loop in the engines modelled.
  std::vector<std::string> cost_siblings;
  // The drafter forwards of one decoding step of `shape` after a step that emitted `catch_up`
  // (empty for sequential decoding).
  DraftSchedule (*schedule)(const StepShape& shape, const CatchUp& catch_up) = nullptr;
};

// Every method, in the order commands list them.
const std::vector<MethodEntry>& method_registry();
// The registry names, in that order.
std::vector<std::string> method_names();
// "sequential, draft, eagle, eagle3, peagle".
std::string known_methods();
// The registry name of `name` or of one of its aliases (case-insensitive, '-' and '_' alike);
// `name` unchanged when it is neither (method_entry then refuses it).
std::string canonical_method_name(const std::string& name);
// The entry of a registry name or alias. Throws specdec::Error "`what`: unknown method 'eagel3';
// known methods: ...; did you mean eagle3?".
const MethodEntry& method_entry(const std::string& name, const std::string& what = "--method");

// Whether the method drafts at all (false: sequential decoding).
bool method_drafts(const MethodEntry& e);

// The method that drafts with a drafter of `kind` (for eagle_head: a head of kind `head`), e.g.
// "medusa" for medusa_heads. Throws specdec::Error when no method does.
const MethodEntry& method_drafting_with(DrafterNeed::Kind kind, EagleKind head = EagleKind::eagle1);

// The method's proposer: checks the spec and that the drafter it needs was given, of the right
// kind. Null for sequential decoding.
std::unique_ptr<Proposer> make_method_proposer(const MethodSpec& spec, const ProposerInputs& in);

}  // namespace specdec
