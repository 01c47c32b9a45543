// ppsearch-validate: predictions held against measured training runs (docs/validation.md).
// Reads a runs CSV, evaluates each row's configuration with the engine (searching the knobs the
// row leaves empty), prints the per-row table, error statistics and ranking fidelity, and
// optionally writes the HDF5 table /runs. Serial: no MPI ranks, no threads.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ppsearch/build_info.hpp"
#include "ppsearch/io/config_file.hpp"
#include "ppsearch/io/result_writer.hpp"
#include "ppsearch/io/runs_writer.hpp"
#include "ppsearch/search/explain.hpp"
#include "ppsearch/spec/stacks.hpp"
#include "ppsearch/util/error.hpp"
#include "ppsearch/validate/framework_layout.hpp"
#include "ppsearch/validate/validate.hpp"

namespace {

using namespace ppsearch;

constexpr const char* kUsage =
    "Usage: ppsearch-validate RUNS.csv [--output FILE.h5] [--overwrite] [--fit-ids LIST] "
    "[--set SECTION.KEY=VALUE]... [--partitioner-layout] [--explain LIST] [--quiet]\n"
    "\n"
    "Evaluates every row of RUNS.csv (schema: docs/validation.md) with the ppsearch engine and\n"
    "compares the predicted step time and MFU with the measured ones.\n"
    "\n"
    "  --output FILE.h5  also write the table /runs to an HDF5 file\n"
    "  --overwrite       replace an existing output file\n"
    "  --fit-ids LIST    comma list of ids (a trailing * matches a prefix, e.g. kor22-*): the\n"
    "                    statistics are also given for these rows and for the others\n"
    "  --set S.K=V       override a configuration key for every row (repeatable), e.g.\n"
    "                    --set gpu.gemm_efficiency=0.75 to try a calibration constant\n"
    "  --partitioner-layout  rows of a Megatron-family stack with pp > 1, a stated vpp\n"
    "                    and no pp_layout run the partitioner's split instead of the one\n"
    "                    they ran, Megatron-Core's default (layers/(pp*vpp) per virtual\n"
    "                    stage; the default; --megatron-layout names it)\n"
    "  --explain LIST    after the report, the engine's breakdown of each listed row (comma\n"
    "                    list of ids, a trailing * matches a prefix): where the predicted step\n"
    "                    time and memory go, as ppsearch --explain prints it\n"
    "  --quiet           print nothing but errors\n"
    "  --help, --version\n"
    "\n"
    "Exit codes: 0 it ran; 1 internal error; 2 usage error or malformed RUNS.csv; 4 output "
    "error.\n";

struct Args {
  std::string runs_path;
  std::string output;
  bool overwrite = false;
  bool quiet = false;
  // Megatron-family rows run the split their recipe ran (framework_layout.hpp) unless
  // --partitioner-layout; --megatron-layout names the default (docs/validation.md).
  bool megatron_layout = true;
  std::string layout_flag;  // the split flag given, if any (the two exclude each other)
  std::vector<std::string> fit_patterns;
  std::vector<std::string> explain_patterns;  // --explain
  std::vector<std::string> sets;              // --set, applied after the presets, for every row
  std::string command_line;
};

[[noreturn]] void usage_error(const std::string& message) {
  throw ConfigError(ConfigIssue{"", "", message, ""});
}

std::string shell_quote(const std::string& s) {
  const bool plain = !s.empty() && s.find_first_not_of(
                                       "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN"
                                       "OPQRSTUVWXYZ0123456789-_./=:,+*@%") == std::string::npos;
  if (plain) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Returns false when the program should exit at once with `code` (--help, --version).
bool parse_args(int argc, char** argv, Args* a, int* code) {
  a->command_line = "ppsearch-validate";
  for (int i = 1; i < argc; ++i) a->command_line += " " + shell_quote(argv[i]);
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_value = false;
    if (arg.rfind("--", 0) == 0) {
      const auto eq = arg.find('=');
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        has_value = true;
      }
    }
    auto take_value = [&](const char* what) {
      if (has_value) return value;
      if (i + 1 >= argc) usage_error(arg + ": " + what + " is missing");
      return std::string(argv[++i]);
    };
    auto no_value = [&] {
      if (has_value) usage_error(arg + "=" + value + ": " + arg + " takes no value");
    };
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      *code = 0;
      return false;
    } else if (arg == "--version") {
      std::cout << "ppsearch-validate " << PPSEARCH_VERSION << " (" << PPSEARCH_GIT_HASH << ")\n";
      *code = 0;
      return false;
    } else if (arg == "--output") {
      a->output = take_value("the output file name");
      if (a->output.empty()) usage_error("--output: the output file name is empty");
    } else if (arg == "--overwrite") {
      no_value();
      a->overwrite = true;
    } else if (arg == "--quiet") {
      no_value();
      a->quiet = true;
    } else if (arg == "--megatron-layout" || arg == "--partitioner-layout") {
      no_value();
      if (!a->layout_flag.empty() && a->layout_flag != arg)
        usage_error(arg + ": not with " + a->layout_flag + " (choose one split)");
      a->layout_flag = arg;
      a->megatron_layout = arg == "--megatron-layout";
    } else if (arg == "--fit-ids") {
      const std::string list = take_value("the id list");
      for (std::string& p : split_id_list(list)) a->fit_patterns.push_back(std::move(p));
      if (a->fit_patterns.empty()) usage_error("--fit-ids = " + list + ": at least one id");
    } else if (arg == "--explain") {
      const std::string list = take_value("the id list");
      for (std::string& p : split_id_list(list)) a->explain_patterns.push_back(std::move(p));
      if (a->explain_patterns.empty()) usage_error("--explain = " + list + ": at least one id");
    } else if (arg == "--set") {
      a->sets.push_back(take_value("SECTION.KEY=VALUE"));
    } else if (arg.size() > 1 && arg[0] == '-') {
      usage_error(arg + ": unknown option (see --help)");
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() != 1) {
    usage_error(positional.empty() ? "RUNS.csv: the runs file is missing (see --help)"
                                   : positional[1] + ": one runs file only (see --help)");
  }
  a->runs_path = positional[0];
  return true;
}

std::string read_file(const std::string& path) {
  // Non-blocking open, regular files only, at most kMaxCsvBytes (config_file.hpp).
  std::string text;
  std::string why;
  if (read_regular_file(path, kMaxCsvBytes, &text, &why)) return text;
  throw ConfigError(ConfigIssue{"", "", path, "a readable runs CSV file (" + why + ")"});
}

// A loaded preset problem, or why it could not load.
struct LoadedPreset {
  Problem problem;
  std::string error;
};
// Keyed by (cluster preset, GPU count, stack): rows that share them share the loaded problem, so
// that the presets are parsed once per key rather than once per row.
using PresetCache = std::map<std::tuple<std::string, int, std::string>, LoadedPreset>;

// `used`, when given, receives the Problem the row was evaluated with (for --explain).
RunResult model_row(const RunRecord& run, const std::vector<std::string>& sets,
                    bool megatron_layout, PresetCache* cache, Problem* used = nullptr) {
  const std::string skip = precheck_run(run);
  if (!skip.empty()) return not_modelled(run, skip);
  const GpuMapping gpu = map_gpu(run.gpu);
  // Presets through the configuration loader, so that every calibration constant comes from
  // configs/. The model preset is a placeholder: apply_run_to_problem replaces the whole model.
  // The row's software stack (docs/step-time.md "Software stacks"): a profile name or the
  // CSV's older names; empty = the default profile.
  const StackProfile* stack = find_stack(run.stack.empty() ? kDefaultStack : run.stack);
  if (!stack) return not_modelled(run, "unknown stack '" + run.stack + "'");
  // A GPU preset that replaces the cluster's (h100-96gb) is part of the preset key.
  const std::string preset_key =
      gpu.gpu_preset.empty() ? gpu.cluster_preset : gpu.cluster_preset + "+" + gpu.gpu_preset;
  const auto key = std::make_tuple(preset_key, run.gpus, std::string(stack->name));
  auto it = cache->find(key);
  if (it == cache->end()) {
    LoadRequest req;
    req.cluster = gpu.cluster_preset;
    req.sets = {"search.gpus=" + std::to_string(run.gpus),
                "training.stack=" + std::string(stack->name)};
    if (!gpu.gpu_preset.empty()) req.sets.push_back("cluster.gpu=" + gpu.gpu_preset);
    req.sets.insert(req.sets.end(), sets.begin(), sets.end());
    LoadedPreset loaded;
    try {
      loaded.problem = load_problem(req);
    } catch (const ConfigError& e) {
      loaded.error = std::string("cannot load preset ") + gpu.cluster_preset + ": " + e.what();
    }
    it = cache->emplace(key, std::move(loaded)).first;
  }
  if (!it->second.error.empty()) return not_modelled(run, it->second.error);
  Problem problem = it->second.problem;
  std::string why;
  if (!apply_run_to_problem(run, gpu, &problem, &why)) return not_modelled(run, why);
  // --megatron-layout: the split the recipe runs rather than the partitioner's
  // (framework_layout.hpp).
  const bool fixed_split = megatron_layout && apply_megatron_default_layout(run, &problem);
  RunResult r = predict_run(run, problem);
  if (used) *used = problem;
  if (fixed_split && r.modelled) {
    r.note = r.note.empty() ? "Megatron default split" : r.note + "; Megatron default split";
  }
  if (!gpu.note.empty()) r.note = r.note.empty() ? gpu.note : gpu.note + "; " + r.note;
  return r;
}

// --explain: the row's chosen configuration evaluated again with the breakdown on, as
// `ppsearch --explain` prints it for a search's best row (docs/explain.md), headed by the row's
// prediction and measurement.
std::string explain_row(const RunRecord& run, const RunResult& r, const Problem& problem) {
  std::ostringstream os;
  os << "\n=== " << run.id;
  if (!run.split.empty()) os << " (split = " << run.split << ")";
  os << " ===\n";
  if (!r.modelled) {
    os << "not modelled: " << r.reason << "\n";
    return os.str();
  }
  if (std::isfinite(r.measured_step_time_s)) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "predicted %.4g s, measured %.4g s (%+.2f %%)\n",
                  r.predicted_step_time_s, r.measured_step_time_s, r.error_pct);
    os << buf;
  }
  if (std::isfinite(r.measured_peak_memory_gb) && std::isfinite(r.peak_memory_gb)) {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "peak memory (%s) predicted %.2f GB, measured %.2f GB (%+.2f %%); device "
                  "level %.2f GB\n",
                  r.memory_metric.c_str(), r.peak_memory_gb, r.measured_peak_memory_gb,
                  r.memory_error_pct, r.device_peak_memory_gb);
    os << buf;
  }
  if (!r.note.empty()) os << "note: " << r.note << "\n";
  os << "stack " << problem.training.stack << ", cluster " << problem.cluster.name << ", gpu "
     << problem.gpu.name << "\n\n";
  EvalOptions eo;
  eo.want_stages = false;
  os << format_explain(problem, r.chosen, explain_candidate(problem, r.chosen, eo));
  return os.str();
}

RunRow to_row(const RunResult& r) {
  RunRow row;
  row.id = r.id;
  row.modelled = r.modelled ? 1 : 0;
  row.note = r.modelled ? r.note : r.reason;
  row.fit = r.fit ? 1 : 0;
  row.predicted_step_time_s = r.predicted_step_time_s;
  row.measured_step_time_s = r.measured_step_time_s;
  row.error_pct = r.error_pct;
  row.predicted_mfu = r.predicted_mfu;
  row.measured_mfu = r.reported_mfu;
  row.measured_mfu_recomputed = r.measured_mfu;
  row.engine_mfu = r.engine_mfu;
  row.peak_memory_gb = r.device_peak_memory_gb;
  row.mfu_convention = r.convention_label;
  if (r.modelled) {
    const Candidate& c = r.chosen;
    row.gpus = c.gpus;
    row.tp = c.tp;
    row.pp = c.pp;
    row.cp = c.cp;
    row.dp = c.dp;
    row.vpp = c.vpp;
    row.mbs = c.mbs;
    row.num_microbatches = c.num_microbatches;
    row.global_batch_size = c.global_batch_size;
    row.schedule = to_string(c.schedule);
    row.recompute = to_string(c.recompute);
    row.sequence_parallel = static_cast<std::int8_t>(c.sp);
    row.zero_stage = static_cast<std::int8_t>(c.zero);
    row.searched = r.searched;
  }
  row.candidates_evaluated = r.evaluated;
  row.candidates_feasible = r.feasible;
  row.measured_peak_memory_gb = r.measured_peak_memory_gb;
  row.predicted_peak_memory_gb = r.peak_memory_gb;
  row.memory_error_pct = r.memory_error_pct;
  row.memory_metric = r.memory_metric;
  row.split = r.split;
  row.fits_memory = r.does_not_fit ? 0 : 1;
  return row;
}

int run(int argc, char** argv) {
  Args args;
  int code = 0;
  if (!parse_args(argc, argv, &args, &code)) return code;

  const std::vector<RunRecord> runs = parse_runs_csv(read_file(args.runs_path), args.runs_path);
  // Every item of --fit-ids and --explain must match an id.
  for (const auto& [option, patterns] :
       {std::pair{"--fit-ids", &args.fit_patterns}, {"--explain", &args.explain_patterns}}) {
    for (const std::string& p : *patterns) {
      const bool any = std::any_of(runs.begin(), runs.end(),
                                   [&](const RunRecord& r) { return id_matches(p, r.id); });
      if (!any)
        usage_error(std::string(option) + ": " + p + ": matches no id of " + args.runs_path);
    }
  }
  if (!args.output.empty()) {
    // Only a missing name or a regular file (with --overwrite) is written; devices, FIFOs,
    // sockets, folders and symbolic links never are (docs/results.md, "Output safety").
    const std::string problem = output_target_problem(args.output, args.overwrite);
    if (!problem.empty()) usage_error("--output: output = " + args.output + ": " + problem);
  }

  if (!args.sets.empty()) {  // a bad --set is a usage error (exit 2), not a per-row failure
    LoadRequest probe;
    probe.sets = {"search.gpus=8"};
    probe.sets.insert(probe.sets.end(), args.sets.begin(), args.sets.end());
    (void)load_problem(probe);
  }

  std::vector<RunResult> results;
  results.reserve(runs.size());
  PresetCache presets;
  std::string explained;  // --explain: the breakdowns, printed after the report
  auto listed = [](const std::vector<std::string>& patterns, const std::string& id) {
    return std::any_of(patterns.begin(), patterns.end(),
                       [&](const std::string& p) { return id_matches(p, id); });
  };
  for (const RunRecord& run : runs) {
    // The Problem is kept only for a row whose breakdown is printed.
    const bool explain = !args.quiet && listed(args.explain_patterns, run.id);
    Problem used;
    RunResult r =
        model_row(run, args.sets, args.megatron_layout, &presets, explain ? &used : nullptr);
    r.fit = listed(args.fit_patterns, run.id);
    if (explain) explained += explain_row(run, r, used);
    results.push_back(std::move(r));
  }

  if (!args.output.empty()) {
    std::vector<RunRow> rows;
    rows.reserve(results.size());
    for (const RunResult& r : results) rows.push_back(to_row(r));
    try {
      write_runs_table(args.output, rows, args.command_line, args.overwrite);
    } catch (const OutputTargetError& e) {  // the output name changed meanwhile
      std::cerr << "ppsearch-validate: error: --output: " << e.what() << "\n";
      return static_cast<int>(ExitCode::kUsage);
    } catch (const OutputError& e) {
      std::cerr << "ppsearch-validate: " << e.what() << "\n";
      return static_cast<int>(ExitCode::kOutput);
    }
  }
  if (!args.quiet) {
    std::cout << "ppsearch-validate " << PPSEARCH_VERSION << ": " << runs.size() << " rows from "
              << args.runs_path << "\n\n";
    print_validation_report(std::cout, runs, results, args.fit_patterns);
    std::cout << explained;
    if (!args.output.empty()) std::cout << "\nWrote /runs to " << args.output << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // A fatal signal (Ctrl-C, kill, a closed pipe) removes the temporary output files.
  ppsearch::install_output_cleanup_handlers();
  try {
    return run(argc, argv);
  } catch (const ppsearch::ConfigError& e) {
    for (const ppsearch::ConfigIssue& issue : e.issues()) {
      std::cerr << "ppsearch-validate: error: " << issue.message() << "\n";
    }
    return static_cast<int>(ppsearch::ExitCode::kUsage);
  } catch (const std::exception& e) {
    std::cerr << "ppsearch-validate: internal error: " << e.what() << "\n";
    return static_cast<int>(ppsearch::ExitCode::kInternal);
  }
}
