#pragma once
// The forward implementations a run can choose with --backend: "reference" (reference/model, fp32,
// the truth), "cpu" (optimized/cpu, when this build has it) and "cuda" (optimized/cuda: the
// target and draft LM on a GPU, or with SPECDEC_CUDA_DEVICE=emulator on the CPU grid emulator) and
// "plugin:PATH.so" (a shared library of the user's, plugin_api.hpp / plugin_backend.hpp). Decoding algorithms take a
// `const LanguageModel&`, so a backend is just another LanguageModel. EAGLE heads bind to the
// target's embeddings and LM head (TargetTensors) and compute on a backend through bind_head; the
// cpu backend lends its own packed copies of those to its heads (backend_lends_target_tensors).
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "reference/drafters/eagle_head.hpp"
#include "reference/drafters/medusa_heads.hpp"
#include "reference/io/safetensors.hpp"
#include "reference/model/language_model.hpp"
#include "reference/model/weights.hpp"

namespace specdec {

// Every built-in backend name specdec knows, available in this build or not: {"reference", "cpu",
// "cuda"}. Besides these, any "plugin:PATH" names a plug-in backend.
const std::vector<std::string>& known_backends();
// Whether this build can run `name` here ("cpu" needs the specdec_optimized_cpu library, "cuda"
// a usable GPU or SPECDEC_CUDA_DEVICE=emulator; "plugin:PATH" a library that loads and passes the
// plug-in checks).
bool backend_available(const std::string& name);
// Throws specdec::Error when `name` is unknown or not built, naming `option` (e.g. "--backend")
// and listing the backends this build has; for "plugin:PATH", when the library cannot be loaded
// or fails the plug-in checks (the message says which).
void check_backend(const std::string& name, const std::string& option);

// Loads the checkpoint at `path` (directory or .safetensors / index file) into backend `name`.
// "cpu" keeps the stored precision of the linear weights (F32, BF16 or F16).
std::unique_ptr<LanguageModel> load_backend(const std::string& name, const std::filesystem::path& path);

// Builds backend `name` from in-memory fp32 weights. "cpu" packs the linear weights into
// `precision` (rounding to nearest even when narrower); "reference" computes in fp32 from the
// weights as given and accepts only F32 (to compare against a narrower cpu backend, give it the
// weights rounded by round_weights, reference/model/precision.hpp).
std::unique_ptr<LanguageModel> make_backend(const std::string& name, const ModelConfig& config,
                                            const LlamaWeights& weights, Dtype precision);

// Weight bytes one single-token forward streams from memory: every layer's matrices and vectors,
// the final norm, the LM head and one embedding row, in the precision the backend stores them
// (reference: fp32). The denominator of the bandwidth limit in benchmarks.
double weight_bytes_per_step(const LanguageModel& model);

// `head` computing on backend `name` (same config, weights and target): "reference" computes in
// the reference's own code, "cpu" on optimized/cpu (cpu_eagle_head.hpp), "cuda" on the device
// (cuda_eagle_head.hpp), both bitwise equal.
EagleHead bind_head(const std::string& name, const EagleHead& head);
// The same for a head loaded for this run alone, `target_model` being the backend's model of the
// head's target (it must outlive the head): on "cpu" the head's fp32 weights move into the engine
// (cpu_eagle_head(EagleHead&&, target)) and, when `target_model` is a cpu model, the target's
// embeddings and LM head are read from it, so the run holds one packed copy of each; elsewhere
// as bind_head above.
EagleHead bind_head(const std::string& name, EagleHead&& head, const LanguageModel& target_model);
// Whether backend `name`'s head engines read the target's embeddings and LM head from the
// backend's own target model (bind_head with `target_model`): a head on it then binds to a
// TargetTensors of the target's config alone, and no fp32 copy of those tensors is loaded.
bool backend_lends_target_tensors(const std::string& name);

// `heads` computing on backend `name` (same config and weights): "cpu" on optimized/cpu
// (cpu_medusa_heads.hpp, bitwise equal to the reference); "reference", "cuda" and plug-ins in the
// reference's own code on the host — one (1, H) row per step through K small heads, while the
// target, which the heads read from, still runs on the backend.
MedusaHeads bind_medusa(const std::string& name, const MedusaHeads& heads);
// The same for heads loaded for this run alone: on "cpu" their fp32 weights move into the engine
// (cpu_medusa_heads(MedusaHeads&&)), so the run holds one packed copy; elsewhere as above.
MedusaHeads bind_medusa(const std::string& name, MedusaHeads&& heads);

// The instruction-set path the cpu backend's kernels use here: "portable", "avx2" or "avx512"
// (optimized/cpu/cpu_isa.hpp; SPECDEC_CPU_ISA forces one); "" when this build has no cpu backend.
// Throws specdec::Error when SPECDEC_CPU_ISA names an unknown path or one this CPU cannot run.
std::string cpu_kernel_path();

// Backend `name` and what it runs on, for a run's header: "reference", "cpu (avx512 kernels)",
// "cuda on NVIDIA H200 (sm_90, 132 SMs)", "cuda on the CPU grid emulator (SPECDEC_CUDA_DEVICE=
// emulator: bitwise the GPU's results, far slower)", "plugin:PATH".
std::string backend_summary(const std::string& name);

// "reference", "cpu", "cuda", "plugin:NAME" or "other" for a model built by this file's functions.
std::string backend_name(const LanguageModel& model);

}  // namespace specdec
