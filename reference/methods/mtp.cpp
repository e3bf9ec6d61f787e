// MTP — multi-token prediction modules (DeepSeek-V3 report; GLM-4.5, Qwen3-Next, MiMo): the
// module the target was trained with drafts autoregressively at feature level, like EAGLE-1 with
// normed inputs, a full decoder layer of the target's kind and the final norm before the LM head.
// A chain (modules reused: module = step mod n, as vLLM), a static tree or a dynamic (top-k per
// step, as SGLang) tree, drafted by EagleProposer.
//
// Where the engines differ, a named variant (docs/drafters.md, "MTP"):
//   checkpoint  the checkpoint's own reference: DeepSeek-V3's report feeds the next depth the
//               decoder layer's output before the final norm; Qwen3-Next, MiMo and the speculators
//               library feed the final-normed state (their modules return it). No zeroing.
//   vllm        vLLM's deepseek_mtp.py: hidden + residual (pre-norm) fed back, and the embedding of
//               the pair at position 0 zeroed.
//   sglang      SGLang's deepseek_nextn.py: the shared head's normed state fed back, no zeroing.
#include "reference/core/error.hpp"
#include "reference/methods/eagle_family.hpp"
#include "reference/methods/entries.hpp"

namespace specdec::methods {

namespace {

std::unique_ptr<Proposer> make(const MethodSpec& s, const ProposerInputs& in) {
  EagleOptions o = eagle_shape_options(s);
  const std::string variant = s.params.at("variant").get<std::string>();
  if (variant == "vllm") {
    o.feedback = MtpFeedback::prenorm;
    o.zero_embedding_at_position_0 = true;
  } else if (variant == "sglang") {
    o.feedback = MtpFeedback::normed;
  } else {
    o.feedback = in.head->config().layout == "deepseek" ? MtpFeedback::prenorm : MtpFeedback::normed;
  }
  o.extra_modules = in.extra_modules;
  if (static_cast<int>(o.extra_modules.size()) + 1 != in.head->config().num_modules) {
    throw Error("--method mtp: the checkpoint has " + std::to_string(in.head->config().num_modules) + " modules, " +
                std::to_string(o.extra_modules.size() + 1) + " were given to the proposer");
  }
  return std::make_unique<EagleProposer>(*in.head, std::move(o), in.capacity);
}

}  // namespace

MethodEntry mtp() {
  MethodEntry e;
  e.name = "mtp";
  e.aliases = {"nextn", "deepseek-mtp"};
  e.title = "MTP";
  e.summary = "the target's own multi-token-prediction module(s): one decoder layer on its last hidden state; chain or tree";
  e.drafter = {DrafterNeed::Kind::eagle_head, EagleKind::mtp, "MTP module(s) of the target (DeepSeek-V3, Qwen3-Next, MiMo or speculators layout)", "mtp"};
  e.shapes.chain = e.shapes.static_tree = e.shapes.dynamic_tree = true;
  MethodParam variant;
  variant.name = "variant";
  variant.choices = {"checkpoint", "vllm", "sglang"};
  variant.doc = "how a chained step's feature is made where engines differ: checkpoint (the layout's own reference), "
                "vllm (pre-norm hidden fed back, position-0 embedding zeroed), sglang (normed hidden fed back)";
  e.params = {variant};
  e.make_proposer = &make;
  e.schedule = &eagle_family_schedule;
  e.cost_siblings = {"eagle", "eagle3"};
  return e;
}

}  // namespace specdec::methods
