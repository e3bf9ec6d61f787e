#pragma once
// Upper bounds on sizes taken from options, spec files and Python arguments, in one place so the
// command line, sweep specs, simulator specs and the Python module enforce the same numbers
// (docs/reliability.md lists them). Each is far beyond any real use and far below what would crash,
// hang or exhaust memory. The drafting bounds (K, tree nodes, top-k) are in
// reference/drafting/draft_limits.hpp.
#include <cstdint>
#include <string>

#include "reference/core/error.hpp"

namespace specdec {

// Worker threads (--threads, a sweep's "threads", Python set_num_threads): libgomp aborts or
// crashes when asked for tens of thousands.
inline constexpr int kMaxThreads = 1024;

// Cells of one sweep grid (methods x K x temperatures x ...), counted before any is built.
inline constexpr uint64_t kMaxSweepCells = 100000;

// Runs of one sweep (cells x prompts): each is a decode of seconds or more, and the runner keeps a
// list of the runs still to do, so a grid within kMaxSweepCells over a huge prompt file is refused
// before that list is built.
inline constexpr uint64_t kMaxSweepRuns = 1000000;

// A prompt's text before tokenizing (--prompt, --file, prompt files, Python).
inline constexpr uint64_t kMaxPromptBytes = uint64_t(64) << 20;

// What a tokenizer may make of its input: normalized text at most this many times the input's
// bytes plus kMaxTokenizerExpansionSlack (real normalizers grow text by a few percent), and the
// token ids a post-processor template adds.
inline constexpr uint64_t kMaxTokenizerExpansion = 16;
inline constexpr uint64_t kMaxTokenizerExpansionSlack = uint64_t(1) << 20;
inline constexpr uint64_t kMaxTemplateTokens = 4096;

// A token id a tokenizer file names (vocabulary, added tokens, post-processor templates, BOS/EOS):
// at most 2^24 - 1. The largest real vocabularies hold about 256K tokens (Gemma), 64 times fewer;
// under this bound a vocabulary's size (largest id + 1) can never overflow int32, and every id is
// exact as a float32.
inline constexpr int64_t kMaxTokenId = (int64_t(1) << 24) - 1;

// Throws "<who>: <what> is <value>, more than specdec supports (<limit>)".
inline void check_input_limit(const std::string& who, const std::string& what, long long value, unsigned long long limit) {
  if (value > 0 && (unsigned long long)value > limit) {
    throw Error(who + ": " + what + " is " + std::to_string(value) + ", more than specdec supports (" +
                std::to_string(limit) + "); see docs/reliability.md");
  }
}

// The cost simulator's sizes (specdec simulate, sweeps, calibration rows, hardware specs). Real
// serving batches hold at most a few thousand sequences and tensor parallelism spans at most a rack
// (72 GPUs); within these bounds the simulator's integer products (a batch times a tree's 1024
// leaves) stay exact in 32 bits.
inline constexpr int kMaxSimulatedBatch = 65536;
inline constexpr int kMaxTensorParallel = 1024;  // tensor-parallel degree; devices of one instance
// Devices one capacity plan may use: far beyond any deployment; a plan needing more is reported as
// such, never as a wrapped count.
inline constexpr long long kMaxPlannedDevices = 1000000;
// Settings one simulator search (--best-tree grid) evaluates, counted before any is built: each is
// a tree of up to 1024 nodes priced in full.
inline constexpr uint64_t kMaxSearchSettings = 10000;

}  // namespace specdec
