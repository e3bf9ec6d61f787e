// The exact step-field table (traces/trace_compare.hpp) and semantically_equal: exact comparison
// of what two runs computed, ignoring when and how fast.
#include "traces/trace_compare.hpp"

#include <bit>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <type_traits>

#include "reference/core/error.hpp"
#include "reference/core/format.hpp"
#include "reference/io/json_input.hpp"

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
template <class T> bool same(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!same(a[i], b[i])) return false;
  return true;
}

template <class T> struct is_vector : std::false_type {};
template <class T> struct is_vector<std::vector<T>> : std::true_type {};

// Calls fn(a's value, b's value) with the field's typed values.
template <class Fn> decltype(auto) with_values(const StepField& f, const StepRecord& a, const StepRecord& b, Fn&& fn) {
  return std::visit([&](auto member) -> decltype(auto) { return fn(a.*member, b.*member); }, f.member);
}
template <class Fn> decltype(auto) with_value(const StepField& f, const StepRecord& s, Fn&& fn) {
  return std::visit([&](auto member) -> decltype(auto) { return fn(s.*member); }, f.member);
}

// A Philox counter as "{a,b,c,d}", in both wordings.
std::string counter_text(const std::array<uint32_t, 4>& v) {
  std::string s = "{";
  for (std::size_t w = 0; w < 4; ++w) {
    if (w) s += ',';
    s += std::to_string(v[w]);
  }
  return s + '}';
}

// One element as brief_value writes it.
template <class T> std::string brief_element(const T& v) {
  if constexpr (std::is_same_v<T, double>) {
    return format_brief(v);
  } else if constexpr (std::is_same_v<T, std::array<uint32_t, 4>>) {
    return counter_text(v);
  } else {
    return std::to_string(static_cast<long long>(v));
  }
}

// One element as comma_values writes it.
template <class T> std::string comma_element(const T& v) {
  if constexpr (std::is_same_v<T, std::array<uint32_t, 4>>) {
    return counter_text(v);
  } else {
    std::ostringstream o;
    o << +v;
    return o.str();
  }
}

std::string replace_all(std::string s, const std::string& what, const std::string& with) {
  for (std::size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + with.size())) s.replace(at, what.size(), with);
  return s;
}

}  // namespace

const std::vector<StepField>& exact_step_fields() {
  using Id = StepFieldId;
  using R = StepRecord;
  static const std::vector<StepField> fields = {
      {Id::position, "position", "positions differ: {a} vs {b}", &R::position},
      {Id::emitted_tokens, "emitted_tokens", "emitted tokens differ: {a} vs {b}", &R::emitted_tokens},
      {Id::draft_tokens, "draft_tokens", "draft tokens differ: {a} vs {b}", &R::draft_tokens},
      {Id::draft_parents, "draft_parents", "draft parents differ: {a} vs {b}", &R::draft_parents},
      {Id::accepted_path, "accepted_path", "accepted path differ: {a} vs {b}", &R::accepted_path},
      {Id::accept_decisions, "accept_decisions", "accept decisions differ: {a} vs {b}", &R::accept_decisions},
      {Id::accept_nodes, "accept_nodes", "accept nodes differ: {a} vs {b}", &R::accept_nodes},
      {Id::accept_uniforms, "accept_uniforms", "acceptance uniforms differ (bitwise)", &R::accept_uniforms},
      {Id::bonus_token, "bonus_token", "bonus token differs: {a} vs {b}", &R::bonus_token},
      {Id::random_counters, "random_counters", "Philox counters differ", &R::random_counters},
      {Id::draft_logit_nodes, "draft_logit_nodes", "draft logit nodes differ: {a} vs {b}", &R::draft_logit_nodes},
  };
  return fields;
}

const StepField& step_field(StepFieldId id) {
  const StepField& f = exact_step_fields().at(static_cast<std::size_t>(id));  // the table is in StepFieldId order
  return f;
}

bool same_field(const StepField& f, const StepRecord& a, const StepRecord& b) {
  return with_values(f, a, b, [](const auto& x, const auto& y) { return same(x, y); });
}

const StepField* first_differing_field(std::initializer_list<StepFieldId> order, const StepRecord& a, const StepRecord& b) {
  for (StepFieldId id : order) {
    const StepField& f = step_field(id);
    if (!same_field(f, a, b)) return &f;
  }
  return nullptr;
}

// A field's value as "[a b c]" (validate's wording) or "[a,b,c]" (trace diff's): `element`
// writes one element.
template <class Element>
std::string joined_value(const StepField& f, const StepRecord& step, char separator, Element element) {
  return with_value(f, step, [&](const auto& v) {
    using T = std::decay_t<decltype(v)>;
    if constexpr (is_vector<T>::value) {
      std::string s = "[";
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (i) s += separator;
        s += element(v[i]);
      }
      return s + ']';
    } else {
      return std::to_string(v);
    }
  });
}

std::string brief_value(const StepField& f, const StepRecord& step) {
  return joined_value(f, step, ' ', [](const auto& x) { return brief_element(x); });
}

std::string element_difference(const StepField& f, const StepRecord& a, const StepRecord& b) {
  return with_values(f, a, b, [](const auto& x, const auto& y) -> std::string {
    using T = std::decay_t<decltype(x)>;
    if constexpr (is_vector<T>::value) {
      if (x.size() != y.size()) return ": length " + std::to_string(x.size()) + " vs " + std::to_string(y.size());
      for (std::size_t i = 0; i < x.size(); ++i)
        if (!same(x[i], y[i])) return "[" + std::to_string(i) + "]: " + show(x[i]) + " vs " + show(y[i]);
      return "";
    } else {
      return same(x, y) ? std::string() : ": " + show(x) + " vs " + show(y);
    }
  });
}

std::string comma_values(const StepField& f, const StepRecord& step) {
  return joined_value(f, step, ',', [](const auto& x) { return comma_element(x); });
}

std::string difference_sentence(const StepField& f, const StepRecord& a, const StepRecord& b) {
  return replace_all(replace_all(f.sentence, "{a}", comma_values(f, a)), "{b}", comma_values(f, b));
}

namespace {

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
  // An exact step field, named by its path ("steps[2].") and the table's name.
  void field(const std::string& step, StepFieldId id, const StepRecord& a, const StepRecord& b) {
    const StepField& f = step_field(id);
    if (!done() && !same_field(f, a, b)) diff_ = step + f.name + element_difference(f, a, b);
  }
  // A draft-free drafter's sources, node by node.
  void sources(const std::string& where, const std::vector<DraftSourceRecord>& a, const std::vector<DraftSourceRecord>& b) {
    if (done()) return;
    if (a.size() != b.size()) {
      diff_ = where + ": length " + std::to_string(a.size()) + " vs " + std::to_string(b.size());
      return;
    }
    for (std::size_t i = 0; i < a.size() && !done(); ++i) {
      const std::string w = where + "[" + std::to_string(i) + "]";
      value(w + ".origin", static_cast<uint8_t>(a[i].origin), static_cast<uint8_t>(b[i].origin));
      value(w + ".position", a[i].position, b[i].position);
      value(w + ".match_length", a[i].match_length, b[i].match_length);
      value(w + ".request", a[i].request, b[i].request);
    }
  }
  void json(const std::string& where, const std::string& a, const std::string& b) {
    if (done()) return;
    // Compared as JSON values where both parse (within the depth limit), else as text.
    auto parse = [](const std::string& text) -> std::optional<nlohmann::json> {
      try {
        return parse_json(text, "trace JSON");
      } catch (const Error&) {
        return std::nullopt;
      }
    };
    const auto ja = parse(a), jb = parse(b);
    const bool equal = (!ja || !jb) ? a == b : *ja == *jb;
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
  using Id = StepFieldId;
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
    for (Id id : {Id::position, Id::emitted_tokens, Id::draft_tokens, Id::draft_parents, Id::accepted_path, Id::accept_decisions,
                  Id::accept_nodes, Id::accept_uniforms, Id::bonus_token, Id::random_counters})
      c.field(w, id, x, y);
    c.sources(w + "draft_sources", x.draft_sources, y.draft_sources);
    c.logits(w + "target_logits", x.target_logits, y.target_logits);
    c.logits(w + "draft_logits", x.draft_logits, y.draft_logits);
    c.field(w, Id::draft_logit_nodes, x, y);
  }
  c.list("output", a.output, b.output);
  c.value("stop_reason", a.stop_reason, b.stop_reason);
  if (first_difference != nullptr) *first_difference = c.diff();
  return !c.done();
}

}  // namespace specdec
