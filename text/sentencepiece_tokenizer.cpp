#include "text/sentencepiece_tokenizer.hpp"

#include <sentencepiece_processor.h>

#include "reference/core/input_limits.hpp"
#include "reference/io/json_input.hpp"
#include "text/json_fields.hpp"
#include "text/token_model.hpp"
#include "text/utf8.hpp"

namespace specdec::text {

SentencePieceTokenizer::SentencePieceTokenizer() : sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {}
SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::load(const std::filesystem::path& dir) {
  std::unique_ptr<SentencePieceTokenizer> t(new SentencePieceTokenizer());
  const std::filesystem::path path = dir / "tokenizer.model";
  t->file_ = path.string();
  // libsentencepiece opens the path itself: a pipe there would block it, /dev/zero never end.
  check_input_file(path.string(), "tokenizer model");
  const auto status = t->sp_->Load(path.string());
  if (!status.ok()) throw Error(path.string() + ": not a SentencePiece model (" + status.ToString() + ")");
  if (t->sp_->bos_id() >= 0) t->bos_ = t->sp_->bos_id();
  if (t->sp_->eos_id() >= 0) t->eos_.push_back(t->sp_->eos_id());
  const std::filesystem::path config_path = dir / "tokenizer_config.json";
  if (std::filesystem::exists(config_path)) {
    const json c = parse_json(read_input_file(config_path.string(), "tokenizer config"), config_path.string());
    const JsonPlace cp{config_path.string(), ""};
    t->add_bos_ = bool_member(c, "add_bos_token", true, cp);
    t->add_eos_ = bool_member(c, "add_eos_token", false, cp);
  }
  if (t->add_bos_ && !t->bos_) t->add_bos_ = false;  // a model without <s> adds nothing
  if (t->add_eos_ && t->eos_.empty()) throw Error(config_path.string() + ": field 'add_eos_token' is true but " + path.string() + " has no EOS piece");
  return t;
}

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::from_serialized(const std::string& model_proto,
                                                                               const std::string& source, bool add_bos,
                                                                               bool add_eos) {
  std::unique_ptr<SentencePieceTokenizer> t(new SentencePieceTokenizer());
  t->file_ = source;
  const auto status = t->sp_->LoadFromSerializedProto(model_proto);
  if (!status.ok()) throw Error(source + ": not a SentencePiece model (" + status.ToString() + ")");
  if (t->sp_->bos_id() >= 0) t->bos_ = t->sp_->bos_id();
  if (t->sp_->eos_id() >= 0) t->eos_.push_back(t->sp_->eos_id());
  t->add_bos_ = add_bos && t->bos_;
  t->add_eos_ = add_eos && !t->eos_.empty();
  return t;
}

std::string SentencePieceTokenizer::description() const {
  return file_ + " (SentencePiece, " + std::to_string(size()) + " token ids)";
}

std::vector<int32_t> SentencePieceTokenizer::encode(const std::string& text, bool add_special_tokens) const {
  check_input_limit(file_, "the text to encode (bytes)", static_cast<long long>(text.size()), kMaxPromptBytes);
  require_valid_utf8(text, "the text to encode");
  std::vector<int> pieces;
  const auto status = sp_->Encode(text, &pieces);
  if (!status.ok()) throw Error(file_ + ": cannot encode the text (" + status.ToString() + ")");
  std::vector<int32_t> ids;
  if (add_special_tokens && add_bos_) ids.push_back(*bos_);
  ids.insert(ids.end(), pieces.begin(), pieces.end());
  if (add_special_tokens && add_eos_) ids.push_back(eos_.front());
  return ids;
}

std::string SentencePieceTokenizer::decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
  // SentencePiece drops control tokens (<s>, </s>) when decoding; they are shown by name here
  // unless skipped, so the text runs are decoded between them.
  std::string out;
  std::vector<int> run;
  const auto flush = [&] {
    if (run.empty()) return;
    std::string s;
    const auto status = sp_->Decode(run, &s);
    if (!status.ok()) throw Error(file_ + ": cannot decode (" + status.ToString() + ")");
    out += s;
    run.clear();
  };
  for (int32_t id : ids) {
    if (id < 0 || id >= size()) continue;  // outside the vocabulary: dropped, as libraries do
    if (sp_->IsControl(id)) {
      flush();
      if (!skip_special_tokens) out += sp_->IdToPiece(id);
    } else {
      run.push_back(id);
    }
  }
  flush();
  return out;
}

std::string SentencePieceTokenizer::token_text(int32_t id) const {
  if (id < 0 || id >= size()) return id_text(id);
  std::string piece = sp_->IdToPiece(id);
  if (sp_->IsByte(id) || sp_->IsControl(id) || sp_->IsUnknown(id)) return piece;
  for (std::size_t at = piece.find("\xE2\x96\x81"); at != std::string::npos; at = piece.find("\xE2\x96\x81", at + 1)) {
    piece.replace(at, 3, " ");
  }
  return piece;
}

int32_t SentencePieceTokenizer::size() const { return sp_->GetPieceSize(); }

std::optional<int32_t> SentencePieceTokenizer::token_id(const std::string& token) const {
  const int id = sp_->PieceToId(token);
  if (id < 0 || (sp_->IsUnknown(id) && sp_->IdToPiece(id) != token)) return std::nullopt;
  return id;
}

}  // namespace specdec::text
