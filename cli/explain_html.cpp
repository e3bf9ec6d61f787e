#include "cli/explain_html.hpp"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/options.hpp"
#include "reference/core/error.hpp"
#include "reference/methods/registry.hpp"

namespace specdec::cli {

namespace {

using nlohmann::json;

json num(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

json entries(const std::vector<ProbEntry>& v, const TokenText& tt) {
  json a = json::array();
  for (const ProbEntry& e : v) a.push_back({{"t", tt.label(e.token)}, {"id", e.token}, {"p", num(e.p)}, {"q", num(e.q)}});
  return a;
}

json labels(const std::vector<int32_t>& ids, const TokenText& tt) {
  json a = json::array();
  for (int32_t t : ids) a.push_back(tt.label(t));
  return a;
}

json step_json(const StepRecord& r, const TokenText& tt) {
  json nodes = json::array();
  for (size_t n = 0; n < r.tokens.size(); ++n) {
    nodes.push_back({{"t", tt.label(r.tokens[n])}, {"parent", r.parents[n]}, {"depth", r.depths[n]}, {"status", r.status[n]}});
  }
  json points = json::array();
  for (const Point& pt : r.points) {
    json tests = json::array();
    for (const NodeTest& t : pt.tests) {
      tests.push_back({{"node", t.node},
                       {"t", tt.label(t.token)},
                       {"accepted", t.accepted},
                       {"p", num(t.p)},
                       {"q", num(t.q)},
                       {"removed", labels(t.removed, tt)},
                       {"p_used", num(t.p_used)},
                       {"q_used", num(t.q_used)},
                       {"accept_prob", num(t.accept_prob)},
                       {"u", num(t.u)},
                       {"choice", t.choice >= 0 ? json(tt.label(t.choice)) : json(nullptr)},
                       {"choice_p", num(t.choice_p)},
                       {"score", num(t.score)},
                       {"choice_score", num(t.choice_score)}});
    }
    points.push_back({{"node", pt.node}, {"depth", pt.depth}, {"position", pt.position}, {"reached", pt.reached},
                      {"top", entries(pt.top, tt)}, {"tests", tests}});
  }
  json sources = nullptr;  // draft-free drafters: where the drafts were copied from
  if (!r.sources.empty()) {
    const DraftSources& d = r.sources;
    json nodes_from = json::array();
    for (const DraftSource& n : d.nodes) {
      nodes_from.push_back({{"origin", n.origin == DraftSource::Origin::responses ? "responses" : "context"},
                            {"position", n.position},
                            {"match_length", n.match_length},
                            {"request", n.request >= 0 ? json(n.request) : json(nullptr)}});
    }
    json window = json::array();
    for (const SourceToken& w : d.window) window.push_back({{"t", tt.label(w.token)}, {"position", w.position}, {"role", w.role}});
    sources = {{"origin", d.origin},
               {"history", d.history},
               {"match_length", d.match_length},
               {"copied_from", d.copied_from},
               {"match_start", d.match_start >= 0 ? json(d.match_start) : json(nullptr)},
               {"request", d.request >= 0 ? json(d.request) : json(nullptr)},
               {"suffix", labels(d.suffix, tt)},
               {"window", window},
               {"nodes", nodes_from}};
  }
  const FinalToken& f = r.final;
  json scores = json::array();
  for (const ScoreEntry& e : f.scores)
    scores.push_back({{"t", tt.label(e.token)}, {"score", num(e.score)}, {"gumbel", num(e.gumbel)}, {"p", num(e.p)}});
  json fin = {{"t", tt.label(f.token)}, {"kind", f.kind}, {"point", f.point}, {"position", f.position}, {"p", num(f.p)},
              {"u", num(f.u)}, {"score", num(f.score)}, {"from", f.from}, {"distribution", entries(f.distribution, tt)},
              {"scores", scores}, {"kept", static_cast<int>(r.emitted.size()) == r.produced}};
  return {{"index", r.index},
          {"sequential", r.sequential},
          {"position", r.position},
          {"pending", r.pending >= 0 ? json(tt.label(r.pending)) : json(nullptr)},
          {"chain", r.chain},
          {"nodes", nodes},
          {"points", points},
          {"final", fin},
          {"emitted", labels(r.emitted, tt)},
          {"produced", r.produced},
          {"cut", r.cut},
          {"drafter_forwards", r.drafter_forwards},
          {"target_rows", r.target_rows},
          {"draft_ns", r.draft_ns},
          {"target_ns", r.target_ns},
          {"sources", sources},
          {"total_tokens", r.total_tokens},
          {"total_target_forwards", r.total_target_forwards},
          {"total_drafter_forwards", r.total_drafter_forwards},
          {"full_steps", r.full_steps},
          {"full_step_tokens", r.full_step_tokens}};
}

// Inside <script>, "</" could end the element: every '<' in the data (only in strings) is
// written as \u003c, which JSON reads back as '<'.
std::string script_safe(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

// The pages' style and scripts (explain_page_assets.cpp, compare_page_assets.cpp).
extern const char* const kPageStyle;
extern const char* const kPageScript;
extern const char* const kExplainPageMain;
extern const char* const kComparePageStyle;
extern const char* const kComparePageMain;

std::string TokenText::label(int32_t token) const {
  if (tokenizer_) return escaped(tokenizer_->token_text(token));
  std::string s = "#";  // appended, not "#" + temporary: GCC 12 warns falsely (-Wrestrict) on that
  s += std::to_string(token);
  return s;
}

std::string TokenText::quoted(int32_t token) const {
  if (!tokenizer_) {
    std::string s = "<";
    s += std::to_string(token);
    s += '>';
    return s;
  }
  std::string s = "'";
  s += label(token);
  s += '\'';
  return s;
}

std::string TokenText::text(const std::vector<int32_t>& ids) const {
  if (tokenizer_) {
    std::string s = "\"";
    s += escaped(tokenizer_->decode(ids));
    s += '"';
    return s;
  }
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) s += ' ';
    s += std::to_string(ids[i]);
  }
  s += ']';
  return s;
}

void check_html_destination(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  std::error_code ec;
  if (fs::is_directory(p, ec)) throw Error("--html " + path + ": is a directory; give the page's file name (OUT.html)");
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::exists(dir, ec)) throw Error("--html " + path + ": the directory " + dir.string() + " does not exist");
  if (!fs::is_directory(dir, ec)) throw Error("--html " + path + ": " + dir.string() + " is not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    throw Error("--html " + path + ": the directory " + dir.string() + " is not writable (" + std::strerror(errno) + ")");
  }
}

void check_html_option(const std::vector<std::string>& args, const std::string& path) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--html" && i + 1 < args.size() && args[i + 1].empty()) {  // (boost refuses "--html=" itself)
      throw Error("--html: empty file name; expected the page to write, e.g. --html run.html");
    }
  }
  if (!path.empty()) check_html_destination(path);
}

json run_json(const ExplainRun& run, const TokenText& tt) {
  json steps = json::array();
  for (const StepRecord& r : run.steps) steps.push_back(step_json(r, tt));
  // Parallel drafting (every depth in one drafter forward, as the method's schedule says of a
  // two-draft chain) is shown with its depth.
  const MethodEntry& method = method_entry(run.method);
  StepShape two_drafts;
  two_drafts.k = 2;
  int parallel = 0;
  if (method.schedule && method.schedule(two_drafts, CatchUp{}).forwards() == 1) {
    for (const StepRecord& r : run.steps)
      for (int d : r.depths) parallel = std::max(parallel, d);
  }
  const json sampling = {{"mode", to_string(run.sampling.mode)}, {"temperature", run.sampling.temperature},
                         {"top_k", run.sampling.top_k}, {"top_p", run.sampling.top_p}, {"seed", run.sampling.seed}};
  return {{"method", run.method},
          {"title", method.title.empty() ? run.method : method.title},
          {"method_json", run.method_json},
          {"sampling", sampling},
          {"max_new_tokens", run.max_new_tokens},
          {"prompt", labels(run.prompt, tt)},
          {"prompt_text", tt.text(run.prompt)},
          {"output_text", tt.text(run.output)},
          {"output_ids", run.output},
          {"output_tokens", run.output.size()},
          {"stop_reason", run.stop_reason},
          {"parallel_depth", parallel},
          {"draft_free", run.draft_free},
          {"drafted_full", run.drafted_full},
          {"accepted_full", run.accepted_full},
          {"steps", steps}};
}

std::string html_page(PageKind kind, const std::string& title, const json& data) {
  std::string page;
  page += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  page += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n";
  page += "<title>" + html_escape(title) + "</title>\n";
  page += "<style>\n";
  page += kPageStyle;
  if (kind == PageKind::compare) page += kComparePageStyle;
  page += "</style>\n</head>\n<body>\n";
  page += "<script id=\"run-data\" type=\"application/json\">" + script_safe(data.dump(-1, ' ', false, json::error_handler_t::replace)) + "</script>\n";
  page += "<script>\n";
  page += kPageScript;
  page += kind == PageKind::compare ? kComparePageMain : kExplainPageMain;
  page += "</script>\n</body>\n</html>\n";
  return page;
}

std::string explain_page(const ExplainRun& run, const TokenText& tt, const json& facts) {
  json data = run_json(run, tt);
  data["facts"] = facts;
  return html_page(PageKind::explain, "specdec explain: " + run.method + ", " + to_string(run.sampling.mode), data);
}

}  // namespace specdec::cli
