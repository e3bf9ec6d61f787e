#include "reference/methods/registry.hpp"

#include <algorithm>
#include <cctype>

#include "reference/core/error.hpp"
#include "reference/core/suggest.hpp"
#include "reference/drafters/eagle_head.hpp"
#include "reference/methods/entries.hpp"

namespace specdec {

const std::vector<MethodEntry>& method_registry() {
  static const std::vector<MethodEntry> table = {
      methods::sequential(),
      methods::draft_model(),
      methods::eagle1(),
      methods::eagle3(),
      methods::peagle(),
      methods::mtp(),
      methods::medusa(),
      methods::ngram(),
      methods::prompt_lookup(),
      methods::ngram_tree(),
      methods::suffix(),
      methods::suffix_tree(),
  };
  return table;
}

std::vector<std::string> method_names() {
  std::vector<std::string> names;
  for (const MethodEntry& e : method_registry()) names.push_back(e.name);
  return names;
}

std::string known_methods() {
  std::string s;
  for (const MethodEntry& e : method_registry()) s += (s.empty() ? "" : ", ") + e.name;
  return s;
}

namespace {

// Lower case, '_' as '-': "P_EAGLE" and "p-eagle" are one spelling.
std::string folded(const std::string& name) {
  std::string s = name;
  for (char& c : s) c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

const MethodEntry* find_entry(const std::string& name) {
  const std::string f = folded(name);
  for (const MethodEntry& e : method_registry()) {
    if (folded(e.name) == f) return &e;
    for (const std::string& a : e.aliases)
      if (folded(a) == f) return &e;
  }
  return nullptr;
}

}  // namespace

std::string canonical_method_name(const std::string& name) {
  const MethodEntry* e = find_entry(name);
  return e ? e->name : name;
}

const MethodEntry& method_entry(const std::string& name, const std::string& what) {
  if (const MethodEntry* e = find_entry(name)) return *e;
  std::vector<std::string> spellings;
  for (const MethodEntry& e : method_registry()) {
    spellings.push_back(e.name);
    spellings.insert(spellings.end(), e.aliases.begin(), e.aliases.end());
  }
  const std::string near = closest_name(folded(name), spellings);
  throw Error((what.empty() ? "" : what + ": ") + "unknown method '" + name + "'; known methods: " + known_methods() +
              (near.empty() ? "" : "; did you mean " + canonical_method_name(near) + "?"));
}

bool method_drafts(const MethodEntry& e) { return e.make_proposer != nullptr; }

const MethodEntry& method_drafting_with(DrafterNeed::Kind kind, EagleKind head) {
  for (const MethodEntry& e : method_registry())
    if (e.drafter.kind == kind && (kind != DrafterNeed::Kind::eagle_head || e.drafter.head == head)) return e;
  throw Error("no method drafts with " + (kind == DrafterNeed::Kind::eagle_head ? "an " + eagle_kind_name(head) + " head"
                                                                               : std::string("this kind of drafter")));
}

std::unique_ptr<Proposer> make_method_proposer(const MethodSpec& spec, const ProposerInputs& given) {
  check_method_spec(spec);
  const MethodEntry& e = method_entry(spec.name);
  ProposerInputs in = given;
  if (!in.run_state && e.make_run_state) in.run_state = e.make_run_state(spec.normalized());
  if (!e.make_proposer) return nullptr;
  const std::string who = "--method " + e.name;
  if (!in.target) throw Error(who + ": no target model config was given");
  switch (e.drafter.kind) {
    case DrafterNeed::Kind::none:
    case DrafterNeed::Kind::context: break;
    case DrafterNeed::Kind::language_model:
      if (!in.draft_lm) throw Error(who + " needs a draft language model");
      break;
    case DrafterNeed::Kind::eagle_head:
      if (!in.head) throw Error(who + " needs an " + eagle_kind_name(e.drafter.head) + " head");
      if (in.head->config().kind != e.drafter.head) {
        throw Error(who + " needs an " + eagle_kind_name(e.drafter.head) + " head, not an " +
                    eagle_kind_name(in.head->config().kind) + " head");
      }
      break;
    case DrafterNeed::Kind::medusa_heads:
      if (!in.medusa) throw Error(who + " needs Medusa heads");
      break;
  }
  return e.make_proposer(spec.normalized(), in);
}

}  // namespace specdec
