// Fuzzes static tree specs ("[[0],[1],[0,0]]"): parsing, validation and layout; a shape that is
// laid out must have parents before children and depths that match its paths.
#include "reference/drafting/tree_choices.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  specdec::fuzz::expect_clean("fuzz_tree_choices", [&] {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded()) return;
    const specdec::TreeChoices choices = specdec::parse_tree_choices(j, "--tree");
    const specdec::TreeShape s = specdec::make_tree_shape(choices, "--tree");
    for (int n = 0; n < s.size(); ++n) {
      specdec::fuzz::require(s.parents[n] < n, "fuzz_tree_choices", "a parent follows its child");
      specdec::fuzz::require(s.depths[n] == static_cast<int>(s.paths[n].size()), "fuzz_tree_choices", "depth != path length");
    }
    specdec::fuzz::require(specdec::parse_tree_choices(specdec::tree_choices_to_json(s.paths), "round trip") == s.paths,
                           "fuzz_tree_choices", "tree choices do not round-trip");
  });
  return 0;
}
