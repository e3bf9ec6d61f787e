#include "reference/acceptance/forced_acceptor.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

#include "reference/core/error.hpp"
#include "reference/core/format.hpp"
#include "reference/sampling/sampler.hpp"

namespace specdec {

namespace {

constexpr double kMaxAccepted = 4096;
constexpr double kMaxAcceptanceLength = 1e6;
constexpr std::size_t kMaxRates = 4096;
const char* const kForms =
    "rates=P1,P2,... (unconditional per-position rates, each in [0, 1], non-increasing), al=LENGTH (in [1, 1e6]) or accepted=X "
    "(accepted drafts per step, in [0, 4096])";

// The whole of `s` as a double, or false.
bool parse_double(const std::string& s, double& v) {
  if (s.empty()) return false;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

std::string checked_rates_error(const std::vector<double>& rates) {
  if (rates.empty()) return "no rates; expected at least one rate in [0, 1]";
  if (rates.size() > kMaxRates) return std::to_string(rates.size()) + " rates; at most " + std::to_string(kMaxRates) + " are supported";
  for (std::size_t i = 0; i < rates.size(); ++i) {
    const double r = rates[i];
    if (!std::isfinite(r)) return "rate " + std::to_string(i + 1) + " is not finite; expected a number in [0, 1]";
    if (r < 0 || r > 1) return "rate " + std::to_string(i + 1) + " = " + format_double(r) + " is outside [0, 1]";
    if (i > 0 && r > rates[i - 1])
      return "rate " + std::to_string(i + 1) + " = " + format_double(r) + " is above rate " + std::to_string(i) + " = " +
             format_double(rates[i - 1]) +
             "; the rates are unconditional (rate i = P(the first i drafts are all accepted), as vLLM's "
             "synthetic_acceptance_rates) and must be non-increasing";
  }
  return "";
}

std::string checked_length_error(double al) {
  if (!std::isfinite(al)) return "acceptance length is not finite; expected a number in [1, 1e6]";
  if (al < 1) return "acceptance length " + format_double(al) + " is below 1 (every step emits at least one token); expected a number in [1, 1e6]";
  if (al > kMaxAcceptanceLength) return "acceptance length " + format_double(al) + " is above 1e6";
  return "";
}

std::string checked_accepted_error(double x) {
  if (!std::isfinite(x)) return "accepted count is not finite; expected a number in [0, 4096]";
  if (x < 0 || x > kMaxAccepted) return "accepted count " + format_double(x) + " is outside [0, 4096]";
  return "";
}

const float* row(const Matrix& m, int r) { return m.data() + static_cast<std::ptrdiff_t>(r) * m.cols(); }

void check_input(const VerifyInput& in) {
  if (!in.tree || (!in.target_logits && !in.target_argmax))
    throw Error("forced acceptance: draft tree and target logits (or, for greedy sampling, their argmax) are required");
  const int n = in.tree->size();
  if (in.target_logits) {
    if (in.target_logits->rows() != n + 1)
      throw Error("forced acceptance: " + std::to_string(in.target_logits->rows()) + " target logit rows for " + std::to_string(n) +
                  " draft nodes; expected " + std::to_string(n + 1));
    in.tree->validate(static_cast<int>(in.target_logits->cols()));
    return;
  }
  if (in.sampling.mode != SamplingParams::Mode::greedy)
    throw Error("forced acceptance: target argmax rows serve greedy sampling only; " + to_string(in.sampling.mode) +
                " sampling needs the target logits");
  if (static_cast<int>(in.target_argmax->size()) != n + 1)
    throw Error("forced acceptance: " + std::to_string(in.target_argmax->size()) + " target argmax rows for " + std::to_string(n) +
                " draft nodes; expected " + std::to_string(n + 1));
  in.tree->validate(in.vocab);
}

}  // namespace

double ForcedAcceptance::target_drafts() const {
  switch (kind) {
    case Kind::rates: return 0.0;
    case Kind::acceptance_length: return acceptance_length - 1;  // exact for L >= 1
    case Kind::accepted: return accepted;
  }
  return 0.0;
}

double ForcedAcceptance::unconditional_rate(int d, int depth) const {
  if (d <= 0) return 1.0;
  if (d > depth) return 0.0;
  if (kind == Kind::rates) return static_cast<std::size_t>(d) <= rates.size() ? rates[static_cast<std::size_t>(d) - 1] : 0.0;
  // The minimum-variance schedule: [1.0] * f + [m - f] + [0.0] * ...
  const double m = target_drafts(), f = std::floor(m);
  if (d <= f) return 1.0;
  if (d == f + 1) return m - f;
  return 0.0;
}

double ForcedAcceptance::rate(int d, int depth) const {
  if (d <= 0 || d > depth) return 0.0;
  const double prev = unconditional_rate(d - 1, depth);
  return prev > 0 ? std::min(1.0, unconditional_rate(d, depth) / prev) : 0.0;
}

double expected_acceptance_length(const ForcedAcceptance& forced, int K) {
  if (K <= 0) return 1.0;
  if (forced.kind != ForcedAcceptance::Kind::rates) return std::min(forced.target_drafts(), static_cast<double>(K)) + 1;
  double s = 1;
  for (int d = 1; d <= K; ++d) s += forced.unconditional_rate(d, K);
  return s;
}

std::string ForcedAcceptance::to_string() const {
  switch (kind) {
    case Kind::rates: {
      std::string s = "rates=";
      for (std::size_t i = 0; i < rates.size(); ++i) {
        if (i) s += ',';
        s += format_double(rates[i]);
      }
      return s;
    }
    case Kind::acceptance_length: return "al=" + format_double(acceptance_length);
    case Kind::accepted: return "accepted=" + format_double(accepted);
  }
  return "";
}

void ForcedAcceptance::validate() const {
  std::string e;
  switch (kind) {
    case Kind::rates: e = checked_rates_error(rates); break;
    case Kind::acceptance_length: e = checked_length_error(acceptance_length); break;
    case Kind::accepted: e = checked_accepted_error(accepted); break;
  }
  if (!e.empty()) throw Error("forced acceptance: " + e);
}

ForcedAcceptance parse_forced_acceptance(const std::string& text) {
  const std::string where = "forced acceptance '" + text + "': ";
  if (text.empty()) throw Error(std::string("forced acceptance: empty specification; expected ") + kForms);
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos) throw Error(where + "expected FORM=VALUE: " + kForms);
  const std::string form = text.substr(0, eq), value = text.substr(eq + 1);
  ForcedAcceptance f;
  if (form == "rates") {
    f.kind = ForcedAcceptance::Kind::rates;
    if (value.empty())
      throw Error(where + "no rates; expected comma-separated non-increasing numbers in [0, 1], one per draft position, e.g. rates=0.9,0.54,0.3");
    std::size_t start = 0;
    for (int i = 1;; ++i) {
      const std::size_t comma = value.find(',', start);
      const std::string item = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      double r = 0;
      if (item.empty()) throw Error(where + "rate " + std::to_string(i) + " is empty; expected comma-separated numbers in [0, 1]");
      if (!parse_double(item, r)) throw Error(where + "rate " + std::to_string(i) + " '" + item + "' is not a number; expected a number in [0, 1]");
      f.rates.push_back(r);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (const std::string e = checked_rates_error(f.rates); !e.empty()) throw Error(where + e);
  } else if (form == "al") {
    f.kind = ForcedAcceptance::Kind::acceptance_length;
    if (!parse_double(value, f.acceptance_length))
      throw Error(where + "acceptance length '" + value + "' is not a number; expected a number in [1, 1e6] (mean tokens per step)");
    if (const std::string e = checked_length_error(f.acceptance_length); !e.empty()) throw Error(where + e);
  } else if (form == "accepted") {
    f.kind = ForcedAcceptance::Kind::accepted;
    if (!parse_double(value, f.accepted))
      throw Error(where + "accepted count '" + value +
                  "' is not a number; expected a number in [0, 4096] (accepted drafts per step, bonus excluded; a fraction f "
                  "accepts one more draft with probability f)");
    if (const std::string e = checked_accepted_error(f.accepted); !e.empty()) throw Error(where + e);
  } else {
    throw Error(where + "unknown form '" + form + "'; expected " + kForms);
  }
  return f;
}

void to_json(nlohmann::json& j, const ForcedAcceptance& f) {
  switch (f.kind) {
    case ForcedAcceptance::Kind::rates: j = {{"kind", "rates"}, {"rates", f.rates}}; break;
    case ForcedAcceptance::Kind::acceptance_length: j = {{"kind", "al"}, {"al", f.acceptance_length}}; break;
    case ForcedAcceptance::Kind::accepted:  // a whole count as an integer (3, not 3.0), as TensorRT-LLM's knob is usually given
      if (f.accepted >= 0 && f.accepted <= kMaxAccepted && f.accepted == std::floor(f.accepted))
        j = {{"kind", "accepted"}, {"accepted", static_cast<int64_t>(f.accepted)}};
      else
        j = {{"kind", "accepted"}, {"accepted", f.accepted}};
      break;
  }
  j["spec"] = f.to_string();
}

void from_json(const nlohmann::json& j, ForcedAcceptance& f) {
  const std::string expected = R"(; expected {"kind": "rates", "rates": [...]}, {"kind": "al", "al": L} or {"kind": "accepted", "accepted": X})";
  if (!j.is_object() || !j.contains("kind") || !j["kind"].is_string()) throw Error("forced acceptance JSON: no \"kind\"" + expected);
  const std::string kind = j["kind"].get<std::string>();
  if (kind != "rates" && kind != "al" && kind != "accepted") throw Error("forced acceptance JSON: unknown kind \"" + kind + "\"" + expected);
  ForcedAcceptance out;
  const auto field = [&](const char* key) -> const nlohmann::json& {
    if (!j.contains(key)) throw Error("forced acceptance JSON: kind \"" + kind + "\" has no \"" + key + "\"" + expected);
    return j[key];
  };
  for (const auto& [key, value] : j.items()) {
    (void)value;
    if (key != "kind" && key != "spec" && key != kind) throw Error("forced acceptance JSON: unknown key \"" + key + "\"" + expected);
  }
  if (kind == "rates") {
    out.kind = ForcedAcceptance::Kind::rates;
    const nlohmann::json& r = field("rates");
    if (!r.is_array()) throw Error("forced acceptance JSON: \"rates\" is not an array of numbers");
    for (const auto& x : r) {
      if (!x.is_number()) throw Error("forced acceptance JSON: \"rates\" holds " + x.dump() + ", not a number");
      out.rates.push_back(x.get<double>());
    }
  } else if (kind == "al") {
    out.kind = ForcedAcceptance::Kind::acceptance_length;
    const nlohmann::json& a = field("al");
    if (!a.is_number()) throw Error("forced acceptance JSON: \"al\" is " + a.dump() + ", not a number");
    out.acceptance_length = a.get<double>();
  } else {
    out.kind = ForcedAcceptance::Kind::accepted;
    const nlohmann::json& a = field("accepted");
    if (!a.is_number()) throw Error("forced acceptance JSON: \"accepted\" is " + a.dump() + ", not a number in [0, 4096]");
    out.accepted = a.get<double>();
  }
  out.validate();
  f = std::move(out);
}

ForcedAcceptor::ForcedAcceptor(ForcedAcceptance forced) : forced_(std::move(forced)) { forced_.validate(); }

VerifyResult ForcedAcceptor::verify(const VerifyInput& in) const {
  check_input(in);
  const DraftTree& tree = *in.tree;
  // K: the first-child path's depth, the chain this rule can walk (a tree's other siblings never count).
  int K = 0;
  for (int p = -1;; ++K) {
    const std::vector<int> c = tree.children(p);
    if (c.empty()) break;
    p = c[0];
  }
  PhiloxChance chance(in.sampling.seed, in.sequence);
  // al / accepted: the step's count of accepted drafts, from one draw (none when it is certain).
  int count = K;
  if (forced_.kind != ForcedAcceptance::Kind::rates) {
    const double m = forced_.target_drafts(), f = std::floor(m);
    if (f >= K) {
      count = K;
    } else {
      count = static_cast<int>(f);
      if (m > f && chance.bernoulli(m - f, static_cast<uint32_t>(in.root_position), RandomPurpose::forced, 0)) ++count;
    }
  }
  VerifyResult r;
  int point = -1;  // the accepted node whose first child is tried; −1 = the root
  for (;;) {
    const int depth = point < 0 ? 0 : tree.depth(point);
    const std::vector<int> children = tree.children(point);
    if (!children.empty()) {
      const int c = children[0];
      const int d = depth + 1;
      bool accept = false;
      if (forced_.kind != ForcedAcceptance::Kind::rates) {
        accept = d <= count;
      } else if (static_cast<std::size_t>(d) <= forced_.rates.size()) {
        // The child's absolute position keys the draw: no position is drawn twice in one run.
        accept = chance.bernoulli(forced_.rate(d, K), static_cast<uint32_t>(in.root_position + d - 1), RandomPurpose::forced, 0);
      }  // beyond the list: p = 0, rejected without a draw
      r.decisions.push_back(accept ? 1 : 0);
      r.decision_nodes.push_back(c);
      if (accept) {
        r.accepted_nodes.push_back(c);
        r.emitted.push_back(tree.tokens[static_cast<std::size_t>(c)]);
        point = c;
        continue;
      }
    }
    // The stop point: the target's own choice there, as sequential decoding would make it.
    const uint32_t position = static_cast<uint32_t>(in.root_position + depth);
    const int32_t choice = in.target_logits
                               ? sample_token(row(*in.target_logits, point + 1), static_cast<int>(in.target_logits->cols()),
                                              in.sampling, in.sequence, position)
                               : (*in.target_argmax)[static_cast<std::size_t>(point + 1)];
    r.emitted.push_back(choice);
    if (children.empty()) r.bonus_token = choice;
    r.draws = chance.draws();
    return r;
  }
}

}  // namespace specdec
