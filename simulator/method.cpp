#include "simulator/method.hpp"

#include "reference/core/error.hpp"

namespace specdec::sim {

std::string method_name(Method m) {
  switch (m) {
    case Method::sequential: return "sequential";
    case Method::draft_model: return "draft";
    case Method::eagle1: return "eagle";
    case Method::eagle3: return "eagle3";
    case Method::peagle: return "peagle";
  }
  return "?";
}

Method parse_method(const std::string& name, const std::string& source) {
  if (name == "sequential" || name == "seq" || name == "plain") return Method::sequential;
  if (name == "draft_model" || name == "draft" || name == "draft-model") return Method::draft_model;
  if (name == "eagle1" || name == "eagle" || name == "eagle-1") return Method::eagle1;
  if (name == "eagle3" || name == "eagle-3") return Method::eagle3;
  if (name == "peagle" || name == "p-eagle" || name == "p_eagle") return Method::peagle;
  throw Error(source + ": unknown method '" + name +
              "'; expected sequential, draft, eagle, eagle3 or peagle");
}

}  // namespace specdec::sim
