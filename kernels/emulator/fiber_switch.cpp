#include "kernels/emulator/fiber_switch.hpp"

#include <cstdint>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

namespace specdec::kernels::emu {

#if defined(__x86_64__)

extern "C" void specdec_emu_switch(void** save_sp, void* next_sp);

// System V x86-64: rbx, rbp, r12–r15 are callee-saved; the return address is on the stack.
asm(R"(
  .pushsection .text
  .globl specdec_emu_switch
  .type specdec_emu_switch, @function
specdec_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size specdec_emu_switch, .-specdec_emu_switch
  .popsection
)");

void fiber_prepare(FiberContext& ctx, void* bottom, std::size_t size, void (*entry)()) {
  // From the 16-byte aligned top: a null return address (entry never returns), entry's address
  // for the first switch's `ret`, and six zeros for the registers it pops. entry then starts with
  // rsp ≡ 8 (mod 16), as after a call.
  auto top = (reinterpret_cast<std::uintptr_t>(bottom) + size) & ~std::uintptr_t(15);
  auto* sp = reinterpret_cast<void**>(top);
  *--sp = nullptr;
  *--sp = reinterpret_cast<void*>(entry);
  for (int i = 0; i < 6; ++i) *--sp = nullptr;
  ctx.sp = sp;
}

void fiber_switch(FiberContext& from, FiberContext& to) { specdec_emu_switch(&from.sp, to.sp); }

#else

void fiber_prepare(FiberContext& ctx, void* bottom, std::size_t size, void (*entry)()) {
  getcontext(&ctx.uc);
  ctx.uc.uc_stack.ss_sp = bottom;
  ctx.uc.uc_stack.ss_size = size;
  ctx.uc.uc_link = nullptr;
  makecontext(&ctx.uc, entry, 0);
}

void fiber_switch(FiberContext& from, FiberContext& to) { swapcontext(&from.uc, &to.uc); }

#endif

void fiber_abandon(void* bottom, std::size_t size) {
#if defined(__SANITIZE_ADDRESS__)
  __asan_unpoison_memory_region(bottom, size);
#else
  (void)bottom, (void)size;
#endif
}

}  // namespace specdec::kernels::emu
