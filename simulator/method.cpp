#include "simulator/method.hpp"

#include <cmath>

#include "reference/core/error.hpp"
#include "reference/methods/registry.hpp"

namespace specdec::sim {

std::string method_name(Method m) { return method_registry().at(static_cast<size_t>(m)).name; }

Method parse_method(const std::string& name, const std::string& source) {
  const MethodEntry& e = method_entry(name, source);
  const auto& table = method_registry();
  for (size_t i = 0; i < table.size() && i < static_cast<size_t>(kPricedMethods); ++i)
    if (table[i].name == e.name) return static_cast<Method>(i);
  throw Error(source + ": the simulator does not price method '" + e.name + "' yet");
}

bool draft_free(Method m) {
  return method_registry().at(static_cast<size_t>(m)).drafter.kind == DrafterNeed::Kind::context;
}

bool draft_free_tree(Method m) { return m == Method::ngram_tree || m == Method::suffix_tree; }

int draft_free_nodes(Method m, int k, int nodes) {
  if (m != Method::ngram_tree) return k;
  if (nodes > 0) return nodes;
  for (const MethodParam& p : method_registry().at(static_cast<size_t>(m)).params)
    if (p.name == "nodes") return static_cast<int>(std::lround(p.default_value));
  throw Error("method " + method_name(m) + " declares no 'nodes' parameter");  // a registry change this must follow
}

}  // namespace specdec::sim
