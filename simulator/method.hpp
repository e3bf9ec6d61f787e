#pragma once
// Decoding methods the simulator costs.
#include <string>

namespace specdec::sim {

enum class Method { sequential, draft_model, eagle1, eagle3, peagle };

std::string method_name(Method m);  // "sequential", "draft_model", "eagle1", "eagle3", "peagle"
// Accepts the names above and a few aliases ("seq", "draft", "eagle", "eagle-3", "p-eagle").
Method parse_method(const std::string& name, const std::string& source);

}  // namespace specdec::sim
