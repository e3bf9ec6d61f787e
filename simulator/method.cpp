#include "simulator/method.hpp"

#include <array>
#include <cmath>

#include "reference/core/error.hpp"
#include "reference/methods/registry.hpp"

namespace specdec::sim {

namespace {

constexpr std::array<const char*, kPricedMethods> kNames = {
    "sequential", "draft", "eagle", "eagle3", "peagle", "ngram", "prompt-lookup", "ngram-tree", "suffix", "suffix-tree",
    "mtp", "medusa"};

int index_of(const std::string& registry_name) {
  for (int i = 0; i < kPricedMethods; ++i)
    if (registry_name == kNames[size_t(i)]) return i;
  return -1;
}

}  // namespace

std::string method_name(Method m) { return kNames.at(static_cast<size_t>(m)); }

const MethodEntry* registry_entry(Method m) {
  for (const MethodEntry& e : method_registry())
    if (e.name == kNames.at(static_cast<size_t>(m))) return &e;
  return nullptr;
}

Method parse_method(const std::string& name, const std::string& source) {
  const MethodEntry& e = method_entry(name, source);  // throws: unknown method, with a suggestion
  if (const int i = index_of(e.name); i >= 0) return static_cast<Method>(i);
  throw Error(source + ": the simulator does not price method '" + e.name + "' yet");
}

const MethodEntry& priced_entry(Method m) {
  if (const MethodEntry* e = registry_entry(m)) return *e;
  throw Error("method " + method_name(m) + " is not in this build's method registry (reference/methods)");
}

std::vector<std::string> cost_siblings(const std::string& method) {
  for (const MethodEntry& e : method_registry())
    if (e.name == method) return e.cost_siblings;
  return {};
}

ShapeSupport method_shapes(Method m) { return priced_entry(m).shapes; }

std::string method_title(Method m) {
  const MethodEntry& e = priced_entry(m);
  return e.title.empty() ? e.name : e.title;
}

DraftSchedule method_schedule(Method m, const StepShape& shape, const CatchUp& catch_up) {
  const MethodEntry& e = priced_entry(m);
  if (!e.schedule) throw Error("method " + e.name + " has no drafter-forward schedule in the method registry");
  return e.schedule(shape, catch_up);
}

bool draft_free(Method m) {
  const MethodEntry* e = registry_entry(m);
  return e && e->drafter.kind == DrafterNeed::Kind::context;
}

bool draft_free_tree(Method m) { return m == Method::ngram_tree || m == Method::suffix_tree; }

int draft_free_nodes(Method m, int k, int nodes) {
  if (m != Method::ngram_tree) return k;
  if (nodes > 0) return nodes;
  for (const MethodParam& p : priced_entry(m).params)
    if (p.name == "nodes") return static_cast<int>(std::lround(p.default_value));
  throw Error("method " + method_name(m) + " declares no 'nodes' parameter");  // a registry change this must follow
}

}  // namespace specdec::sim
