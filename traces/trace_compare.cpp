// semantically_equal: exact comparison of what two runs computed, ignoring when and how fast.
#include <bit>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "traces/trace.hpp"

namespace specdec {
namespace {

std::string show(int32_t v) { return std::to_string(v); }
std::string show(int64_t v) { return std::to_string(v); }
std::string show(uint8_t v) { return std::to_string(static_cast<int>(v)); }
std::string show(uint64_t v) { return std::to_string(v); }
std::string show(const std::string& v) { return "\"" + v + "\""; }
std::string show(const std::array<uint32_t, 4>& v) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}
std::string show(float v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g (0x%08x)", static_cast<double>(v), std::bit_cast<uint32_t>(v));
  return buf;
}
std::string show(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g (0x%016llx)", v, static_cast<unsigned long long>(std::bit_cast<uint64_t>(v)));
  return buf;
}

// Floating-point values compare bit for bit: exactness is the point, and NaN equals itself.
bool same(float a, float b) { return std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b); }
bool same(double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); }
template <class T> bool same(const T& a, const T& b) { return a == b; }

// Collects the first difference; every check is a no-op once one is found.
class Comparer {
 public:
  bool done() const { return !diff_.empty(); }
  const std::string& diff() const { return diff_; }

  template <class T> void value(const std::string& where, const T& a, const T& b) {
    if (!done() && !same(a, b)) diff_ = where + ": " + show(a) + " vs " + show(b);
  }
  template <class T> void list(const std::string& where, const std::vector<T>& a, const std::vector<T>& b) {
    if (done()) return;
    if (a.size() != b.size()) {
      diff_ = where + ": length " + std::to_string(a.size()) + " vs " + std::to_string(b.size());
      return;
    }
    for (std::size_t i = 0; i < a.size() && !done(); ++i) value(where + "[" + std::to_string(i) + "]", a[i], b[i]);
  }
  void json(const std::string& where, const std::string& a, const std::string& b) {
    if (done()) return;
    const auto ja = nlohmann::json::parse(a, nullptr, false);
    const auto jb = nlohmann::json::parse(b, nullptr, false);
    const bool equal = (ja.is_discarded() || jb.is_discarded()) ? a == b : ja == jb;
    if (!equal) diff_ = where + ": " + a + " vs " + b;
  }
  void logits(const std::string& where, const std::vector<LogitRecord>& a, const std::vector<LogitRecord>& b) {
    if (done()) return;
    if (a.size() != b.size()) {
      diff_ = where + ": " + std::to_string(a.size()) + " rows vs " + std::to_string(b.size());
      return;
    }
    for (std::size_t r = 0; r < a.size() && !done(); ++r) {
      const std::string w = where + "[" + std::to_string(r) + "]";
      if (a[r].is_full() != b[r].is_full()) {
        diff_ = w + ": " + (a[r].is_full() ? "full" : "top-k") + " vs " + (b[r].is_full() ? "full" : "top-k");
        return;
      }
      if (a[r].is_full()) {
        list(w + ".full", a[r].full, b[r].full);
      } else {
        const LogitSummary& x = a[r].summary;
        const LogitSummary& y = b[r].summary;
        value(w + ".vocab_size", x.vocab_size, y.vocab_size);
        list(w + ".topk_ids", x.topk_ids, y.topk_ids);
        list(w + ".topk_values", x.topk_values, y.topk_values);
        value(w + ".logsumexp", x.logsumexp, y.logsumexp);
        value(w + ".checksum", x.checksum, y.checksum);
      }
    }
  }

 private:
  std::string diff_;
};

}  // namespace

bool semantically_equal(const Trace& a, const Trace& b, std::string* first_difference) {
  Comparer c;
  c.value("meta.method", a.meta.method, b.meta.method);
  c.value("meta.seed", a.meta.seed, b.meta.seed);
  c.json("meta.sampling_json", a.meta.sampling_json, b.meta.sampling_json);
  std::vector<std::string> roles_a, roles_b;
  for (const auto& m : a.meta.models) roles_a.push_back(m.first);
  for (const auto& m : b.meta.models) roles_b.push_back(m.first);
  c.list("meta.models (roles)", roles_a, roles_b);
  for (const std::string& role : roles_a) {
    if (c.done()) break;
    const ModelInfo& x = a.meta.models.at(role);
    const ModelInfo& y = b.meta.models.at(role);
    c.value("meta.models[" + role + "].fingerprint", x.fingerprint, y.fingerprint);
    c.json("meta.models[" + role + "].config_json", x.config_json, y.config_json);
  }
  c.list("prompt", a.prompt, b.prompt);
  if (!c.done() && a.steps.size() != b.steps.size()) {
    c.value("steps (count)", static_cast<uint64_t>(a.steps.size()), static_cast<uint64_t>(b.steps.size()));
  }
  for (std::size_t s = 0; s < a.steps.size() && !c.done(); ++s) {
    const StepRecord& x = a.steps[s];
    const StepRecord& y = b.steps[s];
    const std::string w = "steps[" + std::to_string(s) + "].";
    c.value(w + "position", x.position, y.position);
    c.list(w + "emitted_tokens", x.emitted_tokens, y.emitted_tokens);
    c.list(w + "draft_tokens", x.draft_tokens, y.draft_tokens);
    c.list(w + "draft_parents", x.draft_parents, y.draft_parents);
    c.list(w + "accepted_path", x.accepted_path, y.accepted_path);
    c.list(w + "accept_decisions", x.accept_decisions, y.accept_decisions);
    c.list(w + "accept_nodes", x.accept_nodes, y.accept_nodes);
    c.list(w + "accept_uniforms", x.accept_uniforms, y.accept_uniforms);
    c.value(w + "bonus_token", x.bonus_token, y.bonus_token);
    c.list(w + "random_counters", x.random_counters, y.random_counters);
    c.logits(w + "target_logits", x.target_logits, y.target_logits);
    c.logits(w + "draft_logits", x.draft_logits, y.draft_logits);
    c.list(w + "draft_logit_nodes", x.draft_logit_nodes, y.draft_logit_nodes);
  }
  c.list("output", a.output, b.output);
  c.value("stop_reason", a.stop_reason, b.stop_reason);
  if (first_difference != nullptr) *first_difference = c.diff();
  return !c.done();
}

}  // namespace specdec
