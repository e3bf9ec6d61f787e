#pragma once
// The Device of tests/kernels/kernel_cases.hpp on the CPU grid emulator: every launch runs under
// three thread schedules and must leave memory identical.
#include <cstring>
#include <vector>

#include "kernels/emulator/grid_emulator.hpp"

namespace specdec::kernels {

struct EmulatedDevice {
  emu::DeviceMemory memory;
  uint64_t seed = 1;

  template <class T>
  T* alloc(std::size_t n) {
    return memory.allocate<T>(n);
  }
  template <class T>
  T* upload(const std::vector<T>& host) {
    T* p = alloc<T>(host.size());
    if (!host.empty()) std::memcpy(p, host.data(), host.size() * sizeof(T));
    return p;
  }
  template <class T>
  std::vector<T> download(const T* p, std::size_t n) {
    return std::vector<T>(p, p + n);
  }
  template <class Kernel>
  void launch(const Kernel& k) {
    emu::launch(memory, k, seed++);
  }
};

}  // namespace specdec::kernels
