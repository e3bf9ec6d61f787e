#pragma once
// How a kernel is launched: a grid of up to three dimensions of one-dimensional blocks, and the
// dynamic shared memory each block gets. Kernels derive it from their arguments; the CUDA launcher
// and the CPU grid emulator both take it as it is.
#include <cstddef>

namespace specdec::kernels {

struct Grid {
  int x = 1, y = 1, z = 1;
};

struct LaunchShape {
  Grid grid;
  int block = 32;             // threads per block (a multiple of 32 wherever a kernel shuffles)
  std::size_t shared_bytes = 0;
};

inline constexpr int kWarpSize = 32;

}  // namespace specdec::kernels
