#pragma once
// Checks PTX against the exactness contract (docs/exactness.md). Every floating-point add, sub,
// mul, div and sqrt must carry an explicit .rn (ptxas may fuse an unrounded mul and add into an
// FMA, and div.full is approximate); a float fma must be one the source asked for — exact::fma
// emits it as inline PTX tagged "// exact::fma" — never a contraction; nothing .approx; nothing
// .ftz.
#include <string>
#include <vector>

namespace specdec::kernels {

struct PtxFinding {
  int line;
  std::string instruction;
  std::string why;
};

std::vector<PtxFinding> ptx_lint(const std::string& ptx);

}  // namespace specdec::kernels
