#pragma once
// The decoding methods the simulator prices: the method registry's (reference/methods), in its
// order. A registry method the simulator does not price yet is refused by parse_method by name.
#include <string>

namespace specdec::sim {

// One value per registry entry, in registry order (a test keeps the two in step).
enum class Method { sequential, draft_model, eagle1, eagle3, peagle };
inline constexpr int kPricedMethods = 5;

// The method's registry name (method_registry()[m].name).
std::string method_name(Method m);
// A registry name or alias (method_entry's spellings); `source` names the input in errors.
Method parse_method(const std::string& name, const std::string& source);

}  // namespace specdec::sim
