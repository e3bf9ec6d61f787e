#pragma once
// Object names of the HDF5 trace layout (traces/SCHEMA.md), shared by the writer and the reader.
namespace specdec::trace_layout {

// Root attributes.
inline constexpr const char* kFormat = "format";
inline constexpr const char* kSchemaVersion = "schema_version";
inline constexpr const char* kSpecdecVersion = "specdec_version";
inline constexpr const char* kMethod = "method";
inline constexpr const char* kCreatedUtc = "created_utc";
inline constexpr const char* kExactnessContract = "exactness_contract";  // since 1.1

inline constexpr const char* kMeta = "meta";
inline constexpr const char* kModels = "models";
inline constexpr const char* kConfigJson = "config_json";
inline constexpr const char* kSamplingJson = "sampling_json";
inline constexpr const char* kSeed = "seed";
inline constexpr const char* kPath = "path";
inline constexpr const char* kFingerprint = "fingerprint";

inline constexpr const char* kPromptTokens = "prompt/tokens";
inline constexpr const char* kOutputTokens = "output/tokens";
inline constexpr const char* kStopReason = "output/stop_reason";

inline constexpr const char* kSteps = "steps";
inline constexpr const char* kPositions = "positions";
inline constexpr const char* kEmittedTokens = "emitted_tokens";
inline constexpr const char* kDraftTokens = "draft_tokens";
inline constexpr const char* kDraftParents = "draft_parents";   // aligned with draft_tokens_offsets
inline constexpr const char* kAcceptedPath = "accepted_path";
inline constexpr const char* kAcceptDecisions = "accept_decisions";
inline constexpr const char* kAcceptNodes = "accept_nodes";     // aligned with accept_decisions_offsets
inline constexpr const char* kAcceptUniforms = "accept_uniforms";
inline constexpr const char* kBonusToken = "bonus_token";
inline constexpr const char* kRandomCounters = "random_counters";
inline constexpr const char* kOffsetsSuffix = "_offsets";

// Draft-free methods (schema 1.3): /steps/draft_sources, where each draft node was copied from.
inline constexpr const char* kDraftSources = "draft_sources";    // group under /steps, with row_offsets
inline constexpr const char* kSourceOrigin = "origin";           // uint8 [N]: 0 context, 1 responses
inline constexpr const char* kSourcePosition = "position";       // int64 [N]
inline constexpr const char* kSourceMatchLength = "match_length";  // int32 [N]
inline constexpr const char* kSourceRequest = "request";         // int64 [N]

// Logits groups under /steps.
inline constexpr const char* kTargetLogits = "target_logits";
inline constexpr const char* kDraftLogits = "draft_logits";
inline constexpr const char* kStorage = "storage";  // attribute: "full" | "topk"
inline constexpr const char* kStorageFull = "full";
inline constexpr const char* kStorageTopk = "topk";
inline constexpr const char* kVocabSize = "vocab_size";
inline constexpr const char* kK = "k";
inline constexpr const char* kRowOffsets = "row_offsets";
inline constexpr const char* kRowNodes = "row_nodes";
inline constexpr const char* kFull = "full";
inline constexpr const char* kTopkIds = "topk_ids";
inline constexpr const char* kTopkValues = "topk_values";
inline constexpr const char* kLogsumexp = "logsumexp";
inline constexpr const char* kChecksum = "checksum";

// Batched traces (schema 2.x): one run per /sequences/<id>, the schedule under /batch.
inline constexpr const char* kSequences = "sequences";
inline constexpr const char* kBatch = "batch";
inline constexpr const char* kMaxInFlight = "max_in_flight";  // attribute of /batch, int64
inline constexpr const char* kSequenceIds = "sequence_ids";   // int64 [N], request order
inline constexpr const char* kSchedule = "schedule";          // group under /batch
inline constexpr const char* kScheduleSequence = "sequence";  // int64, ragged per batch step
inline constexpr const char* kScheduleStep = "step";          // int64, aligned with sequence
inline constexpr const char* kScheduleRows = "rows";          // int64, aligned with sequence

inline constexpr const char* kTiming = "timing";
inline constexpr const char* kPrefillNs = "prefill_ns";
inline constexpr const char* kTotalNs = "total_ns";
inline constexpr const char* kNsSuffix = "_ns";

}  // namespace specdec::trace_layout
