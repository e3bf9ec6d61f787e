#include "reference/acceptance/typical_acceptor.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

#include "reference/core/error.hpp"
#include "reference/core/format.hpp"
#include "reference/sampling/sampler.hpp"

namespace specdec {

namespace {

constexpr double kMaxDelta = 1e3;
constexpr double kEntropyFloor = 1e-5;  // Medusa's log(p + 1e-5)
const char* const kForm =
    "epsilon=E,delta=D (either optional; epsilon = Medusa's posterior_threshold in (0, 1], default 0.09; delta = Medusa's "
    "posterior_alpha in (0, 1e3], default 0.3)";

// The whole of `s` as a double, or false.
bool parse_double(const std::string& s, double& v) {
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

std::string checked_epsilon_error(double e) {
  if (!std::isfinite(e)) return "epsilon is not finite; expected a number in (0, 1] (Medusa's posterior_threshold, default 0.09)";
  if (e <= 0 || e > 1) return "epsilon " + format_double(e) + " is outside (0, 1] (Medusa's posterior_threshold, default 0.09)";
  return "";
}

std::string checked_delta_error(double d) {
  if (!std::isfinite(d)) return "delta is not finite; expected a number in (0, 1e3] (Medusa's posterior_alpha, default 0.3)";
  if (d <= 0 || d > kMaxDelta) return "delta " + format_double(d) + " is outside (0, 1e3] (Medusa's posterior_alpha, default 0.3)";
  return "";
}

const float* row(const Matrix& m, int r) { return m.data() + static_cast<std::ptrdiff_t>(r) * m.cols(); }

void check_input(const VerifyInput& in) {
  if (!in.tree || !in.target_logits)
    throw Error("typical acceptance: the draft tree and the target logits are required (it never verifies from argmax rows alone)");
  if (in.sampling.mode == SamplingParams::Mode::greedy)
    throw Error(
        "typical acceptance: greedy sampling is refused: at temperature 0 Medusa's typical acceptance is exact matching "
        "against the target's argmax, which the default rule (match) already is; use sample or coupled sampling with "
        "typical acceptance, or drop it for greedy decoding");
  in.sampling.validate();
  const int n = in.tree->size();
  if (in.target_logits->rows() != n + 1)
    throw Error("typical acceptance: " + std::to_string(in.target_logits->rows()) + " target logit rows for " + std::to_string(n) +
                " draft nodes; expected one at the root plus one after each node (" + std::to_string(n + 1) + ")");
  in.tree->validate(static_cast<int>(in.target_logits->cols()));
}

}  // namespace

std::string TypicalAcceptance::to_string() const { return "epsilon=" + format_double(epsilon) + ",delta=" + format_double(delta); }

void TypicalAcceptance::validate() const {
  std::string e = checked_epsilon_error(epsilon);
  if (e.empty()) e = checked_delta_error(delta);
  if (!e.empty()) throw Error("typical acceptance: " + e);
}

TypicalAcceptance parse_typical_acceptance(const std::string& text) {
  const std::string where = "typical acceptance '" + text + "': ";
  TypicalAcceptance t;
  if (text.empty()) return t;  // the defaults
  bool seen_epsilon = false, seen_delta = false;
  std::size_t start = 0;
  for (int i = 1;; ++i) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) throw Error(where + "item " + std::to_string(i) + " is empty; expected " + kForm);
    const std::size_t eq = item.find('=');
    if (eq == std::string::npos) throw Error(where + "'" + item + "' is not KEY=VALUE; expected " + kForm);
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    double v = 0;
    if (key == "epsilon" || key == "delta") {
      bool& seen = key == "epsilon" ? seen_epsilon : seen_delta;
      if (seen) throw Error(where + key + " is given twice; expected " + kForm);
      seen = true;
      if (!parse_double(value, v))
        throw Error(where + key + " '" + value + "' is not a number; expected " +
                    (key == "epsilon" ? "a number in (0, 1]" : "a number in (0, 1e3]"));
      const std::string e = key == "epsilon" ? checked_epsilon_error(v) : checked_delta_error(v);
      if (!e.empty()) throw Error(where + e);
      (key == "epsilon" ? t.epsilon : t.delta) = v;
    } else {
      throw Error(where + "unknown key '" + key + "'; expected " + kForm);
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return t;
}

double medusa_entropy(const std::vector<double>& p) {
  double h = 0;
  for (const double v : p) h -= v * std::log(v + kEntropyFloor);  // p = 0 adds exactly 0
  return h;
}

double typical_threshold(const std::vector<double>& p, const TypicalAcceptance& params) {
  return std::min(params.epsilon, params.delta * std::exp(-medusa_entropy(p)));
}

void to_json(nlohmann::json& j, const TypicalAcceptance& t) {
  j = {{"epsilon", t.epsilon}, {"delta", t.delta}, {"spec", t.to_string()}};
}

void from_json(const nlohmann::json& j, TypicalAcceptance& t) {
  const std::string expected = R"(; expected {"epsilon": E, "delta": D} (either optional))";
  if (!j.is_object()) throw Error("typical acceptance JSON: " + j.dump() + " is not an object" + expected);
  TypicalAcceptance out;
  for (const auto& [key, value] : j.items()) {
    if (key == "spec") continue;
    if (key != "epsilon" && key != "delta") throw Error("typical acceptance JSON: unknown key \"" + key + "\"" + expected);
    if (!value.is_number()) throw Error("typical acceptance JSON: \"" + key + "\" is " + value.dump() + ", not a number");
    (key == "epsilon" ? out.epsilon : out.delta) = value.get<double>();
  }
  out.validate();
  t = out;
}

TypicalAcceptor::TypicalAcceptor(TypicalAcceptance params) : params_(params) { params_.validate(); }

VerifyResult TypicalAcceptor::verify(const VerifyInput& in) const {
  check_input(in);
  const DraftTree& tree = *in.tree;
  const Matrix& logits = *in.target_logits;
  const int N = tree.size();
  const int V = static_cast<int>(logits.cols());
  // Per point (index 0 the root, 1 + n after node n): p (V) and tau, computed when first needed.
  std::vector<std::vector<double>> p(static_cast<std::size_t>(N) + 1);
  std::vector<double> tau(static_cast<std::size_t>(N) + 1, 0.0);
  const auto distribution = [&](int point) -> const std::vector<double>& {
    const std::size_t i = static_cast<std::size_t>(point + 1);
    if (p[i].empty()) {
      p[i] = probabilities(row(logits, point + 1), V, in.sampling);
      tau[i] = typical_threshold(p[i], params_);
    }
    return p[i];
  };
  std::vector<uint8_t> accepted(static_cast<std::size_t>(N), 0);
  std::vector<int> depth(static_cast<std::size_t>(N), 0);            // (N)
  std::vector<double> log_likelihood(static_cast<std::size_t>(N), 0);  // (N), accepted nodes only
  VerifyResult r;
  // 1. Every node whose parent point is the root or accepted, in node order (parents first).
  for (int n = 0; n < N; ++n) {
    const int parent = tree.parents[static_cast<std::size_t>(n)];
    depth[static_cast<std::size_t>(n)] = parent < 0 ? 1 : depth[static_cast<std::size_t>(parent)] + 1;
    if (parent >= 0 && !accepted[static_cast<std::size_t>(parent)]) continue;  // under a rejection: never tested
    const double px = distribution(parent)[static_cast<std::size_t>(tree.tokens[static_cast<std::size_t>(n)])];
    const bool accept = px > tau[static_cast<std::size_t>(parent + 1)];
    r.decisions.push_back(accept ? 1 : 0);
    r.decision_nodes.push_back(n);
    if (!accept) continue;
    accepted[static_cast<std::size_t>(n)] = 1;
    log_likelihood[static_cast<std::size_t>(n)] = (parent < 0 ? 0.0 : log_likelihood[static_cast<std::size_t>(parent)]) + std::log(px);
  }
  // 2. The deepest accepted node; then the larger log-likelihood; then the lower index.
  int best = -1;
  for (int n = 0; n < N; ++n) {
    const std::size_t i = static_cast<std::size_t>(n);
    if (!accepted[i]) continue;
    if (best < 0 || depth[i] > depth[static_cast<std::size_t>(best)] ||
        (depth[i] == depth[static_cast<std::size_t>(best)] && log_likelihood[i] > log_likelihood[static_cast<std::size_t>(best)]))
      best = n;
  }
  for (int n = best; n >= 0; n = tree.parents[static_cast<std::size_t>(n)]) r.accepted_nodes.push_back(n);
  std::reverse(r.accepted_nodes.begin(), r.accepted_nodes.end());
  for (const int n : r.accepted_nodes) r.emitted.push_back(tree.tokens[static_cast<std::size_t>(n)]);
  // 3. The target's own draw where the path ends (not Medusa's typical-truncated one).
  const uint32_t position = static_cast<uint32_t>(in.root_position + (best < 0 ? 0 : depth[static_cast<std::size_t>(best)]));
  int32_t next = -1;
  if (in.sampling.mode == SamplingParams::Mode::sample) {
    PhiloxChance chance(in.sampling.seed, in.sequence);
    next = chance.categorical(distribution(best), position, RandomPurpose::sample, 0);
    r.draws = chance.draws();
  } else {  // coupled: Gumbel-max keyed by the position, as sequential decoding draws it
    next = sample_token(row(logits, best + 1), V, in.sampling, in.sequence, position);
  }
  r.emitted.push_back(next);
  if (tree.children(best).empty()) r.bonus_token = next;
  return r;
}

}  // namespace specdec
