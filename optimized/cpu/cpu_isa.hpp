#pragma once
// The instruction sets the cpu kernels are written for, chosen at run time. Every path computes
// bitwise the same results (dot_kernels.hpp): the choice changes speed, never a bit.
//
//   portable  std::fma, any CPU
//   avx2      AVX2 + FMA + F16C: one ymm register is ops::dot's eight partial sums
//   avx512    AVX-512 F/BW/VL on top of avx2: a zmm register holds two tokens' eight partial sums
//             side by side, and 32 registers hold a 4-row × 8-token tile
//
// The path in use is the widest one this CPU and its operating system support (CPUID and XCR0:
// the OS must save the YMM / ZMM state), unless SPECDEC_CPU_ISA=portable|avx2|avx512 forces one
// (a path the machine cannot run is an error, not a silent fallback); set_isa changes it (tests).
#include <optional>
#include <string>
#include <string_view>

namespace specdec::cpu {

enum class Isa { portable, avx2, avx512 };

inline constexpr Isa kAllIsas[] = {Isa::portable, Isa::avx2, Isa::avx512};

const char* isa_name(Isa isa);
std::optional<Isa> parse_isa(std::string_view name);

// Whether this CPU and OS can run the path.
bool isa_supported(Isa isa);
// The widest supported path.
Isa best_isa();
// Why a path is unsupported here ("" when it is supported), e.g. "no AVX-512BW".
std::string isa_unsupported_reason(Isa isa);

// The path the kernels use. The first call reads SPECDEC_CPU_ISA and throws specdec::Error when it
// names an unknown path or one this machine cannot run; loading a cpu model calls it first, so
// the error reaches the user before any kernel runs.
Isa active_isa();
// Forces a path; throws specdec::Error when this machine cannot run it.
void set_isa(Isa isa);

}  // namespace specdec::cpu
