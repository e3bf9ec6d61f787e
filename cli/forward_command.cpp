// specdec forward: one forward pass of a target (and optionally an EAGLE-family head's
// teacher-forced first step) over a prompt, written to HDF5 for comparison with other libraries.
//
// Output schema (every array row-major; written atomically: the file appears complete or not at
// all):
//   /tokens           int32   (T)            the prompt
//   /logits           float32 (T, V)         the target's logits at positions 0..T-1 (causal)
//   /hidden           float32 (L+1, T, H)    Hugging Face's output_hidden_states: index 0 is the
//                                            embedding output, index l (1 <= l < L) the output of
//                                            layer l-1 (the state entering layer l), and index L
//                                            the last layer's output AFTER the final norm — what
//                                            transformers (checked with 5.19) returns as its last
//                                            entry, equal to its last_hidden_state
// With --drafter HEAD_DIR (EAGLE-1, EAGLE-3 or P-EAGLE, any layout load_eagle_head reads), the
// head's teacher-forced first step as experiments/train/crosscheck.py defines it:
//   /draft/logits     float32 (N', Vd)       over the draft vocabulary (EAGLE-1: Vd = V)
//   /draft/hidden     float32 (N', H)        the head's last layer output before its final norm
//   /draft/tokens     int32   (N')           the head's input tokens
//   /draft/positions  int32   (N')           their positions
// Row i < N = T-1 pairs the target's feature f_i (EAGLE-1: the final hidden state after the norm;
// EAGLE-3 / P-EAGLE: its aux hidden states, concatenated) with token t_{i+1} at position i
// (EaglePairCache::catch_up builds these rows). P-EAGLE appends K-1 mask slots (mask token,
// mask_hidden through fc) at positions N..N+K-2, as its proposer does, so N' = N + K - 1; other
// heads have N' = N. The attributes of /draft name the head's kind and layout.
#include <hdf5.h>

#include <filesystem>
#include <ostream>

#include "cli/options.hpp"
#include "runtime/backend.hpp"
#include "reference/core/error.hpp"
#include "reference/drafters/eagle_checkpoint.hpp"
#include "reference/drafting/draft_limits.hpp"
#include "reference/drafting/eagle_pair_cache.hpp"
#include "traces/hdf5.hpp"

namespace specdec::cli {

namespace {

// A 3-D float32 dataset (the wrapper in traces/hdf5 writes 1-D and 2-D ones); data row-major.
void write_cube(h5::Group& g, const std::string& name, const hsize_t dims[3], const float* data) {
  h5::Handle space(H5Screate_simple(3, dims, nullptr), H5Sclose);
  if (!space.valid()) g.fail("cannot create the dataspace of '" + name + "'");
  h5::Handle d(H5Dcreate2(g.id(), name.c_str(), H5T_IEEE_F32LE, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
               H5Dclose);
  if (!d.valid()) g.fail("cannot create dataset '" + name + "'");
  if (H5Dwrite(d.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) {
    g.fail("cannot write dataset '" + name + "'");
  }
  if (d.close() < 0) g.fail("cannot close dataset '" + name + "'");
}

void write_rows(h5::Group& g, const std::string& name, const Matrix& m) {
  // Matrix is row-major (reference/core/tensor.hpp).
  g.write_matrix<float>(name, static_cast<uint64_t>(m.rows()), static_cast<uint64_t>(m.cols()), m.data(),
                        h5::Compression::none);
}

struct DraftStep {
  EagleHead::Input input;
  EagleHead::Output output;
};

// The head's teacher-forced first step over the prompt, from the target forward's features.
DraftStep draft_step(const EagleHead& head, const std::vector<int32_t>& tokens, const ForwardResult& target, int k,
                     bool force_depth, const std::string& source) {
  const EagleHeadConfig& c = head.config();
  const int T = static_cast<int>(tokens.size());
  if (T < 2) {
    throw Error("--drafter: the head pairs feature f_i with token t_{i+1}, so the prompt needs at least 2 tokens (got " +
                std::to_string(T) + ")");
  }
  const bool peagle = c.kind == EagleKind::peagle;
  if (peagle) {
    if (k < 1) throw Error("--k must be >= 1 (got " + std::to_string(k) + ")");
    check_draft_limit("--k", "K", k, kMaxDraftDepth);
    if (c.trained_depth > 0 && k > c.trained_depth && !force_depth) {
      throw Error(source + ": --k " + std::to_string(k) + " is beyond the " + std::to_string(c.trained_depth) +
                  " parallel positions the head was trained for (lower --k, or pass --force-depth)");
    }
  }
  const int extra = peagle ? k - 1 : 0;
  // The features the head fuses: EAGLE-1 and MTP the final hidden state (after the norm, index L), else
  // the aux states at the head's indices, both taken from the all-layer forward of the target.
  const int H = head.target().config().hidden_size;
  const int L = head.target().config().num_hidden_layers;
  const std::vector<int> layers = c.reads_final_hidden() ? std::vector<int>{L} : c.aux_layers;
  Matrix features(T, static_cast<Eigen::Index>(layers.size()) * H);
  for (size_t a = 0; a < layers.size(); ++a) {
    features.middleCols(static_cast<Eigen::Index>(a) * H, H) =
        target.aux_hidden.middleCols(static_cast<Eigen::Index>(layers[a]) * H, H);
  }
  DraftContext ctx;
  ctx.sequence = &tokens;
  ctx.committed = T - 1;
  (c.reads_final_hidden() ? ctx.final_hidden : ctx.aux_hidden) = &features;
  EaglePairCache pairs(head, T, extra, source);
  DraftStep s;
  s.input = pairs.catch_up(ctx, extra);  // rows i < N: (f_i, t_{i+1}) at position i
  const int real = static_cast<int>(s.input.tokens.size());
  if (peagle) {
    // The K − 1 mask slots after the pairs, exactly as PEagleProposer::propose appends them.
    s.input.features.conservativeResize(real + extra, Eigen::NoChange);
    for (int j = 1; j <= extra; ++j) {
      s.input.tokens.push_back(c.mask_token_id);
      s.input.positions.push_back(ctx.committed - 1 + j);
      s.input.features.row(real - 1 + j) = head.mask_hidden().transpose();
    }
  }
  for (int i = 0; i < static_cast<int>(s.input.tokens.size()); ++i) s.input.logit_rows.push_back(i);
  s.output = head.forward(pairs.cache(), s.input);
  return s;
}

}  // namespace

int run_forward(const std::vector<std::string>& args, CommandIO& io) {
  DecodeArgs a;
  std::string out;
  po::options_description desc("options");
  desc.add_options()
      ("model", po::value(&a.model)->required(), "checkpoint directory (config.json + safetensors, sharded or not)")
      ("prompt-ids", po::value(&a.prompt_ids), "tokens as comma-separated ids (positions 0..T-1)")
      ("prompt", po::value(&a.prompt), "prompt text instead (models with a vocab.json)")
      ("out", po::value(&out), "HDF5 file to write (replaced atomically)")
      ("backend", po::value(&a.backend)->default_value(a.backend), "forward implementation: reference | cpu (optimized, when built) | plugin:PATH.so (a plug-in backend)")
      ("drafter", po::value(&a.drafter), "EAGLE-1 / EAGLE-3 / P-EAGLE head or MTP checkpoint (module 0) directory: also write its teacher-forced first step")
      ("k", po::value(&a.method.k)->default_value(a.method.k), "P-EAGLE: parallel depth K (K-1 mask slots)")
      ("force-depth", po::bool_switch(&a.method.force_depth), "P-EAGLE: allow K beyond the depth the head was trained for")
      ("threads", po::value(&a.threads)->default_value(a.threads), "worker threads (0 = the cores other processes are not busy on, at least one); results do not depend on it");
  const std::string usage =
      "specdec forward --model DIR --prompt-ids IDS --out FILE.h5 [--drafter HEAD_DIR [--k K]]\n\n"
      "Runs one causal forward pass over the tokens (positions 0..T-1) and writes one HDF5 file:\n"
      "  /tokens  int32 (T)\n"
      "  /logits  float32 (T, V)\n"
      "  /hidden  float32 (L+1, T, H), Hugging Face's output_hidden_states: [0] the embeddings, [l] the\n"
      "           state entering layer l, [L] the last layer's output AFTER the final norm (transformers'\n"
      "           last entry, its last_hidden_state)\n"
      "With --drafter, the head's teacher-forced first step: row i < N = T-1 pairs the target feature f_i\n"
      "(EAGLE-1: the final hidden state; EAGLE-3 / P-EAGLE: the aux states) with token t_{i+1} at position\n"
      "i; a P-EAGLE head adds K-1 mask slots at positions N..N+K-2 (N' = N+K-1, else N' = N):\n"
      "  /draft/logits  float32 (N', Vd)   over the draft vocabulary\n"
      "  /draft/hidden  float32 (N', H)    the head's last layer output before its final norm\n"
      "  /draft/tokens, /draft/positions  int32 (N')";
  if (!parse_options(args, desc, io, usage)) {
    return 0;
  }
  if (out.empty()) throw Error("--out FILE.h5 is required (where the logits and hidden states go)");
  {
    const std::filesystem::path p(out);
    std::error_code ec;
    const std::filesystem::path parent = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
    if (!std::filesystem::is_directory(parent, ec)) throw Error("--out " + out + ": the directory " + parent.string() + " does not exist");
    if (std::filesystem::is_directory(p, ec)) throw Error("--out " + out + " is a directory");
  }
  apply_threads(a.threads);
  const LoadedModel m = load_model(a.model, a.backend);
  const std::vector<int32_t> tokens = prompt_tokens(a, m);
  const ModelConfig& c = m.config;
  const int T = static_cast<int>(tokens.size()), L = c.num_hidden_layers, H = c.hidden_size;
  if (T > c.max_position_embeddings) {
    throw Error("the prompt holds " + std::to_string(T) + " tokens, beyond max_position_embeddings " +
                std::to_string(c.max_position_embeddings) + " of " + a.model);
  }

  // The head is loaded (and checked against the target) before any forward runs.
  std::optional<EagleHead> head;
  std::string head_fingerprint;
  if (!a.drafter.empty()) {
    EagleHead loaded = load_eagle_head(a.drafter, m.head_target());
    head_fingerprint = eagle_head_fingerprint(loaded);  // before binding, which may take the fp32 weights
    head.emplace(bind_head(a.backend, std::move(loaded), m.forward_model()));
  }

  ForwardRequest req = ForwardRequest::chain(tokens);
  for (int l = 0; l <= L; ++l) req.aux_layers.push_back(l);
  auto cache = m.forward_model().new_cache(T);
  const ForwardResult r = m.forward_model().forward(*cache, req);
  if (r.logits.rows() != T || r.aux_hidden.rows() != T || r.aux_hidden.cols() != static_cast<Eigen::Index>(L + 1) * H) {
    throw Error("backend " + a.backend + " returned logits or hidden states of the wrong shape");
  }
  std::optional<DraftStep> draft;
  if (head) draft = draft_step(*head, tokens, r, a.method.k, a.method.force_depth, a.drafter);

  // (T, (L+1)·H) → (L+1, T, H)
  std::vector<float> hidden(static_cast<size_t>(L + 1) * T * H);
  for (int l = 0; l <= L; ++l)
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < H; ++h) hidden[(static_cast<size_t>(l) * T + t) * H + h] = r.aux_hidden(t, l * H + h);

  try {
    h5::File f = h5::File::create_in_memory(out);
    f.write_attribute("description", "specdec forward: one causal forward pass over /tokens");
    f.write_attribute("model", a.model);
    f.write_attribute("model_fingerprint", m.fingerprint());
    f.write_attribute("architecture", c.architecture);
    f.write_attribute("stored_dtype", m.stored_dtype);
    f.write_attribute("backend", a.backend);
    f.write_attribute("hidden_convention",
                      "output_hidden_states: [0] embeddings, [l] input of layer l, [L] after the final norm");
    f.write_vector<int32_t>("tokens", tokens);
    write_rows(f, "logits", r.logits);
    const hsize_t dims[3] = {static_cast<hsize_t>(L + 1), static_cast<hsize_t>(T), static_cast<hsize_t>(H)};
    write_cube(f, "hidden", dims, hidden.data());
    if (draft) {
      h5::Group g = f.create_group("draft");
      g.write_attribute("drafter", a.drafter);
      g.write_attribute("kind", eagle_kind_name(head->config().kind));
      g.write_attribute("layout", head->config().layout);
      g.write_attribute("fingerprint", head_fingerprint);
      write_rows(g, "logits", draft->output.logits);
      write_rows(g, "hidden", draft->output.hidden);
      g.write_vector<int32_t>("tokens", draft->input.tokens);
      g.write_vector<int32_t>("positions", draft->input.positions);
    }
    f.save_atomically(out);
  } catch (const std::filesystem::filesystem_error& e) {
    throw Error(out + ": cannot write: " + e.code().message());
  }
  io.out << "wrote " << out << ": " << T << " tokens, logits (" << T << ", " << c.vocab_size << "), hidden (" << L + 1
         << ", " << T << ", " << H << ")";
  if (draft) {
    io.out << ", draft " << eagle_kind_name(head->config().kind) << " logits (" << draft->output.logits.rows() << ", "
           << draft->output.logits.cols() << ")";
  }
  io.out << "\n";
  return 0;
}

}  // namespace specdec::cli
