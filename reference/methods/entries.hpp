#pragma once
// The registry's entries, one file each (sequential.cpp, draft_model.cpp, eagle.cpp, peagle.cpp, mtp.cpp, ngram.cpp, suffix.cpp);
// registry.cpp lists them. Only the registry includes this.
#include "reference/methods/registry.hpp"

namespace specdec::methods {

MethodEntry sequential();
MethodEntry draft_model();
MethodEntry eagle1();
MethodEntry eagle3();
MethodEntry peagle();
MethodEntry mtp();
MethodEntry medusa();
MethodEntry ngram();
MethodEntry prompt_lookup();
MethodEntry ngram_tree();
MethodEntry suffix();
MethodEntry suffix_tree();

}  // namespace specdec::methods
