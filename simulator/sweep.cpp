#include "simulator/sweep.hpp"

#include <hdf5.h>

#include <algorithm>
#include <cstring>
#include <iomanip>
#include <map>
#include <sstream>

#include "reference/core/error.hpp"
#include "reference/core/input_limits.hpp"
#include "reference/drafting/draft_limits.hpp"
#include "simulator/parallelism.hpp"
#include "reference/io/atomic_file.hpp"

namespace specdec::sim {

namespace {

void skip(SweepSummary& sum, const std::string& why) {
  ++sum.skipped;
  if (sum.skip_reasons.size() < 8 &&
      std::find(sum.skip_reasons.begin(), sum.skip_reasons.end(), why) == sum.skip_reasons.end())
    sum.skip_reasons.push_back(why);
}

template <class T>
void require_nonempty(const std::vector<T>& v, const char* what) {
  if (v.empty()) throw Error(std::string("sweep: no values for ") + what);
}

}  // namespace

SweepSummary run_sweep(const SweepSpec& spec, const SpecLibrary& specs, const std::function<void(const SweepRow&)>& emit,
                       const OptionSpelling& sp) {
  require_nonempty(spec.hardware, "hardware");
  require_nonempty(spec.models, "model");
  require_nonempty(spec.drafters, "drafter");
  require_nonempty(spec.ks, "k");
  require_nonempty(spec.batches, "batch");
  require_nonempty(spec.tps, "tp");
  require_nonempty(spec.prompt_lens, "prompt length");
  require_nonempty(spec.output_lens, "output length");
  if (!spec.acceptance) require_nonempty(spec.alphas, "alpha");
  // Every K within the decoder's bound, and the grid counted before anything is built or
  // predicted (in floating point: the product of the lists' sizes cannot wrap).
  for (int k : spec.ks) check_draft_limit("sweep", "K", k, kMaxDraftDepth);
  double cells = 1;
  for (size_t n : {spec.hardware.size(), spec.models.size(), spec.drafters.size(), spec.ks.size(), spec.batches.size(),
                   spec.tps.size(), spec.prompt_lens.size(), spec.output_lens.size(),
                   spec.acceptance ? size_t(1) : spec.alphas.size()})
    cells *= double(n);
  if (cells > double(kMaxSweepCells)) {
    std::ostringstream e;
    e << "sweep: the grid has " << cells << " cells (hardware x models x drafters x K x batches x TP x prompt lengths x "
      << "output lengths x alphas), more than specdec supports (" << kMaxSweepCells << "); see docs/reliability.md";
    throw Error(e.str());
  }
  std::vector<AcceptancePtr> accs;
  std::vector<double> alphas;
  if (spec.acceptance) {
    accs.push_back(spec.acceptance);
    alphas.push_back(0);
  } else {
    for (double a : spec.alphas) {
      accs.push_back(iid_acceptance(a));
      alphas.push_back(a);
    }
  }
  std::vector<HardwareSpec> hws;
  std::vector<EngineSpec> engines;  // one per hardware: the named engine or the kind's default
  for (const auto& h : spec.hardware) {
    hws.push_back(specs.hardware(h));
    engines.push_back(specs.engine_for(spec.engine, hws.back()));
  }
  std::vector<ModelShape> models;
  for (const auto& m : spec.models) models.push_back(specs.model(m));
  // A drafter that does not fit a model is skipped below; a name with no spec at all is an error,
  // as an unknown model or hardware is.
  for (const auto& dn : spec.drafters)
    if (dn != "none" && dn != "sequential") (void)specs.drafter_spec(dn);

  SweepSummary sum;
  for (size_t hi = 0; hi < hws.size(); ++hi) {
    const HardwareSpec& hw = hws[hi];
    for (const auto& model : models) {
      // Resolve each drafter against this model once.
      std::vector<std::optional<Drafter>> drafters;
      std::vector<std::string> drafter_names;
      for (const auto& dn : spec.drafters) {
        if (dn == "none" || dn == "sequential") {
          drafters.emplace_back();
          drafter_names.push_back("none");
          continue;
        }
        try {
          Drafter d = specs.drafter(dn, model);
          // Heads read the target's hidden states; a draft LM only shares its vocabulary.
          if (!spec.any_target && d.method != Method::draft_model && !d.target.empty() && d.target != model.name) {
            skip(sum, "drafter '" + dn + "' is trained for '" + d.target + "', not '" + model.name +
                          "' (pair it with another model with " + sp("any-target") + ")");
            continue;
          }
          drafters.emplace_back(std::move(d));
          drafter_names.push_back(dn);
        } catch (const Error& e) {
          skip(sum, e.what());
        }
      }
      // Every (TP, layout, batch, prompt length, output length), flattened into one loop body.
      for (int tp : spec.tps)
        for (int dp : spec.dp_attentions)
          for (int ep : spec.eps)
            for (int batch : spec.batches)
              for (int prompt : spec.prompt_lens)
                for (int output : spec.output_lens) {
              Scenario s;
              s.target = model;
              s.hardware = hw;
              s.engine = engines[hi];
              s.engine_version = spec.engine_version;
              s.workload = {batch, prompt, output, tp, spec.dtype};
              s.workload.dp_attention = dp;
              s.workload.ep = ep;
              if (tp > hw.devices_per_instance) {
                skip(sum, "tp " + std::to_string(tp) + " exceeds the " + std::to_string(hw.devices_per_instance) +
                              " devices of one " + hw.name + " instance");
                continue;
              }
              try {
                validate_parallelism(parallelism_of(s.workload), model, sp);
              } catch (const Error& e) {
                skip(sum, e.what());
                continue;
              }
              for (size_t di = 0; di < drafters.size(); ++di) {
                const bool seq = !drafters[di];
                for (size_t ki = 0; ki < (seq ? 1 : spec.ks.size()); ++ki)
                  for (size_t ai = 0; ai < (seq ? 1 : accs.size()); ++ai) {
                    SweepRow row;
                    row.hardware = hw.name;
                    row.engine = s.engine.name;
                    row.model = model.name;
                    row.moe = model.is_moe();
                    row.drafter = drafter_names[di];
                    row.batch = batch;
                    row.tp = tp;
                    row.dp_attention = dp;
                    row.ep = ep;
                    row.prompt_len = prompt;
                    row.output_len = output;
                    s.drafter = drafters[di];
                    s.plan.method = seq ? Method::sequential : drafters[di]->method;
                    s.plan.k = seq ? 0 : spec.ks[ki];
                    s.acceptance = seq ? nullptr : accs[ai];
                    row.method = method_name(s.plan.method);
                    row.k = s.plan.k;
                    row.alpha = seq ? 0 : alphas[ai];
                    try {
                      row.prediction = predict(s, /*breakdown=*/false);
                    } catch (const Error& e) {
                      skip(sum, e.what());
                      continue;
                    }
                    ++sum.scenarios;
                    emit(row);
                  }
              }
            }
    }
  }
  return sum;
}

std::vector<std::string> sweep_columns() {
  return {"hardware", "engine", "model", "drafter", "method", "k", "batch", "tp", "dp_attention", "ep", "prompt_len", "output_len",
          "alpha",
          "tokens_per_step", "tpot_ms", "ttft_ms", "throughput_tokens_per_s", "speedup", "sequential_tpot_ms",
          "draft_ms", "verify_ms", "overhead_ms", "fits_memory"};
}

namespace {

std::vector<double> numeric_values(const SweepRow& r) {
  const Prediction& p = r.prediction;
  return {double(r.k), double(r.batch), double(r.tp), double(r.dp_attention), double(r.ep), double(r.prompt_len),
          double(r.output_len), r.alpha,
          p.tokens_per_step, p.tpot_s * 1e3, p.ttft_s * 1e3, p.throughput_tokens_per_s, p.speedup,
          p.sequential_tpot_s * 1e3, p.step.draft_s * 1e3, p.step.verify_s * 1e3, p.step.overhead_s * 1e3,
          p.fits_memory ? 1.0 : 0.0};
}

}  // namespace

nlohmann::json sweep_row_json(const SweepRow& r) {
  const std::vector<std::string> cols = sweep_columns();
  const std::vector<double> v = numeric_values(r);
  nlohmann::json j = {{cols[0], r.hardware}, {cols[1], r.engine}, {cols[2], r.model}, {cols[3], r.drafter}, {cols[4], r.method}};
  for (size_t c = 0; c < v.size(); ++c) {
    const std::string& name = cols[c + 5];
    if (name == "fits_memory") j[name] = v[c] != 0;
    else if (c < 7) j[name] = static_cast<int>(v[c]);  // k, batch, tp, dp_attention, ep, prompt_len, output_len
    else j[name] = v[c];
  }
  return j;
}

nlohmann::json sweep_json(const std::vector<SweepRow>& rows, const SweepSummary& summary) {
  nlohmann::json j = {{"columns", sweep_columns()}, {"rows", nlohmann::json::array()}, {"scenarios", summary.scenarios},
                      {"skipped", summary.skipped}, {"skip_reasons", summary.skip_reasons}};
  for (const SweepRow& r : rows) j["rows"].push_back(sweep_row_json(r));
  return j;
}

void write_sweep_csv(std::ostream& out, const std::vector<SweepRow>& rows) {
  const auto cols = sweep_columns();
  for (size_t i = 0; i < cols.size(); ++i) out << (i ? "," : "") << cols[i];
  out << "\n";
  out.precision(9);
  for (const auto& r : rows) {
    out << r.hardware << "," << r.engine << "," << r.model << "," << r.drafter << "," << r.method;
    for (double v : numeric_values(r)) out << "," << v;
    out << "\n";
  }
}

void write_sweep_pivot(std::ostream& out, const std::vector<SweepRow>& rows, size_t max_blocks) {
  struct Block {
    std::string title;
    bool moe = false;
    std::map<int, std::map<int, double>> speedup;  // K -> batch -> speedup
    std::map<int, double> sequential_tpot_ms;       // batch -> sequential TPOT
  };
  std::vector<Block> blocks;
  std::map<std::string, size_t> index;
  for (const auto& r : rows) {
    if (r.method == "sequential") continue;
    std::ostringstream title;
    title << r.hardware << " / " << r.engine << ", " << r.model << ", " << r.drafter << " (" << r.method << ")";
    if (r.alpha > 0) title << ", alpha " << r.alpha;
    title << ", " << describe_parallelism({r.tp, r.dp_attention, r.ep}) << ", prompt " << r.prompt_len << ", output "
          << r.output_len;
    auto [it, added] = index.emplace(title.str(), blocks.size());
    if (added) blocks.push_back({title.str(), r.moe, {}, {}});
    Block& b = blocks[it->second];
    b.speedup[r.k][r.batch] = r.prediction.speedup;
    b.sequential_tpot_ms[r.batch] = r.prediction.sequential_tpot_s * 1e3;
  }
  const auto fixed = [](double v, int digits) {
    std::ostringstream o;
    o << std::fixed << std::setprecision(digits) << v;
    return o.str();
  };
  for (size_t bi = 0; bi < blocks.size() && bi < max_blocks; ++bi) {
    const Block& b = blocks[bi];
    out << "\n" << b.title << "\nspeedup over sequential decoding (* the best K of each batch)\n";
    out << std::left << std::setw(16) << "batch" << std::right;
    for (const auto& [batch, _] : b.sequential_tpot_ms) out << std::setw(9) << batch;
    out << "\n" << std::left << std::setw(16) << "sequential TPOT" << std::right;
    for (const auto& [_, ms] : b.sequential_tpot_ms) out << std::setw(9) << (fixed(ms, 2) + "ms").substr(0, 9);
    out << "\n";
    std::map<int, int> best_k;  // batch -> K
    for (const auto& [k, by_batch] : b.speedup)
      for (const auto& [batch, v] : by_batch)
        if (!best_k.count(batch) || v > b.speedup.at(best_k[batch]).at(batch)) best_k[batch] = k;
    for (const auto& [k, by_batch] : b.speedup) {
      out << std::left << std::setw(16) << ("K = " + std::to_string(k)) << std::right;
      for (const auto& [batch, _] : b.sequential_tpot_ms) {
        const auto v = by_batch.find(batch);
        out << std::setw(9) << (v == by_batch.end() ? "-" : fixed(v->second, 2) + (best_k[batch] == k ? "*" : " "));
      }
      out << "\n";
    }
    // Speedup growing with batch is the opposite of a dense target's; say why where it happens.
    if (b.moe && b.sequential_tpot_ms.size() > 1) {
      const int first = b.sequential_tpot_ms.begin()->first, last = b.sequential_tpot_ms.rbegin()->first;
      if (b.speedup.at(best_k[last]).at(last) > b.speedup.at(best_k[first]).at(first))
        out << "(a MoE target: the speedup grows with batch. At small batches the K + 1 verified tokens route to more\n"
               " distinct experts than one token does, so verification reads more weights than a plain step; at large\n"
               " batches the plain step already touches most experts and verification adds little. docs/simulator.md,\n"
               " 'Expert coverage'.)\n";
    }
  }
  if (blocks.size() > max_blocks) {
    const size_t more = blocks.size() - max_blocks;
    out << "\n(" << more << (more == 1 ? " more table" : " more tables") << " in the file)\n";
  }
}

void write_sweep_hdf5(const std::filesystem::path& path, const std::vector<SweepRow>& rows) {
  write_path_atomically(path, [&](const std::filesystem::path& tmp) {
  const hid_t file = H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (file < 0) throw Error("cannot create HDF5 file '" + path.string() + "'");
  bool ok = true;
  const hsize_t n = rows.size();
  const auto cols = sweep_columns();
  auto write_doubles = [&](const std::string& name, const std::vector<double>& v) {
    const hid_t space = H5Screate_simple(1, &n, nullptr);
    const hid_t ds = H5Dcreate2(file, name.c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ok = ok && ds >= 0 && (n == 0 || H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v.data()) >= 0);
    if (ds >= 0) H5Dclose(ds);
    H5Sclose(space);
  };
  auto write_strings = [&](const std::string& name, const std::vector<std::string>& v) {
    size_t width = 1;
    for (const auto& s : v) width = std::max(width, s.size());
    std::vector<char> buf(std::max<size_t>(1, v.size() * width), '\0');
    for (size_t i = 0; i < v.size(); ++i) std::memcpy(buf.data() + i * width, v[i].data(), v[i].size());
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, width);
    H5Tset_strpad(type, H5T_STR_NULLPAD);
    const hid_t space = H5Screate_simple(1, &n, nullptr);
    const hid_t ds = H5Dcreate2(file, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    ok = ok && ds >= 0 && (n == 0 || H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()) >= 0);
    if (ds >= 0) H5Dclose(ds);
    H5Sclose(space);
    H5Tclose(type);
  };
  constexpr size_t kStrings = 5;  // hardware, engine, model, drafter, method
  std::vector<std::vector<std::string>> strs(kStrings, std::vector<std::string>(n));
  std::vector<std::vector<double>> nums(cols.size() - kStrings, std::vector<double>(n));
  for (size_t i = 0; i < n; ++i) {
    strs[0][i] = rows[i].hardware;
    strs[1][i] = rows[i].engine;
    strs[2][i] = rows[i].model;
    strs[3][i] = rows[i].drafter;
    strs[4][i] = rows[i].method;
    const auto v = numeric_values(rows[i]);
    for (size_t c = 0; c < v.size(); ++c) nums[c][i] = v[c];
  }
  for (size_t c = 0; c < kStrings; ++c) write_strings(cols[c], strs[c]);
  for (size_t c = kStrings; c < cols.size(); ++c) write_doubles(cols[c], nums[c - kStrings]);
  ok = H5Fclose(file) >= 0 && ok;
  if (!ok) throw Error("writing HDF5 sweep results to '" + path.string() + "' failed");
  });
}

void check_sweep_output(const std::filesystem::path& path, const std::string& option_spelled) {
  const auto ext = path.extension().string();
  if (ext != ".csv" && ext != ".h5" && ext != ".hdf5")
    throw Error(option_spelled + ": sweep output '" + path.string() + "': unknown extension '" + ext +
                "'; expected .csv, .h5 or .hdf5");
}

void write_sweep(const std::filesystem::path& path, const std::vector<SweepRow>& rows) {
  check_sweep_output(path, "sweep");
  if (path.extension() == ".csv") {
    specdec::write_file_atomically(path, [&](std::ostream& out) { write_sweep_csv(out, rows); });
  } else {
    write_sweep_hdf5(path, rows);
  }
}

}  // namespace specdec::sim
