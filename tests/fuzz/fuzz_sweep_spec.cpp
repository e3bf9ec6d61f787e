// Fuzzes sweep specs (`specdec sweep SPEC.json`): reading the file (size, JSON nesting), the fields,
// prompt sets, the grid counted and expanded into cells, every cell's checks that need no model
// (methods and their parameters, draft limits, static trees, sampling, policies) and the manifest.
// What loads: cells are distinct, their count and the runs stay within the limits, and the
// manifest describes them.
#include <set>

#include "experiments/sweep/results_store.hpp"
#include "experiments/sweep/sweep_spec.hpp"
#include "reference/core/input_limits.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const std::filesystem::path file = specdec::fuzz::input_file("fuzz_sweep_spec", ".json");
  specdec::fuzz::write_input(file, data, size);
  specdec::fuzz::expect_clean("fuzz_sweep_spec", [&] {
    const specdec::sweep::SweepSpec s = specdec::sweep::load_sweep_spec(file.string());
    specdec::fuzz::require(!s.cells.empty() && s.cells.size() <= specdec::kMaxSweepCells, "fuzz_sweep_spec", "cell count out of range");
    specdec::fuzz::require(!s.prompts.empty(), "fuzz_sweep_spec", "no prompts");
    specdec::fuzz::require(static_cast<uint64_t>(s.run_count()) <= specdec::kMaxSweepRuns, "fuzz_sweep_spec", "run count beyond the limit");
    specdec::fuzz::require(s.threads >= 0 && s.threads <= specdec::kMaxThreads, "fuzz_sweep_spec", "threads beyond the limit");
    std::set<std::string> keys;
    for (const specdec::sweep::Cell& c : s.cells) {
      specdec::fuzz::require(keys.insert(c.key()).second, "fuzz_sweep_spec", "a cell appears twice: " + c.key());
      specdec::fuzz::require(!c.label().empty(), "fuzz_sweep_spec", "a cell without a label");
    }
    const nlohmann::json m = specdec::sweep::make_manifest(s, specdec::sweep::Shard{});
    specdec::fuzz::require(m["cells"].size() == s.cells.size() && m["prompts"].size() == s.prompts.size(), "fuzz_sweep_spec",
                           "the manifest does not list the cells and prompts");
    for (int64_t r = 0; r < s.run_count(); r += 1 + s.run_count() / 7) {  // a few runs, each owned by one of 3 shards
      int owners = 0;
      for (int i = 1; i <= 3; ++i) owners += specdec::sweep::shard_owns({i, 3}, r, static_cast<int64_t>(s.prompts.size()), false);
      specdec::fuzz::require(owners == 1, "fuzz_sweep_spec", "a run in " + std::to_string(owners) + " shards");
    }
  });
  return 0;
}
