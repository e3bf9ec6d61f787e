#include "experiments/cli/method_runner.hpp"

#include "reference/acceptance/acceptor.hpp"
#include "reference/core/error.hpp"
#include "reference/decoding/sequential.hpp"
#include "reference/decoding/speculative.hpp"
#include "reference/drafting/draft_model_proposer.hpp"

namespace specdec::cli {

const std::vector<std::string>& method_names() {
  static const std::vector<std::string> names = {"sequential", "draft"};
  return names;
}

void check_method_args(const DecodeArgs& a) {
  const auto& names = method_names();
  if (std::find(names.begin(), names.end(), a.method) == names.end()) {
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    throw Error("--method '" + a.method + "' is not available; known methods: " + known);
  }
  if (a.method != "sequential" && a.k < 1) throw Error("--k must be >= 1 (got " + std::to_string(a.k) + ")");
  if (a.method == "draft" && a.draft_model.empty()) throw Error("--method draft needs --draft-model DIR (a small model sharing the target's vocabulary)");
}

DecodeJob prepare_decode(const DecodeArgs& a) {
  apply_threads(a.threads);
  check_method_args(a);
  DecodeJob job;
  job.options = generation_options(a);
  job.sampling = sampling_params(a);
  job.target = load_model(a.model);
  job.prompt = prompt_tokens(a, job.target);
  return job;
}

std::optional<LoadedModel> load_drafter(const DecodeArgs& a) {
  check_method_args(a);
  if (a.method == "draft") return load_model(a.draft_model);
  return std::nullopt;
}

GenerationResult run_method(const DecodeArgs& a, const LoadedModel& target, const std::vector<int32_t>& prompt,
                            const SamplingParams& sampling, const GenerationOptions& options, DecodeObserver* observer,
                            const LoadedModel* drafter) {
  check_method_args(a);
  if (a.method == "sequential") return decode_sequential(*target.model, prompt, sampling, options, observer);
  const auto acceptor = default_acceptor(sampling);
  const int capacity = static_cast<int>(prompt.size()) + options.max_new_tokens + 1;
  std::optional<LoadedModel> loaded;
  if (!drafter) {
    loaded = load_drafter(a);
    drafter = loaded ? &*loaded : nullptr;
  }
  if (a.method == "draft") {
    DraftModelProposer proposer(*drafter->model, target.model->config(), a.k, capacity);
    return decode_speculative(*target.model, proposer, *acceptor, prompt, sampling, options, observer);
  }
  throw Error("--method '" + a.method + "' is not available");
}

nlohmann::json method_json(const DecodeArgs& a) {
  nlohmann::json j = {{"method", a.method}};
  if (a.method != "sequential") j["k"] = a.k;
  if (!a.draft_model.empty()) j["draft_model"] = a.draft_model;
  return j;
}

}  // namespace specdec::cli
