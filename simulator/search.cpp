#include "simulator/search.hpp"

#include <algorithm>
#include <limits>

#include "reference/core/error.hpp"
#include "reference/core/input_limits.hpp"
#include "reference/drafting/draft_limits.hpp"
#include "reference/methods/registry.hpp"

namespace specdec::sim {

namespace {

void check_searchable(const Scenario& s, const char* what) {
  if (s.plan.method == Method::sequential) throw Error(std::string(what) + " is undefined for sequential decoding");
  if (!s.acceptance)
    throw Error(std::string(what) + " needs an acceptance model that answers several settings; a measured AL "
                "belongs to the one configuration it was measured with");
}

std::string k_setting(int k) { return "K = " + std::to_string(k); }

}  // namespace

std::string why_k_is_not_evaluated(Scenario s, int k) {
  s.plan.k = k;
  const int depth = acceptance_depth(s.plan);
  if (s.acceptance && !s.acceptance->answers(depth))
    return "acceptance model '" + s.acceptance->describe() + "' has no AL for " +
           (depth == k ? std::string("it") : "depth " + std::to_string(depth));
  const int trained = s.drafter ? s.drafter->trained_depth : 0;
  if (s.plan.method == Method::peagle && trained > 0 && k > trained)
    return "P-EAGLE drafter '" + s.drafter->name + "' was trained for up to " + std::to_string(trained) + " parallel positions";
  const int heads = s.drafter ? s.drafter->num_heads : 0;
  if (s.plan.method == Method::medusa && k > heads)
    return "Medusa drafter '" + s.drafter->name + "' has " + std::to_string(heads) + " heads, one per draft depth";
  return "";
}

BestK best_k(Scenario s, std::vector<int> ks) {
  check_searchable(s, "the best K");
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  if (ks.empty()) throw Error("the best K: no K to search");
  if (ks.front() < 1) throw Error("the best K: K must be >= 1, got " + std::to_string(ks.front()));
  // Each K's prediction keeps its K forwards' breakdown: unbounded K would grow as K^2.
  check_draft_limit("the best K", "K", ks.back(), kMaxDraftDepth);
  s.plan.tree.reset();
  s.measured_tokens_per_step.reset();
  BestK out;
  double best = std::numeric_limits<double>::infinity();
  for (const int k : ks) {
    s.plan.k = k;
    if (const std::string why = why_k_is_not_evaluated(s, k); !why.empty()) {
      out.skipped.push_back({k_setting(k), why});
      continue;
    }
    s.plan.k = k;
    out.all.push_back(predict(s));
    if (out.all.back().tpot_s < best) {
      best = out.all.back().tpot_s;
      out.k = k;
      out.best = out.all.back();
    }
  }
  if (out.all.empty())
    throw Error("the best K: none of K = " + std::to_string(ks.front()) + ".." + std::to_string(ks.back()) +
                " can be evaluated: " + out.skipped.front().reason);
  return out;
}

BestTree best_dynamic_tree(Scenario s, const std::vector<int>& total_tokens, const std::vector<int>& depths,
                           const std::vector<int>& top_ks) {
  check_searchable(s, "the best dynamic tree");
  if (!method_shapes(s.plan.method).dynamic_tree)
    throw Error(method_title(s.plan.method) + " drafts no dynamic tree (the method registry's shapes); there is none to search");
  if (total_tokens.empty() || depths.empty() || top_ks.empty())
    throw Error("the best dynamic tree: give at least one total-token budget, depth and top-k");
  // Counted before any tree is built: every setting is a tree priced in full.
  const uint64_t settings = uint64_t(total_tokens.size()) * depths.size() * top_ks.size();
  check_input_limit("the best dynamic tree", "the number of settings (totals x depths x top-ks)",
                    (long long)std::min<uint64_t>(settings, uint64_t(1) << 62), kMaxSearchSettings);
  // Bounded before a depth is walked below (a caller's list may hold any integer).
  for (const int depth : depths) check_draft_limit("the best dynamic tree", "a depth", depth, kMaxDraftDepth);
  s.measured_tokens_per_step.reset();
  BestTree out;
  double best = std::numeric_limits<double>::infinity();
  for (const int total : total_tokens)
    for (const int depth : depths)
      for (const int top_k : top_ks) {
        const DynamicTreeSetting set{total, depth, top_k};
        int unanswered = 0;  // the first depth the acceptance model has no answer for
        for (int d = 1; d <= depth && !unanswered; ++d)
          if (!s.acceptance->answers(d)) unanswered = d;
        if (unanswered) {
          out.skipped.push_back({"total " + std::to_string(total) + ", depth " + std::to_string(depth) + ", top-k " +
                                     std::to_string(top_k),
                                 "acceptance model '" + s.acceptance->describe() + "' has no answer at depth " +
                                     std::to_string(unanswered)});
          continue;
        }
        set_dynamic_tree(s.plan, *s.acceptance, total, depth, top_k);
        out.all.push_back({set, predict(s)});
        if (out.all.back().prediction.tpot_s < best) {
          best = out.all.back().prediction.tpot_s;
          out.setting = set;
          out.tree = *s.plan.tree;
          out.best = out.all.back().prediction;
        }
      }
  if (out.all.empty()) throw Error("the best dynamic tree: no combination can be evaluated: " + out.skipped.front().reason);
  return out;
}

}  // namespace specdec::sim
