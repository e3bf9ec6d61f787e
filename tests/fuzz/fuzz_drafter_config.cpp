// Fuzzes an EAGLE-family head's config.json (SafeAILab EAGLE-1/EAGLE-3, AWS P-EAGLE, speculators)
// against the tensor names of each published layout; what parses must validate or be refused.
#include <vector>

#include "reference/drafters/eagle_config.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace {
// Sorted tensor names of the layouts whose configs are flat (the kind comes from the tensors).
const std::vector<std::vector<std::string>>& layouts() {
  static const std::vector<std::vector<std::string>> l = {
      {},
      {"embed_tokens.weight", "fc.weight", "layers.0.mlp.down_proj.weight", "layers.0.self_attn.q_proj.weight"},
      {"d2t", "fc.weight", "lm_head.weight", "midlayer.hidden_norm.weight", "midlayer.self_attn.q_proj.weight", "t2d"},
      {"fc.weight", "layers.0.self_attn.q_proj.weight", "lm_head.weight", "mask_hidden"},
  };
  return l;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const auto& names = layouts()[data[0] % layouts().size()];
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  specdec::fuzz::expect_clean("fuzz_drafter_config", [&] {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded()) return;  // not JSON: the loaders report that themselves
    const specdec::EagleHeadConfig c = specdec::parse_eagle_config(j, names, "config.json");
    specdec::validate_eagle_config(c, "config.json");
  });
  return 0;
}
