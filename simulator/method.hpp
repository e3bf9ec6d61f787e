#pragma once
// Decoding methods the simulator costs.
#include <string>

namespace specdec::sim {

enum class Method { sequential, draft_model, eagle1, eagle3, peagle };

// The method names of every specdec command: "sequential", "draft", "eagle" (EAGLE-1), "eagle3",
// "peagle". parse_method also takes the older draft_model / eagle1 spellings.
std::string method_name(Method m);
// Accepts the names above and a few aliases ("seq", "draft", "eagle", "eagle-3", "p-eagle").
Method parse_method(const std::string& name, const std::string& source);

}  // namespace specdec::sim
