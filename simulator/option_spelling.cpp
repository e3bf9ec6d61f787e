#include "simulator/option_spelling.hpp"

namespace specdec::sim {

std::string OptionSpelling::operator()(std::string_view option) const {
  for (const auto& [words, name] : renamed)
    if (words == option) return prefix + name;
  std::string out = prefix;
  for (const char c : option) out += c == '-' ? separator : c;
  return out;
}

std::string OptionSpelling::operator()(std::string_view option, std::string_view value) const {
  return (*this)(option) + assign + std::string(value);
}

std::string OptionSpelling::list(std::initializer_list<std::string_view> options, std::string_view last) const {
  std::string out;
  std::size_t i = 0;
  for (const std::string_view o : options) {
    if (i) out += i + 1 == options.size() ? " " + std::string(last) + " " : ", ";
    out += (*this)(o);
    ++i;
  }
  return out;
}

OptionSpelling OptionSpelling::renaming(std::initializer_list<std::pair<std::string, std::string>> names) const {
  OptionSpelling out = *this;
  out.renamed.insert(out.renamed.end(), names.begin(), names.end());
  return out;
}

}  // namespace specdec::sim
