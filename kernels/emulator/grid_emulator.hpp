#pragma once
// A CPU emulator of the CUDA execution model, so that the very kernel bodies nvcc compiles for the
// GPU run in the cpu test suite. Each thread of a block is a fiber; a block barrier and a warp
// shuffle suspend the fiber until every thread (lane) it waits for has arrived, so the body keeps
// its CUDA meaning. What it checks, loudly (EmulationError):
//   - a barrier not reached by every thread of the block, or threads waiting at different
//     barriers (the call site tells them apart);
//   - a shuffle whose warp does not arrive whole at the same call site, or that names a lane
//     that does not exist;
//   - a result that depends on the thread schedule: launch() runs the grid under the forward,
//     reverse and a random interleaving of threads (and order of blocks) from the same memory
//     state and compares every byte of emulated device memory afterwards;
//   - reads of memory nobody wrote: shared memory and fresh device allocations start as NaN bytes
//     (0xff), which propagate into results;
//   - out-of-bounds accesses: every allocation and every block's shared memory is its own heap
//     block, so AddressSanitizer (the emulator tests run under it) reports an overrun.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <source_location>
#include <string>
#include <vector>

#include "kernels/exec/launch_shape.hpp"
#include "reference/core/error.hpp"

namespace specdec::kernels::emu {

struct EmulationError : Error {
  using Error::Error;
};

enum class Schedule { kForward, kReverse, kRandom };
const char* to_string(Schedule s);

class BlockRunner;

// What a kernel body sees on the emulator: the same members as kernels::DeviceContext.
class Context {
 public:
  int thread() const { return thread_; }
  int block_dim() const { return block_dim_; }
  int block_x() const { return block_x_; }
  int block_y() const { return block_y_; }
  int block_z() const { return block_z_; }
  int lane() const { return thread_ % kWarpSize; }

  template <class T>
  T* shared() const {
    return static_cast<T*>(shared_);
  }

  void sync(std::source_location where = std::source_location::current()) const;
  float shfl_xor(float v, int mask, std::source_location where = std::source_location::current()) const;
  float shfl(float v, int src_lane, std::source_location where = std::source_location::current()) const;

 private:
  friend class BlockRunner;
  BlockRunner* runner_ = nullptr;
  void* shared_ = nullptr;
  int thread_ = 0, block_dim_ = 0, block_x_ = 0, block_y_ = 0, block_z_ = 0;
};

using Body = std::function<void(Context&)>;

// Runs `body` once on every thread of every block of `shape` under one schedule. `seed` drives
// the random schedule. Throws EmulationError on a barrier or shuffle misuse.
void run(const LaunchShape& shape, Schedule schedule, uint64_t seed, const Body& body);

// Emulated device memory. Allocations start as NaN bytes; each is its own heap block.
class DeviceMemory {
 public:
  DeviceMemory() = default;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  ~DeviceMemory();

  void* allocate(std::size_t bytes);
  template <class T>
  T* allocate(std::size_t count) {
    return static_cast<T*>(allocate(count * sizeof(T)));
  }
  void release(void* p);
  std::size_t allocations() const { return blocks_.size(); }

  // The contents of every allocation, in allocation order, and putting them back.
  std::vector<std::vector<unsigned char>> snapshot() const;
  void restore(const std::vector<std::vector<unsigned char>>& s);
  // "allocation 2 (4096 bytes) byte 12" for the first byte where a and b differ, or "".
  std::string first_difference(const std::vector<std::vector<unsigned char>>& a,
                               const std::vector<std::vector<unsigned char>>& b) const;

 private:
  struct Block {
    unsigned char* data;
    std::size_t bytes;
  };
  std::vector<Block> blocks_;
};

// Runs the grid under the forward, reverse and a random schedule, each from the memory state
// before the launch, and fails (EmulationError naming the schedules and the first differing byte)
// unless all leave device memory identical. Memory is left as the launch leaves it.
void launch(DeviceMemory& memory, const LaunchShape& shape, uint64_t seed, const Body& body);

// The same for a kernel functor: launch(memory, k.shape(), seed, body calling k).
template <class Kernel>
void launch(DeviceMemory& memory, const Kernel& k, uint64_t seed = 1) {
  launch(memory, k.shape(), seed, [&k](Context& ctx) { k(ctx); });
}

}  // namespace specdec::kernels::emu
