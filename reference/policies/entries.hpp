#pragma once
// The registry's entries, one function per policy file (registry.cpp lists them in order).
#include "reference/policies/registry.hpp"

namespace specdec::policies {

PolicyEntry fixed();
PolicyEntry schedule();
PolicyEntry hf_heuristic();
PolicyEntry hf_confidence();
PolicyEntry p_min();
PolicyEntry specdec_pp();
PolicyEntry sglang_ema();
PolicyEntry trtllm();
PolicyEntry vllm_batch();
PolicyEntry goodput();

}  // namespace specdec::policies
