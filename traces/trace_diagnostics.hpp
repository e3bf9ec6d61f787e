#pragma once
// HDF5 form of the optional diagnostic tensors of schema 1.2 (traces/SCHEMA.md, "Per-layer
// target tensors" and "Drafter inputs and outputs"): /steps/target_layers and /steps/drafter_io.
// Used by write_trace and read_trace.
#include "traces/hdf5.hpp"
#include "traces/trace.hpp"

namespace specdec::trace_layout {
inline constexpr const char* kTargetLayers = "target_layers";  // group under /steps
inline constexpr const char* kNumLayers = "num_layers";         // attribute, int64
inline constexpr const char* kHiddenSize = "hidden_size";       // attribute, int64
inline constexpr const char* kSubsteps = "substeps";            // attribute, string "attention,mlp"
inline constexpr const char* kHidden = "hidden";                // float32 [R*L*U, H]
inline constexpr const char* kDrafterIO = "drafter_io";         // group under /steps
inline constexpr const char* kTokens = "tokens";                // int32 [N]
inline constexpr const char* kPositionsIO = "positions";        // int64 [N]
inline constexpr const char* kCalls = "calls";                  // int32 [N]
inline constexpr const char* kFeatures = "features";            // float32 [N, F]
inline constexpr const char* kLogitsIO = "logits";              // float32 [N, Vd]
}  // namespace specdec::trace_layout

namespace specdec {

// Writes the groups the trace has (nothing when it has none).
void write_trace_diagnostics(h5::Group& steps, const Trace& trace);
// Reads the groups the file has into `trace` (whose steps are already sized), checking every
// dtype and shape; throws specdec::Error naming the object.
void read_trace_diagnostics(const h5::Group& steps, Trace& trace);

// "attention,mlp" <-> {"attention", "mlp"}.
std::vector<std::string> split_substeps(const std::string& list);
std::string join_substeps(const std::vector<std::string>& names);

}  // namespace specdec
