// all_rows: the cost of a speculative verify forward in llama.cpp. After a prompt of P random
// tokens, times llama_decode of a batch of T tokens that asks for the logits of every row (as a
// verify of T - 1 drafts does; llama-bench's prompt test asks for the last row's only), for each
// T given; the T values are interleaved within each repeat and the cache is cut back to the
// prompt after every forward. Prints JSON: per T the samples, their fastest and their median, and
// llama.cpp's system info line.
//
// With --prompt-ids and --logits-out it instead decodes those ids from position 0 and writes the
// logits of every row (float32, rows x vocab, row-major) to the file: the input of the check that
// a converted model computes the same function.
//
// Build: c++ -O2 -std=c++17 -I<llama.cpp>/include -I<llama.cpp>/ggml/include all_rows.cpp -lllama
// (add -DALL_ROWS_LOAD_MODE where llama.h has llama_model_params::load_mode, not use_mmap)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"

namespace {

[[noreturn]] void fail(const std::string& msg) {
  std::fprintf(stderr, "all_rows: %s\n", msg.c_str());
  std::exit(1);
}

std::vector<int> parse_ints(const std::string& s, const char* what) {
  std::vector<int> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    const long x = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || x < 0) fail(std::string(what) + ": '" + item + "' is not a whole number >= 0");
    v.push_back(static_cast<int>(x));
  }
  if (v.empty()) fail(std::string(what) + " is empty");
  return v;
}

bool verbose = false;
void log_callback(ggml_log_level level, const char* text, void*) {
  if (verbose || level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
}

// Decodes tokens at positions pos0.. in sequence 0, asking for the logits of every row (all) or
// of the last only. Returns the wall time in ms.
double decode(llama_context* ctx, const std::vector<llama_token>& tokens, int pos0, bool all) {
  const int n = static_cast<int>(tokens.size());
  llama_batch batch = llama_batch_init(n, 0, 1);
  for (int i = 0; i < n; ++i) {
    batch.token[i] = tokens[i];
    batch.pos[i] = pos0 + i;
    batch.n_seq_id[i] = 1;
    batch.seq_id[i][0] = 0;
    batch.logits[i] = all || i == n - 1;
  }
  batch.n_tokens = n;
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = llama_decode(ctx, batch);
  llama_synchronize(ctx);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  llama_batch_free(batch);
  if (rc != 0) fail("llama_decode returned " + std::to_string(rc));
  return ms;
}

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (c == '\n') o += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) o += ' ';
    else o += c;
  }
  return o + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path, logits_out;
  int threads = 2, prompt = 16, repeat = 3, seed = 0;
  std::vector<int> sizes = {1, 8}, prompt_ids;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) fail(a + " needs a value");
      return argv[++i];
    };
    if (a == "--model") model_path = next();
    else if (a == "--threads") threads = parse_ints(next(), "--threads")[0];
    else if (a == "--prompt") prompt = parse_ints(next(), "--prompt")[0];
    else if (a == "--tokens") sizes = parse_ints(next(), "--tokens");
    else if (a == "--repeat") repeat = parse_ints(next(), "--repeat")[0];
    else if (a == "--seed") seed = parse_ints(next(), "--seed")[0];
    else if (a == "--prompt-ids") prompt_ids = parse_ints(next(), "--prompt-ids");
    else if (a == "--logits-out") logits_out = next();
    else if (a == "--verbose") verbose = true;
    else if (a == "-h" || a == "--help") {
      std::printf(
          "usage: all_rows --model F.gguf [--threads 2] [--prompt 16] [--tokens 1,8] [--repeat 3] [--seed 0] [--verbose]\n"
          "       all_rows --model F.gguf --prompt-ids 1,2,3 --logits-out FILE [--threads 2]\n");
      return 0;
    } else {
      fail("unknown option '" + a + "' (--help)");
    }
  }
  if (model_path.empty()) fail("--model F.gguf is required");
  if (threads < 1 || repeat < 1 || prompt < 1) fail("--threads, --repeat and --prompt must be >= 1");
  if (logits_out.empty() != prompt_ids.empty()) fail("--prompt-ids and --logits-out go together");
  for (int t : sizes)
    if (t < 1) fail("--tokens: every size must be >= 1");

  llama_log_set(log_callback, nullptr);
  llama_backend_init();
  llama_model_params mp = llama_model_default_params();
  mp.n_gpu_layers = 0;
  // The weights are read into memory once, not mapped (llama-bench -lm none; -mmp 0 before it).
#ifdef ALL_ROWS_LOAD_MODE
  mp.load_mode = LLAMA_LOAD_MODE_NONE;
#else
  mp.use_mmap = false;
#endif
  llama_model* model = llama_model_load_from_file(model_path.c_str(), mp);
  if (!model) fail("could not load " + model_path + " (--verbose shows why)");
  const llama_vocab* vocab = llama_model_get_vocab(model);
  const int n_vocab = llama_vocab_n_tokens(vocab);

  const int max_t = *std::max_element(sizes.begin(), sizes.end());
  const int rows = logits_out.empty() ? prompt + max_t : static_cast<int>(prompt_ids.size());
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = rows;
  cp.n_batch = rows;
  cp.n_ubatch = rows;
  cp.n_seq_max = 1;
  cp.n_threads = threads;
  cp.n_threads_batch = threads;
  cp.no_perf = true;
  llama_context* ctx = llama_init_from_model(model, cp);
  if (!ctx) fail("could not make a context for " + model_path);
  llama_memory_t mem = llama_get_memory(ctx);

  if (!logits_out.empty()) {
    std::vector<llama_token> ids(prompt_ids.begin(), prompt_ids.end());
    for (llama_token t : ids)
      if (t >= n_vocab) fail("--prompt-ids: " + std::to_string(t) + " is not below the vocabulary size");
    decode(ctx, ids, 0, true);
    FILE* f = std::fopen(logits_out.c_str(), "wb");
    if (!f) fail("cannot write " + logits_out);
    for (int i = 0; i < static_cast<int>(ids.size()); ++i) {
      const float* row = llama_get_logits_ith(ctx, i);
      if (!row) fail("no logits for row " + std::to_string(i));
      if (std::fwrite(row, sizeof(float), n_vocab, f) != static_cast<size_t>(n_vocab)) fail("short write to " + logits_out);
    }
    if (std::fclose(f) != 0) fail("cannot write " + logits_out);
    std::printf("{\"rows\": %zu, \"vocab\": %d}\n", ids.size(), n_vocab);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
  }

  std::mt19937 rng(static_cast<unsigned>(seed));
  auto random_tokens = [&](int n) {
    std::vector<llama_token> v(n);
    for (auto& t : v) t = static_cast<llama_token>(rng() % static_cast<unsigned>(n_vocab));
    return v;
  };
  decode(ctx, random_tokens(prompt), 0, false);

  std::vector<std::vector<llama_token>> batches;
  for (int t : sizes) batches.push_back(random_tokens(t));
  std::vector<std::vector<double>> ms(sizes.size());
  for (int r = -1; r < repeat; ++r) {  // r = -1: one warm-up pass, not counted
    for (size_t k = 0; k < sizes.size(); ++k) {
      const double t = decode(ctx, batches[k], prompt, true);
      if (!llama_memory_seq_rm(mem, 0, prompt, -1)) fail("could not cut the cache back to the prompt");
      if (r >= 0) ms[k].push_back(t);
    }
  }

  std::printf("{\n  \"system_info\": %s,\n  \"threads\": %d,\n  \"prompt\": %d,\n  \"repeat\": %d,\n  \"n_vocab\": %d,\n  \"rows\": [",
              json_string(llama_print_system_info()).c_str(), threads, prompt, repeat, n_vocab);
  for (size_t k = 0; k < sizes.size(); ++k) {
    std::vector<double> s = ms[k];
    std::sort(s.begin(), s.end());
    const size_t n = s.size();
    const double median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    std::printf("%s\n    {\"tokens\": %d, \"ms_min\": %.6f, \"ms_median\": %.6f, \"ms_samples\": [", k ? "," : "", sizes[k], s[0], median);
    for (size_t i = 0; i < ms[k].size(); ++i) std::printf("%s%.6f", i ? ", " : "", ms[k][i]);
    std::printf("]}");
  }
  std::printf("\n  ]\n}\n");
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  return 0;
}
