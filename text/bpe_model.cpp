// BPE: a piece starts as its characters (each its vocabulary id, or its bytes' "<0xXX>" tokens
// under byte_fallback, or the unknown token) and adjacent symbols are merged, lowest merge rank
// first and leftmost among equal ranks, until no listed merge applies.
#include <map>
#include <queue>
#include <unordered_map>

#include "text/token_model.hpp"
#include "text/utf8.hpp"

namespace specdec::text {

namespace {

struct PairHash {
  std::size_t operator()(const std::pair<int32_t, int32_t>& p) const {
    return std::hash<int64_t>()((static_cast<int64_t>(p.first) << 32) ^ static_cast<uint32_t>(p.second));
  }
};

class BpeModel final : public TokenModel {
 public:
  BpeModel(const json& j, const JsonPlace& place);
  std::string type() const override { return "BPE"; }
  void tokenize(const std::string& piece, std::vector<int32_t>& out) const override;
  std::optional<int32_t> token_to_id(const std::string& token) const override {
    const auto it = vocab_.find(token);
    return it == vocab_.end() ? std::nullopt : std::optional<int32_t>(it->second);
  }
  std::optional<std::string> id_to_token(int32_t id) const override {
    const auto it = tokens_.find(id);
    return it == tokens_.end() ? std::nullopt : std::optional<std::string>(it->second);
  }
  int32_t max_id() const override { return tokens_.empty() ? -1 : tokens_.rbegin()->first; }

 private:
  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  std::unordered_map<std::string, int32_t> vocab_;
  std::map<int32_t, std::string> tokens_;
  std::unordered_map<std::pair<int32_t, int32_t>, Merge, PairHash> merges_;
  std::optional<int32_t> unk_;
  std::string prefix_, suffix_;
  bool fuse_unk_ = false, byte_fallback_ = false, ignore_merges_ = false;
};

BpeModel::BpeModel(const json& j, const JsonPlace& place) {
  const json& vocab = required_member(j, "vocab", place);
  if (!vocab.is_object()) place.at("vocab").fail("must be an object of token: id");
  for (const auto& [token, id] : vocab.items()) {
    const bool in_range = (id.is_number_unsigned() && id.get<uint64_t>() <= uint64_t(kMaxTokenId)) ||
                          (id.is_number_integer() && !id.is_number_unsigned() && id.get<int64_t>() >= 0 && id.get<int64_t>() <= kMaxTokenId);
    if (!in_range) {
      place.at("vocab").fail("gives token '" + text_excerpt(token) + "' the id " + json_excerpt(id) + " (expected an integer in [0, " +
                             std::to_string(kMaxTokenId) + "]: specdec supports vocabularies of up to 2^24 tokens)");
    }
    const auto i = static_cast<int32_t>(id.get<int64_t>());
    if (!tokens_.emplace(i, token).second) {
      place.at("vocab").fail("gives the id " + std::to_string(i) + " to both '" + text_excerpt(tokens_[i]) + "' and '" + text_excerpt(token) + "'");
    }
    vocab_[token] = i;
  }
  if (const json* d = optional_member(j, "dropout")) {
    if (!d->is_number() || d->get<double>() != 0.0) {
      place.at("dropout").fail("is " + json_excerpt(*d) + ": BPE dropout makes encoding random; specdec needs it null or 0");
    }
  }
  if (optional_member(j, "continuing_subword_prefix")) prefix_ = string_member(j, "continuing_subword_prefix", place);
  if (optional_member(j, "end_of_word_suffix")) suffix_ = string_member(j, "end_of_word_suffix", place);
  fuse_unk_ = bool_member(j, "fuse_unk", false, place);
  byte_fallback_ = bool_member(j, "byte_fallback", false, place);
  ignore_merges_ = bool_member(j, "ignore_merges", false, place);
  if (optional_member(j, "unk_token")) {
    const std::string unk = string_member(j, "unk_token", place);
    const auto it = vocab_.find(unk);
    if (it == vocab_.end()) place.at("unk_token").fail("is '" + text_excerpt(unk) + "', which is not in model.vocab");
    unk_ = it->second;
  }
  const json& merges = required_member(j, "merges", place);
  if (!merges.is_array()) place.at("merges").fail("must be a list");
  const JsonPlace mp = place.at("merges");
  for (std::size_t r = 0; r < merges.size(); ++r) {
    const json& m = merges[r];
    std::string a, b;
    if (m.is_string()) {  // "a b" (the older format)
      const std::string s = m.get<std::string>();
      const std::size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
        mp.index(r).fail("is '" + text_excerpt(s) + "', expected two tokens separated by one space");
      }
      a = s.substr(0, space);
      b = s.substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      a = m[0].get<std::string>();
      b = m[1].get<std::string>();
    } else {
      mp.index(r).fail("must be a pair of tokens (\"a b\" or [\"a\", \"b\"])");
    }
    const auto ia = vocab_.find(a), ib = vocab_.find(b);
    if (ia == vocab_.end() || ib == vocab_.end()) {
      mp.index(r).fail("merges '" + text_excerpt(a) + "' and '" + text_excerpt(b) + "', but '" + text_excerpt(ia == vocab_.end() ? a : b) +
                       "' is not in model.vocab");
    }
    const std::string merged = a + b.substr(b.compare(0, prefix_.size(), prefix_) == 0 ? prefix_.size() : 0);
    const auto im = vocab_.find(merged);
    if (im == vocab_.end()) mp.index(r).fail("makes '" + text_excerpt(merged) + "', which is not in model.vocab");
    merges_.emplace(std::make_pair(ia->second, ib->second), Merge{static_cast<int32_t>(r), im->second});
  }
}

void BpeModel::tokenize(const std::string& piece, std::vector<int32_t>& out) const {
  if (piece.empty()) return;
  if (ignore_merges_) {
    const auto it = vocab_.find(piece);
    if (it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  struct Symbol {
    int32_t id;
    int prev, next;
    bool alive;
  };
  std::vector<Symbol> symbols;
  bool last_unk = false;
  const auto push = [&](int32_t id) {
    const int i = static_cast<int>(symbols.size());
    symbols.push_back({id, i - 1, -1, true});
    if (i > 0) symbols[static_cast<std::size_t>(i - 1)].next = i;
  };
  for (std::size_t i = 0; i < piece.size();) {
    const std::size_t n = std::max<std::size_t>(1, utf8_sequence_length(piece, i));
    std::string s = piece.substr(i, n);
    if (i > 0 && !prefix_.empty()) s = prefix_ + s;
    if (i + n == piece.size() && !suffix_.empty()) s += suffix_;
    i += n;
    if (const auto it = vocab_.find(s); it != vocab_.end()) {
      push(it->second);
      last_unk = false;
      continue;
    }
    if (byte_fallback_) {
      std::vector<int32_t> bytes;
      for (unsigned char c : piece.substr(i - n, n)) {
        const auto it = vocab_.find(byte_fallback_token(c));
        if (it == vocab_.end()) break;
        bytes.push_back(it->second);
      }
      if (bytes.size() == n) {
        for (int32_t b : bytes) push(b);
        last_unk = false;
        continue;
      }
    }
    if (!unk_) {
      throw Error("BPE: the character '" + piece.substr(i - n, n) +
                  "' is not in the vocabulary, which has no unk_token (and no byte fallback for it)");
    }
    if (!(fuse_unk_ && last_unk)) push(*unk_);
    last_unk = true;
  }

  // Lowest rank first, then leftmost: (rank, position, new id).
  using Entry = std::tuple<int32_t, int, int32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> queue;
  const auto consider = [&](int left) {
    const int right = symbols[static_cast<std::size_t>(left)].next;
    if (right < 0) return;
    const auto it = merges_.find({symbols[static_cast<std::size_t>(left)].id, symbols[static_cast<std::size_t>(right)].id});
    if (it != merges_.end()) queue.emplace(it->second.rank, left, it->second.new_id);
  };
  for (int i = 0; i + 1 < static_cast<int>(symbols.size()); ++i) consider(i);
  while (!queue.empty()) {
    const auto [rank, left, new_id] = queue.top();
    queue.pop();
    Symbol& l = symbols[static_cast<std::size_t>(left)];
    if (!l.alive || l.next < 0) continue;
    Symbol& r = symbols[static_cast<std::size_t>(l.next)];
    const auto it = merges_.find({l.id, r.id});
    if (it == merges_.end() || it->second.new_id != new_id || it->second.rank != rank) continue;  // stale
    l.id = new_id;
    r.alive = false;
    l.next = r.next;
    if (r.next >= 0) symbols[static_cast<std::size_t>(r.next)].prev = left;
    if (l.prev >= 0) consider(l.prev);
    consider(left);
  }
  for (const Symbol& s : symbols)
    if (s.alive) out.push_back(s.id);
}

}  // namespace

std::unique_ptr<TokenModel> make_bpe_model(const json& j, const JsonPlace& place) { return std::make_unique<BpeModel>(j, place); }

}  // namespace specdec::text
