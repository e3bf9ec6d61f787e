#pragma once
// A tokenizer.json "pre_tokenizer": splits normalized text into the pieces ("words") the model
// tokenizes one by one. Supported: ByteLevel, Split (string or regex; every delimiter behaviour;
// invert), Metaspace, Digits, Whitespace, WhitespaceSplit, Sequence. Others are refused by name.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "text/json_fields.hpp"

namespace specdec::text {

struct Piece {
  std::string text;
  bool at_origin = false;  // begins at offset 0 of the whole input (Metaspace's prepend_scheme "first")
};

class PreTokenizer {
 public:
  PreTokenizer();  // no splitting (a null pre_tokenizer)
  static PreTokenizer parse(const json& j, const JsonPlace& place);
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;

  // The pieces after every step. Throws specdec::Error naming the step when they hold more than
  // `max_bytes` bytes together (each step can prefix every piece, or double its bytes).
  std::vector<Piece> apply(std::vector<Piece> pieces, uint64_t max_bytes = UINT64_MAX) const;

 private:
  struct Step;
  std::vector<std::unique_ptr<Step>> steps_;
  static void parse_into(const json& j, const JsonPlace& place, PreTokenizer& out);
};

}  // namespace specdec::text
