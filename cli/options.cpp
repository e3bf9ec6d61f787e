#include "cli/options.hpp"

#include <iostream>

#include "cli/known_options.hpp"
#include "reference/core/error.hpp"
#include "reference/methods/registry.hpp"
#include "reference/policies/registry.hpp"

namespace specdec::cli {

namespace {

// "decoding method: sequential (one target forward per token (the baseline)) | draft (...) | ...".
const std::string& method_help() {
  static const std::string text = [] {
    std::string s = "decoding method, NAME[,key=value...] for its parameters (e.g. ngram,n_min=2):";
    for (const MethodEntry& e : method_registry()) s += (e.name == "sequential" ? " " : " | ") + e.name;
    return s + " (`specdec methods` lists them with their drafters and shapes)";
  }();
  return text;
}

// "speculation policy (how deep to draft each step): fixed | schedule | ... ".
const std::string& policy_help() {
  static const std::string text = [] {
    std::string s = "speculation policy, NAME[,key=value...] (lists as 1/3/7, maps as 1:4/8:2): how deep each step drafts:";
    for (const PolicyEntry& e : policy_registry()) s += (e.name == policy_registry().front().name ? " " : " | ") + e.name;
    return s + " (`specdec policies` lists them with their parameters; docs/policies.md); the output never changes";
  }();
  return text;
}

}  // namespace

void add_decode_options(po::options_description& desc, DecodeArgs& a) {
  desc.add_options()
      ("model", po::value(&a.model)->required(), "checkpoint directory (config.json + safetensors), a .safetensors file beside a config.json, or a GGUF file")
      ("prompt", po::value(&a.prompt), "prompt text, encoded by the checkpoint's tokenizer (tokenizer.json, tokenizer.model, vocab.json, or a GGUF file's own)")
      ("prompt-ids", po::value(&a.prompt_ids), "prompt as comma-separated token ids")
      ("method", po::value<std::string>()->default_value(a.method.name)->notifier([&a](const std::string& text) {
         // NAME[,key=value...]: an alias names its method; unknown names and parameters are refused here
         const MethodSpec named = parse_method_text(text, "--method");
         a.method.name = named.name;
         a.method.params = named.params;
       }), method_help().c_str())
      ("drafter", po::value(&a.drafter), "drafter checkpoint directory: a draft LM sharing the target's vocabulary (draft), or an EAGLE-1 (eagle), EAGLE-3 (eagle3) or P-EAGLE (peagle) head")
      ("policy", po::value<std::string>()->default_value(a.policy.label())->notifier([&a](const std::string& text) {
         a.policy = parse_policy_spec(text, "--policy");  // errors name --policy, the parameter and the range
       }), policy_help().c_str())
      ("draft-budget-ms", po::value(&a.draft_budget_ms)->default_value(a.draft_budget_ms), "a drafter whose proposal takes longer than this many ms is switched off after the step (0 = no budget)")
      ("fallback-method", po::value<std::string>()->notifier([&a](const std::string& name) {
         a.fallback_method = canonical_method_name(name);
       }), "a second speculative method, used after the --method's drafter fails (throws, NaN logits, invalid draft, over the budget); it takes the same shape options (--k, --tree, ...)")
      ("fallback-drafter", po::value(&a.fallback_drafter), "the drafter checkpoint directory of --fallback-method")
      ("drafter-fault", po::value(&a.drafter_fault), "inject a fault into the drafter at its STEP-th proposal, to exercise fallback: KIND@STEP with KIND throw | nan (a NaN logit) | slow (sleeps twice --draft-budget-ms, or 50 ms without one)")
      ("k", po::value(&a.method.k)->default_value(a.method.k), "draft length K: tokens drafted per step (chains; P-EAGLE's parallel depth)")
      ("tree", po::value(&a.method.tree)->default_value(a.method.tree), "draft shape for eagle/eagle3/peagle: chain | dynamic (EAGLE-2; eagle/eagle3) | mc_sim_7b_63 | paths of child ranks as JSON, inline or in a file, e.g. '[[0],[1],[0,0]]'")
      ("depth", po::value(&a.method.depth)->default_value(a.method.depth), "dynamic tree: expansion depth")
      ("tree-top-k", po::value(&a.method.tree_top_k)->default_value(a.method.tree_top_k), "dynamic tree: children kept per node and frontier width")
      ("total-tokens", po::value(&a.method.total_tokens)->default_value(a.method.total_tokens), "dynamic tree: tokens verified per step (draft nodes + 1)")
      ("force-depth", po::bool_switch(&a.method.force_depth), "P-EAGLE: allow K beyond the depth the head was trained for")
      ("sampling", po::value(&a.sampling)->default_value(a.sampling), "greedy | sample | coupled")
      ("temperature", po::value(&a.temperature)->default_value(a.temperature), "sampling temperature (> 0)")
      ("top-k", po::value(&a.top_k)->default_value(a.top_k), "keep the k most likely tokens (0 = off)")
      ("top-p", po::value(&a.top_p)->default_value(a.top_p), "nucleus sampling mass in (0, 1] (1 = off)")
      ("seed", po::value(&a.seed)->default_value(a.seed), "random seed (Philox key)")
      ("max-new-tokens", po::value(&a.max_new_tokens)->default_value(a.max_new_tokens), "tokens to generate at most")
      ("ignore-eos", po::bool_switch(&a.ignore_eos), "do not stop at the end-of-sequence token")
      ("threads", po::value(&a.threads)->default_value(a.threads), "worker threads (0 = the cores other processes are not busy on, at least one); results do not depend on it")
      ("backend", po::value(&a.backend)->default_value(a.backend), "forward implementation of the target, a draft LM and an EAGLE-family head: reference | cpu (optimized, when built) | cuda (the target, a draft LM and EAGLE-family and MTP heads on a GPU, Medusa heads in the reference's code on the host; SPECDEC_CUDA_DEVICE=emulator runs it on the CPU grid emulator) | plugin:PATH.so (a plug-in backend, docs/validation.md)")
      ("json", po::bool_switch(&a.json), "print one JSON object instead of text");
}

void add_forced_acceptance_option(po::options_description& desc, std::optional<ForcedAcceptance>& forced) {
  desc.add_options()("forced-acceptance", po::value<std::string>()->notifier([&forced](const std::string& spec) {
    try {
      forced = parse_forced_acceptance(spec);
    } catch (const Error& e) {
      throw Error(std::string("--forced-acceptance: ") + e.what());
    }
  }), "benchmark at a chosen acceptance instead of the real rule, as the serving engines force it: rates=P1,...,PK (vLLM synthetic_acceptance_rates: unconditional P(first i drafts accepted), non-increasing, in [0, 1]; positions beyond the list are rejected), al=L (target tokens per step incl. the bonus, >= 1: floor(L-1) drafts or one more with probability frac(L-1), capped at K; vLLM synthetic_acceptance_length, SGLang SGLANG_SIMULATE_ACC_LEN) or accepted=X (TensorRT-LLM TLLM_SPEC_DECODE_FORCE_NUM_ACCEPTED_TOKENS: accepted drafts, fractions allowed, = al=X+1); the output is NOT the model's text (docs/benchmarks.md)");
}

void add_typical_acceptance_option(po::options_description& desc, std::optional<TypicalAcceptance>& typical) {
  desc.add_options()("typical-acceptance", po::value<std::string>()->implicit_value("")->notifier([&typical](const std::string& spec) {
    try {
      typical = parse_typical_acceptance(spec);
    } catch (const Error& e) {
      throw Error(std::string("--typical-acceptance: ") + e.what());
    }
  }), "Medusa's typical acceptance (LOSSY: the output is not guaranteed to be the target's): accept a draft x when p(x) > min(epsilon, delta * exp(-H(p))) under the run's sampling, take the longest accepted path; [epsilon=E,delta=D], the option alone = epsilon=0.09,delta=0.3 (Medusa's posterior_threshold / posterior_alpha); sample or coupled sampling only; not with --forced-acceptance (docs/exactness.md)");
}

bool parse_options(const std::vector<std::string>& args, po::options_description& desc, CommandIO& io,
                   const std::string& usage_line, po::positional_options_description* positional) {
  desc.add_options()("help,h", po::bool_switch(), "show this help");
  po::variables_map vm;
  auto parser = po::command_line_parser(args).options(desc);
  if (positional) parser.positional(*positional);
  po::store(parse_known_options(parser, desc), vm);
  // Bound variables are only written by notify(), which also enforces required options: look at
  // --help in the map first so that it works without them.
  if (vm.count("help") && vm["help"].as<bool>()) {
    io.out << "usage: " << usage_line << "\n\n" << desc << "\n";
    return false;
  }
  po::notify(vm);
  return true;
}

std::string printable(const std::string& text) {
  std::string out;
  static const char* hex = "0123456789abcdef";
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool valid = len > 0 && i + len <= text.size();
    for (int k = 1; valid && k < len; ++k) valid = (static_cast<unsigned char>(text[i + k]) >> 6) == 0x2;
    if (valid && len == 1 && (c < 0x20 || c == 0x7f) && c != '\n' && c != '\t') valid = false;
    if (valid) {
      out.append(text, i, len);
      i += len;
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
      ++i;
    }
  }
  return out;
}

std::string escaped(const std::string& text) {
  std::string out, run;
  for (char c : text) {
    const char* e = c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : nullptr;
    if (!e) {
      run += c;
      continue;
    }
    out += printable(run);  // UTF-8 sequences hold no ASCII bytes, so splitting here keeps them whole
    run.clear();
    out += e;
  }
  return out + printable(run);
}

}  // namespace specdec::cli
