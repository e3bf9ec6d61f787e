#include "simulator/acceptance.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "reference/core/error.hpp"

namespace specdec::sim {

void AcceptanceModel::check_k(int k) const {
  if (k < 0) throw Error("draft length K must be >= 0, got " + std::to_string(k));
  if (k > max_k())
    throw Error("acceptance model '" + describe() + "' answers K up to " + std::to_string(max_k()) +
                ", asked for K = " + std::to_string(k));
}

namespace {

void check_probability(double p, const std::string& what) {
  if (!(p >= 0.0 && p <= 1.0)) {
    std::ostringstream s;
    s << what << " must be a probability in [0, 1], got " << p;
    throw Error(s.str());
  }
}

class Iid final : public AcceptanceModel {
 public:
  explicit Iid(double a) : alpha_(a) { check_probability(a, "acceptance rate alpha"); }
  double expected_tokens(int k) const override {
    check_k(k);
    return leviathan_expected_tokens(alpha_, k);
  }
  double conditional(int, int) const override { return alpha_; }
  std::string describe() const override {
    std::ostringstream s;
    s << "iid alpha=" << alpha_;
    return s.str();
  }

 private:
  double alpha_;
};

class Conditional final : public AcceptanceModel {
 public:
  explicit Conditional(std::vector<double> a) : a_(std::move(a)) {
    if (a_.empty()) throw Error("per-position acceptance vector is empty; give at least one probability");
    for (size_t i = 0; i < a_.size(); ++i) check_probability(a_[i], "acceptance[" + std::to_string(i + 1) + "]");
  }
  double expected_tokens(int k) const override {
    check_k(k);
    double al = 1.0, reach = 1.0;
    for (int i = 0; i < k; ++i) {
      reach *= a_[i];
      al += reach;
    }
    return al;
  }
  double conditional(int depth, int rank) const override {
    if (depth < 1 || depth > max_k()) throw Error("acceptance vector has no depth " + std::to_string(depth));
    return rank == 0 ? a_[depth - 1] : 0.0;
  }
  int max_k() const override { return int(a_.size()); }
  std::string describe() const override { return "per-position vector (" + std::to_string(a_.size()) + " positions)"; }

 private:
  std::vector<double> a_;
};

class Tree final : public AcceptanceModel {
 public:
  explicit Tree(std::vector<std::vector<double>> p) : p_(std::move(p)) {
    if (p_.empty()) throw Error("per-depth acceptance table is empty");
    for (size_t d = 0; d < p_.size(); ++d) {
      if (p_[d].empty()) throw Error("per-depth acceptance: depth " + std::to_string(d + 1) + " has no ranks");
      for (size_t r = 0; r < p_[d].size(); ++r)
        check_probability(p_[d][r], "acceptance[depth " + std::to_string(d + 1) + "][rank " + std::to_string(r) + "]");
    }
  }
  double expected_tokens(int k) const override {
    check_k(k);
    double al = 1.0, reach = 1.0;
    for (int i = 0; i < k; ++i) {
      reach *= p_[i][0];
      al += reach;
    }
    return al;
  }
  double conditional(int depth, int rank) const override {
    if (depth < 1 || depth > max_k()) throw Error("tree acceptance table has no depth " + std::to_string(depth));
    const auto& row = p_[depth - 1];
    return rank < int(row.size()) ? row[rank] : 0.0;
  }
  int max_k() const override { return int(p_.size()); }
  std::string describe() const override { return "per-depth per-rank table (" + std::to_string(p_.size()) + " depths)"; }

 private:
  std::vector<std::vector<double>> p_;
};

class Table final : public AcceptanceModel {
 public:
  explicit Table(std::map<int, double> t) : t_(std::move(t)) {
    if (t_.empty()) throw Error("acceptance-length table is empty");
    for (const auto& [k, al] : t_) {
      if (k < 1) throw Error("acceptance-length table: K must be >= 1, got " + std::to_string(k));
      if (!(al >= 1.0 && al <= k + 1.0)) {
        std::ostringstream s;
        s << "acceptance-length table: AL at K = " << k << " must be in [1, " << k + 1 << "] (it counts the bonus token), got " << al;
        throw Error(s.str());
      }
    }
  }
  double expected_tokens(int k) const override {
    check_k(k);
    if (k == 0) return 1.0;
    auto it = t_.find(k);
    if (it == t_.end()) throw Error("acceptance-length table has no entry for K = " + std::to_string(k));
    return it->second;
  }
  double conditional(int depth, int rank) const override {
    // Implied chain conditionals: a_d = (AL(d) − AL(d−1)) / (AL(d−1) − AL(d−2)).
    if (rank != 0) return 0.0;
    auto al = [&](int k) { return k <= 0 ? (k == 0 ? 1.0 : 0.0) : expected_tokens(k); };
    const double prev = al(depth - 1) - al(depth - 2);
    return prev > 0 ? std::clamp((al(depth) - al(depth - 1)) / prev, 0.0, 1.0) : 0.0;
  }
  int max_k() const override { return t_.rbegin()->first; }
  bool answers(int k) const override { return k == 0 || t_.count(k) > 0; }
  std::string describe() const override {
    std::string ks;
    for (const auto& [k, al] : t_) ks += (ks.empty() ? "" : ", ") + std::to_string(k);
    return "measured AL table (K = " + ks + ")";
  }

 private:
  std::map<int, double> t_;
};

class Replay final : public AcceptanceModel {
 public:
  Replay(std::vector<int> accepted, int k) : accepted_(std::move(accepted)), k_(k) {
    if (k < 1) throw Error("replay: recorded draft length must be >= 1, got " + std::to_string(k));
    if (accepted_.empty()) throw Error("replay: no recorded steps");
    for (size_t i = 0; i < accepted_.size(); ++i)
      if (accepted_[i] < 0 || accepted_[i] > k)
        throw Error("replay: step " + std::to_string(i) + " accepted " + std::to_string(accepted_[i]) +
                    " drafts, outside [0, " + std::to_string(k) + "]");
  }
  double expected_tokens(int k) const override {
    check_k(k);
    double sum = 0;
    for (int a : accepted_) sum += std::min(a, k);
    return 1.0 + sum / double(accepted_.size());
  }
  double conditional(int depth, int rank) const override {
    if (rank != 0 || depth < 1 || depth > k_) return 0.0;
    double reached = 0, passed = 0;
    for (int a : accepted_) {
      reached += a >= depth - 1;
      passed += a >= depth;
    }
    return reached > 0 ? passed / reached : 0.0;
  }
  int max_k() const override { return k_; }
  std::string describe() const override {
    return "replay of " + std::to_string(accepted_.size()) + " steps at K=" + std::to_string(k_);
  }

 private:
  std::vector<int> accepted_;
  int k_;
};

// Draft-free steps that find no match draft nothing (the bonus token alone): a share h of the
// steps drafts, with `inner`'s acceptance.
// An engine's synthetic acceptance length (vLLM's synthetic_acceptance_length): the mean AL a
// benchmark forces, resolved as vLLM resolves it to per-position unconditional rates with the
// minimum-variance schedule: whole drafts always accepted, then the fraction, then none. AL 3.78
// at K = 7: P(accepted >= d) = 1, 1, 0.78, 0, 0, 0, 0. Like vLLM it answers K only when AL <= K + 1.
class SyntheticLength final : public AcceptanceModel {
 public:
  explicit SyntheticLength(double al) : al_(al) {
    if (!(al >= 1.0 && std::isfinite(al)))
      throw Error("synthetic acceptance length must be a finite number >= 1 (it counts the bonus token), got " +
                  std::to_string(al));
  }
  // P(accepted >= d) under the minimum-variance schedule.
  double reached(int d) const { return std::clamp(al_ - 1.0 - (d - 1), 0.0, 1.0); }
  double expected_tokens(int k) const override {
    check_k(k);
    if (!answers(k)) {
      std::ostringstream s;
      s << "synthetic acceptance length " << al_ << " needs K >= " << int(std::ceil(al_ - 1.0)) << " drafts (AL <= K + 1), got K = " << k;
      throw Error(s.str());
    }
    double al = 1.0;
    for (int d = 1; d <= k; ++d) al += reached(d);
    return al;
  }
  double conditional(int depth, int rank) const override {
    if (rank != 0 || depth < 1) return 0.0;
    const double before = depth == 1 ? 1.0 : reached(depth - 1);
    return before > 0 ? reached(depth) / before : 0.0;
  }
  bool answers(int k) const override { return k == 0 || (k >= 1 && al_ <= k + 1.0 + 1e-12 && k <= max_k()); }
  std::string describe() const override {
    std::ostringstream s;
    s << "synthetic AL " << al_ << " (minimum-variance schedule, as vLLM's synthetic_acceptance_length)";
    return s.str();
  }

 private:
  double al_;
};

class MatchRate final : public AcceptanceModel {
 public:
  MatchRate(AcceptancePtr inner, double h) : inner_(std::move(inner)), h_(h) {
    if (!inner_) throw Error("match rate: no acceptance model to scale");
    check_probability(h_, "match rate (share of steps that draft)");
  }
  double expected_tokens(int k) const override {
    check_k(k);
    return k == 0 ? 1.0 : 1.0 + h_ * (inner_->expected_tokens(k) - 1.0);
  }
  double conditional(int depth, int rank) const override {
    const double c = inner_->conditional(depth, rank);
    return depth == 1 ? h_ * c : c;
  }
  int max_k() const override { return inner_->max_k(); }
  bool answers(int k) const override { return inner_->answers(k); }
  std::string describe() const override {
    std::ostringstream s;
    s << inner_->describe() << ", drafts on " << std::setprecision(3) << 100 * h_ << "% of steps";
    return s.str();
  }

 private:
  AcceptancePtr inner_;
  double h_;
};

class Described final : public AcceptanceModel {
 public:
  Described(AcceptancePtr inner, std::string text) : inner_(std::move(inner)), text_(std::move(text)) {
    if (!inner_) throw Error("described acceptance: no model");
  }
  double expected_tokens(int k) const override { return inner_->expected_tokens(k); }
  double conditional(int depth, int rank) const override { return inner_->conditional(depth, rank); }
  int max_k() const override { return inner_->max_k(); }
  bool answers(int k) const override { return inner_->answers(k); }
  std::string describe() const override { return text_ + ": " + inner_->describe(); }

 private:
  AcceptancePtr inner_;
  std::string text_;
};

}  // namespace

AcceptancePtr with_match_rate(AcceptancePtr inner, double match_rate) {
  return std::make_shared<MatchRate>(std::move(inner), match_rate);
}
AcceptancePtr described_acceptance(AcceptancePtr inner, std::string description) {
  return std::make_shared<Described>(std::move(inner), std::move(description));
}

AcceptancePtr iid_acceptance(double alpha) { return std::make_shared<Iid>(alpha); }
AcceptancePtr conditional_acceptance(std::vector<double> a) { return std::make_shared<Conditional>(std::move(a)); }
AcceptancePtr tree_acceptance(std::vector<std::vector<double>> p) { return std::make_shared<Tree>(std::move(p)); }
AcceptancePtr table_acceptance(std::map<int, double> t) { return std::make_shared<Table>(std::move(t)); }
AcceptancePtr acceptance_by_depth(const std::vector<double>& reached) {
  if (reached.empty()) throw Error("acceptance by depth is empty; give P(accepted >= d) for d = 1, 2, ...");
  // Conditionals a_d = reached[d] / reached[d−1]; a depth no step reached has a_d = 0.
  std::vector<double> a;
  double before = 1.0;
  for (size_t d = 0; d < reached.size(); ++d) {
    const std::string what = "acceptance by depth: P(accepted >= " + std::to_string(d + 1) + ")";
    check_probability(reached[d], what);
    if (reached[d] > before) {
      std::ostringstream s;
      s << what << " = " << reached[d] << " exceeds P(accepted >= " << d << ") = " << before
        << "; a step that accepted d drafts accepted d - 1";
      throw Error(s.str());
    }
    a.push_back(before > 0 ? reached[d] / before : 0.0);
    before = reached[d];
  }
  return conditional_acceptance(std::move(a));
}

AcceptancePtr synthetic_acceptance_length(double al) { return std::make_shared<SyntheticLength>(al); }

AcceptancePtr replay_acceptance(std::vector<int> accepted, int k) {
  return std::make_shared<Replay>(std::move(accepted), k);
}

double leviathan_expected_tokens(double alpha, int k) {
  if (k < 0) throw Error("draft length K must be >= 0, got " + std::to_string(k));
  check_probability(alpha, "acceptance rate alpha");
  if (alpha == 1.0) return k + 1.0;
  return (1.0 - std::pow(alpha, k + 1)) / (1.0 - alpha);
}

double leviathan_speedup(double alpha, int k, double c) {
  if (!(c >= 0)) throw Error("cost ratio c must be >= 0");
  return leviathan_expected_tokens(alpha, k) / (c * k + 1.0);
}

}  // namespace specdec::sim
