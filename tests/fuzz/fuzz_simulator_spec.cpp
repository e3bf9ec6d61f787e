// Fuzzes the simulator's spec readers (first byte: which one, mod 4 — '0' hardware, '1' model
// shape, '2' drafter, '3' engine; the rest: the spec's JSON) and prices one scenario with what
// parses, so that a spec whose numbers pass the readers but make a prediction non-finite is found.
#include <cmath>
#include <string>

#include "reference/io/json_input.hpp"
#include "simulator/predictor.hpp"
#include "simulator/spec_library.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace {

using namespace specdec::sim;

// The bundled specs the parsed one is combined with (read once).
struct Base {
  ModelShape target;
  HardwareSpec hardware;
  EngineSpec engine;
  DrafterSpec drafter;
};

const Base& base() {
  static const Base b = [] {
    const SpecLibrary lib;
    Base out;
    out.target = lib.model("llama-3.1-8b");
    out.hardware = lib.hardware("h100-sxm");
    out.engine = lib.engine("sglang");
    out.drafter = lib.drafter_spec("eagle3-llama3.1-8b");
    return out;
  }();
  return b;
}

// Every number a prediction reports must be finite (predict() itself refuses otherwise).
void check(const Prediction& p) {
  for (const double v : {p.tokens_per_step, p.tpot_s, p.ttft_s, p.throughput_tokens_per_s, p.sequential_tpot_s,
                         p.speedup, p.weight_bytes_per_device, p.kv_bytes_per_device})
    specdec::fuzz::require(std::isfinite(v), "fuzz_simulator_spec", "a prediction reported a non-finite number");
}

void predict_with(const ModelShape& target, const HardwareSpec& hw, const EngineSpec& engine, const DrafterSpec& spec) {
  Scenario s;
  s.target = target;
  s.hardware = hw;
  s.engine = engine;
  s.workload.prompt_len = 128;
  s.workload.output_len = 16;
  check(predict(s, false));  // sequential
  const ModelShape* draft_model = spec.method == Method::draft_model ? &target : nullptr;
  s.drafter = resolve_drafter(spec, target, draft_model);
  s.plan.method = spec.method;
  s.plan.k = 4;
  s.acceptance = iid_acceptance(0.7);
  check(predict(s, false));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const int kind = data[0] % 4;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const Base& b = base();
  specdec::fuzz::expect_clean("fuzz_simulator_spec", [&] {
    const nlohmann::json j = specdec::parse_json(text, "spec.json");
    switch (kind) {
      case 0:
        predict_with(b.target, parse_hardware_spec(j, "spec.json"), b.engine, b.drafter);
        break;
      case 1:
        predict_with(parse_model_shape(j, "spec.json"), b.hardware, b.engine, b.drafter);
        break;
      case 2:
        predict_with(b.target, b.hardware, b.engine, parse_drafter_spec(j, "spec.json"));
        break;
      default:
        predict_with(b.target, b.hardware, parse_engine_spec(j, "spec.json"), b.drafter);
        break;
    }
  });
  return 0;
}
