#pragma once
// Switching between fiber stacks for the grid emulator. On x86-64 a dozen instructions that save
// and restore the callee-saved registers and the stack pointer (glibc's swapcontext also saves the
// signal mask, a system call per switch, which made emulated kernels ten times slower); elsewhere
// ucontext.
#include <cstddef>

#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace specdec::kernels::emu {

struct FiberContext {
#if defined(__x86_64__)
  void* sp = nullptr;  // the saved stack pointer; the registers are on that stack
#else
  ucontext_t uc{};
#endif
};

// Prepares `ctx` so that the first switch to it runs entry() on the stack [bottom, bottom + size).
// entry must never return (it switches away for the last time instead).
void fiber_prepare(FiberContext& ctx, void* bottom, std::size_t size, void (*entry)());

// Saves the running context into `from` and resumes `to`; returns when something switches back.
void fiber_switch(FiberContext& from, FiberContext& to);

// The stack of a fiber that will never be resumed (it failed, or waited at a barrier when the
// launch was abandoned) is handed back for reuse: under AddressSanitizer its frames' redzones
// would otherwise stay poisoned and trip the next fiber that runs there.
void fiber_abandon(void* bottom, std::size_t size);

}  // namespace specdec::kernels::emu
