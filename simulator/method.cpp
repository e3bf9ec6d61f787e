#include "simulator/method.hpp"

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

}  // namespace specdec::sim
