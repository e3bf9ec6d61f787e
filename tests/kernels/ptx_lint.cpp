#include "tests/kernels/ptx_lint.hpp"

#include <regex>
#include <sstream>

namespace specdec::kernels {

std::vector<PtxFinding> ptx_lint(const std::string& ptx) {
  // An instruction: optional predicate, opcode with its dot-separated modifiers.
  static const std::regex instruction(R"(^\s*(?:@!?%\w+\s+)?([a-z][a-z0-9]*(?:\.[a-z0-9]+)*))");
  static const std::regex float_type(R"(\.(f16|f16x2|bf16|bf16x2|f32|f64)$)");
  std::vector<PtxFinding> found;
  std::istringstream in(ptx);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    const bool requested_fma = line.find("// exact::fma") != std::string::npos;
    const auto comment = line.find("//");
    if (comment != std::string::npos) line.erase(comment);
    std::smatch m;
    if (!std::regex_search(line, m, instruction)) continue;
    const std::string op = m[1];
    const std::string base = op.substr(0, op.find('.'));
    auto has = [&op](const char* mod) { return (op + ".").find(std::string(".") + mod + ".") != std::string::npos; };
    if (has("approx")) found.push_back({n, op, "approximate instruction"});
    if (has("ftz")) found.push_back({n, op, "flushes subnormals to zero"});
    if (!std::regex_search(op, float_type)) continue;
    if (base == "fma" || base == "mad") {
      if (!requested_fma || op != "fma.rn.f32")
        found.push_back({n, op, "fused multiply-add the source did not ask for (a contraction)"});
    } else if ((base == "add" || base == "sub" || base == "mul" || base == "div" || base == "sqrt") && !has("rn")) {
      found.push_back({n, op, "no explicit .rn: ptxas may contract or approximate it"});
    }
  }
  return found;
}

}  // namespace specdec::kernels
