#pragma once
// Checks PTX against the exactness contract (docs/exactness.md). Every floating-point add, sub,
// mul, div and sqrt must carry an explicit .rn (ptxas may fuse an unrounded mul and add into an
// FMA, and div.full is approximate); no fma/mad on floats at all (the contract has none, so any is
// a contraction the source did not ask for); nothing .approx; nothing .ftz.
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
