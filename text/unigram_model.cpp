// Unigram: the segmentation of a piece into vocabulary pieces with the highest total score
// (Viterbi, ties to the first candidate found, shorter pieces first); a character no piece starts
// with becomes the unknown token, scored min_score - 10, and runs of them fuse into one. Under
// byte_fallback an unknown run is spelled as its "<0xXX>" byte tokens instead.
#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include "text/token_model.hpp"
#include "text/utf8.hpp"

namespace specdec::text {

namespace {

constexpr double kUnknownPenalty = 10.0;

class UnigramModel final : public TokenModel {
 public:
  UnigramModel(const json& j, const JsonPlace& place);
  std::string type() const override { return "Unigram"; }
  void tokenize(const std::string& piece, std::vector<int32_t>& out) const override;
  std::optional<int32_t> token_to_id(const std::string& token) const override {
    const auto it = ids_.find(token);
    return it == ids_.end() ? std::nullopt : std::optional<int32_t>(it->second);
  }
  std::optional<std::string> id_to_token(int32_t id) const override {
    if (id < 0 || id >= static_cast<int32_t>(pieces_.size())) return std::nullopt;
    return pieces_[static_cast<std::size_t>(id)];
  }
  int32_t max_id() const override { return static_cast<int32_t>(pieces_.size()) - 1; }

 private:
  std::vector<std::string> pieces_;
  std::vector<double> scores_;
  std::unordered_map<std::string, int32_t> ids_;
  std::size_t longest_ = 0;
  std::optional<int32_t> unk_;
  bool byte_fallback_ = false;
  double unknown_score_ = 0;
};

UnigramModel::UnigramModel(const json& j, const JsonPlace& place) {
  const json& vocab = required_member(j, "vocab", place);
  const JsonPlace vp = place.at("vocab");
  if (!vocab.is_array() || vocab.empty()) vp.fail("must be a non-empty list of [piece, score]");
  // A piece's id is its index: the list may not be longer than the ids specdec supports.
  if (vocab.size() - 1 > uint64_t(kMaxTokenId)) {
    vp.fail("has " + std::to_string(vocab.size()) + " pieces, more than specdec supports (2^24)");
  }
  double min_score = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < vocab.size(); ++i) {
    const json& e = vocab[i];
    if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number()) vp.index(i).fail("must be [piece, score]");
    const std::string p = e[0].get<std::string>();
    pieces_.push_back(p);
    scores_.push_back(e[1].get<double>());
    ids_.emplace(p, static_cast<int32_t>(i));  // the first of duplicate pieces wins
    longest_ = std::max(longest_, p.size());
    min_score = std::min(min_score, scores_.back());
  }
  unknown_score_ = min_score - kUnknownPenalty;
  if (const json* u = optional_member(j, "unk_id")) {
    if (!u->is_number_integer() || u->get<int64_t>() < 0 || u->get<int64_t>() >= static_cast<int64_t>(pieces_.size())) {
      place.at("unk_id").fail("is " + json_excerpt(*u) + " (expected an index into model.vocab)");
    }
    unk_ = static_cast<int32_t>(u->get<int64_t>());
  }
  byte_fallback_ = bool_member(j, "byte_fallback", false, place);
}

void UnigramModel::tokenize(const std::string& piece, std::vector<int32_t>& out) const {
  if (piece.empty()) return;
  const std::size_t n = piece.size();
  struct Best {
    double score = 0;
    std::size_t start = 0;
    int32_t id = -1;
    bool set = false;
  };
  std::vector<Best> best(n + 1);  // best path ending at each byte offset
  best[0].set = true;
  for (std::size_t start = 0; start < n;) {
    const std::size_t char_len = std::max<std::size_t>(1, utf8_sequence_length(piece, start));
    if (!best[start].set) {
      start += char_len;
      continue;
    }
    const double base = best[start].score;
    bool single_char = false;
    // Candidates in order of length, as a prefix-trie walk finds them.
    for (std::size_t len = 1; len <= longest_ && start + len <= n; ++len) {
      const auto it = ids_.find(piece.substr(start, len));
      if (it == ids_.end()) continue;
      const double score = base + scores_[static_cast<std::size_t>(it->second)];
      Best& b = best[start + len];
      if (!b.set || score > b.score) b = {score, start, it->second, true};
      if (len == char_len) single_char = true;
    }
    if (!single_char) {
      const double score = base + unknown_score_;
      Best& b = best[start + char_len];
      if (!b.set || score > b.score) b = {score, start, -1, true};  // -1: the unknown token
    }
    start += char_len;
  }
  // Back from the end; unknown runs fuse.
  std::vector<std::pair<std::string, int32_t>> path;
  for (std::size_t end = n; end > 0;) {
    const Best& b = best[end];
    std::string text = piece.substr(b.start, end - b.start);
    if (b.id < 0 && !path.empty() && path.back().second < 0) {
      path.back().first = text + path.back().first;
    } else {
      path.emplace_back(std::move(text), b.id);
    }
    end = b.start;
  }
  std::reverse(path.begin(), path.end());
  for (const auto& [text, id] : path) {
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    if (byte_fallback_) {
      std::vector<int32_t> bytes;
      for (unsigned char c : text) {
        const auto it = ids_.find(byte_fallback_token(c));
        if (it == ids_.end()) break;
        bytes.push_back(it->second);
      }
      if (bytes.size() == text.size()) {
        out.insert(out.end(), bytes.begin(), bytes.end());
        continue;
      }
    }
    if (!unk_) throw Error("Unigram: '" + text_excerpt(text) + "' is not in the vocabulary, which has no unk_id");
    out.push_back(*unk_);
  }
}

}  // namespace

std::unique_ptr<TokenModel> make_unigram_model(const json& j, const JsonPlace& place) {
  return std::make_unique<UnigramModel>(j, place);
}

}  // namespace specdec::text
