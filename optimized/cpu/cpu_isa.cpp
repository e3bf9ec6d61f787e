#include "optimized/cpu/cpu_isa.hpp"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <mutex>

#include "reference/core/error.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define SPECDEC_CPU_X86 1
#endif

namespace specdec::cpu {

namespace {

struct Features {
  bool avx2 = false, fma = false, f16c = false, ymm_state = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, zmm_state = false;
};

Features detect() {
  Features f;
#ifdef SPECDEC_CPU_X86
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = (c >> 27) & 1u, avx = (c >> 28) & 1u;
  f.fma = (c >> 12) & 1u;
  f.f16c = (c >> 29) & 1u;
  if (osxsave && avx) {
    // XCR0: which register state the OS saves on a context switch. Bits 1-2: XMM and the upper
    // YMM halves; bits 5-7: the opmask registers and the ZMM state.
    uint32_t lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    f.ymm_state = (lo & 0x6u) == 0x6u;
    f.zmm_state = f.ymm_state && (lo & 0xE0u) == 0xE0u;
  }
  if (__get_cpuid_max(0, nullptr) >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    f.avx2 = (b >> 5) & 1u;
    f.avx512f = (b >> 16) & 1u;
    f.avx512bw = (b >> 30) & 1u;
    f.avx512vl = (b >> 31) & 1u;
  }
#endif
  return f;
}

const Features& features() {
  static const Features f = detect();
  return f;
}

std::atomic<int> g_isa{-1};  // -1: not chosen yet
std::mutex g_choose;

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::portable: return "portable";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
  }
  return "?";
}

std::optional<Isa> parse_isa(std::string_view name) {
  for (Isa isa : kAllIsas)
    if (name == isa_name(isa)) return isa;
  return std::nullopt;
}

std::string isa_unsupported_reason(Isa isa) {
  const Features& f = features();
  std::string missing;
  const auto need = [&missing](bool have, const char* what) {
    if (!have) missing += missing.empty() ? what : std::string(", ") + what;
  };
  if (isa == Isa::portable) return "";
#ifndef SPECDEC_CPU_X86
  return "not an x86-64 CPU";
#endif
  need(f.avx2, "AVX2");
  need(f.fma, "FMA");
  need(f.f16c, "F16C");
  need(f.ymm_state, "OS support for the YMM registers (XCR0)");
  if (isa == Isa::avx512) {
    need(f.avx512f, "AVX-512F");
    need(f.avx512bw, "AVX-512BW");
    need(f.avx512vl, "AVX-512VL");
    need(f.zmm_state, "OS support for the ZMM registers (XCR0)");
  }
  return missing.empty() ? "" : "this CPU lacks " + missing;
}

bool isa_supported(Isa isa) { return isa_unsupported_reason(isa).empty(); }

Isa best_isa() {
  if (isa_supported(Isa::avx512)) return Isa::avx512;
  if (isa_supported(Isa::avx2)) return Isa::avx2;
  return Isa::portable;
}

Isa active_isa() {
  const int chosen = g_isa.load(std::memory_order_acquire);
  if (chosen >= 0) return static_cast<Isa>(chosen);
  std::lock_guard<std::mutex> lock(g_choose);
  if (g_isa.load() >= 0) return static_cast<Isa>(g_isa.load());
  Isa isa = best_isa();
  if (const char* env = std::getenv("SPECDEC_CPU_ISA"); env != nullptr && *env != '\0') {
    const auto forced = parse_isa(env);
    if (!forced)
      throw Error(std::string("SPECDEC_CPU_ISA='") + env + "' is not a cpu kernel path: expected portable, avx2 or avx512");
    if (!isa_supported(*forced))
      throw Error(std::string("SPECDEC_CPU_ISA=") + env + ": " + isa_unsupported_reason(*forced) +
                  " (this machine runs: " + isa_name(best_isa()) + " and the narrower paths)");
    isa = *forced;
  }
  g_isa.store(static_cast<int>(isa), std::memory_order_release);
  return isa;
}

void set_isa(Isa isa) {
  if (!isa_supported(isa))
    throw Error(std::string("cpu kernel path ") + isa_name(isa) + " cannot run here: " + isa_unsupported_reason(isa));
  std::lock_guard<std::mutex> lock(g_choose);
  g_isa.store(static_cast<int>(isa), std::memory_order_release);
}

}  // namespace specdec::cpu
