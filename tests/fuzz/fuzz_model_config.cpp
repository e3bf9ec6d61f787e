// Fuzzes config.json of a target model: parsing, validation, and the round trip of what parses
// (to JSON and back gives the same config).
#include "reference/model/model_config.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static const auto path = specdec::fuzz::input_file("model-config", ".json");
  specdec::fuzz::write_input(path, data, size);
  specdec::fuzz::expect_clean("fuzz_model_config", [&] {
    const specdec::ModelConfig c = specdec::load_model_config(path);
    const nlohmann::json j = specdec::model_config_to_json(c);
    const specdec::ModelConfig again = specdec::parse_model_config(j, "round trip");
    specdec::fuzz::require(specdec::model_config_to_json(again) == j, "fuzz_model_config",
                           "config.json does not round-trip: " + j.dump());
  });
  return 0;
}
