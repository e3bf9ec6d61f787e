#pragma once
// Text <-> token ids for models whose vocabulary specdec knows. Stored as `vocab.json` beside a
// checkpoint's config.json:
//   {"format": "specdec-vocab", "version": 1, "type": "bytes", "byte_offset": 3,
//    "special_tokens": {"<bos>": 0, "<eos>": 1, "<pad>": 2}}
// "bytes": byte b of the UTF-8 text is token byte_offset + b; special tokens print as their names.
// Models without a vocab.json take and print token ids.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace specdec {

class Vocabulary {
 public:
  static Vocabulary bytes(int byte_offset, std::map<std::string, int> special_tokens);
  static Vocabulary load(const std::filesystem::path& vocab_json);
  // The vocabulary stored beside a checkpoint (dir/vocab.json), if there is one.
  static std::optional<Vocabulary> find(const std::filesystem::path& model_dir);
  void save(const std::filesystem::path& vocab_json) const;

  // Smallest vocab_size a model needs to use this vocabulary.
  int size() const;
  std::vector<int32_t> encode(const std::string& text) const;
  // Invalid UTF-8 sequences are kept byte for byte; special tokens appear as their names.
  std::string decode(const std::vector<int32_t>& ids) const;
  std::string token_text(int32_t id) const;
  std::optional<int32_t> special(const std::string& name) const;

 private:
  int byte_offset_ = 0;
  std::map<std::string, int> special_;
  std::map<int, std::string> special_by_id_;
};

}  // namespace specdec
