// specdec generate: decode a prompt and print the output with its statistics.
#include <nlohmann/json.hpp>
#include <ostream>

#include "experiments/cli/options.hpp"
#include "reference/decoding/sequential.hpp"
#include "reference/model/presets.hpp"

namespace specdec::cli {

int run_generate(const std::vector<std::string>& args, CommandIO& io) {
  DecodeArgs a;
  po::options_description desc("generate options");
  add_decode_options(desc, a);
  if (!parse_options(args, desc, io, "specdec generate --model DIR (--prompt TEXT | --prompt-ids IDS) [options]")) return 0;
  apply_threads(a.threads);
  const GenerationOptions options = generation_options(a);
  const SamplingParams sampling = sampling_params(a);
  LoadedModel m = load_model(a.model);
  const std::vector<int32_t> prompt = prompt_tokens(a, m);

  const GenerationResult r = decode_sequential(*m.model, prompt, sampling, options);

  const std::string text = m.vocabulary ? m.vocabulary->decode(r.tokens) : "";
  if (a.json) {
    nlohmann::json j = {
        {"model", m.path},
        {"model_fingerprint", m.fingerprint},
        {"method", a.method},
        {"sampling", sampling},
        {"prompt_tokens", prompt},
        {"output_tokens", r.tokens},
        {"stop_reason", r.stop_reason},
        {"stats",
         {{"generated_tokens", r.tokens.size()},
          {"target_forwards", r.stats.target_forwards},
          {"prefill_ms", r.stats.prefill_ns / 1e6},
          {"decode_ms", r.stats.decode_ns / 1e6},
          {"decode_tokens_per_second", r.decode_tokens_per_second()}}},
    };
    if (m.vocabulary) j["output_text"] = text;
    io.out << j.dump() << "\n";
    return 0;
  }
  const ModelConfig& c = m.model->config();
  io.out << "model    " << m.path << " (" << c.architecture << ", " << parameter_count(c) / 1e6 << "M parameters, "
         << m.stored_dtype << ")\n";
  io.out << "method   " << a.method << ", " << sampling.to_string() << "\n";
  if (m.vocabulary) {
    io.out << "prompt   " << printable(m.vocabulary->decode(prompt)) << "  (" << prompt.size() << " tokens)\n";
    io.out << "output   " << printable(text) << "\n";
  }
  io.out << "tokens  ";
  for (int32_t t : r.tokens) io.out << ' ' << t;
  io.out << "\n";
  io.out << "stats    " << r.tokens.size() << " tokens, stop: " << r.stop_reason << ", " << r.stats.target_forwards
         << " target forwards, prefill " << r.stats.prefill_ns / 1e6 << " ms, decode " << r.decode_tokens_per_second()
         << " tokens/s\n";
  return 0;
}

}  // namespace specdec::cli
