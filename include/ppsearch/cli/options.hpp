/// \file
/// The command line (docs/interface.md §1) → a RunRequest, or an exit with a text
/// (--help, --version, usage and configuration errors). Parsing only: nothing is
/// printed, no file is written and the output file is not looked at (main does that).
/// Std-only interface; Boost.Program_options is used in the .cpp only.
#pragma once

#include <string>
#include <vector>

#include "ppsearch/cli/emit.hpp"
#include "ppsearch/spec/specs.hpp"
#include "ppsearch/util/error.hpp"

namespace ppsearch {

/// \brief Everything main needs to run one search.
struct RunRequest {
  Problem problem;              ///< loaded, checked and resolved
  std::string resolved_config;  ///< resolved_ini(problem): the HDF5 attribute and the MPI broadcast
  std::string output_path;      ///< --output, or results/<model>_<cluster>_<gpus>.h5
  std::string format = "hdf5";  ///< --format, else from the --output extension: hdf5, csv,
                                ///< json; "" = the extension names none (unknown_format_text)
  bool overwrite = false;       ///< --overwrite
  int top = 10;                 ///< --top: rows of the ranked table on stdout
  int threads = 0;              ///< --threads; 0 = OMP_NUM_THREADS, else all cores of the rank
  bool quiet = false;           ///< --quiet
  std::string command_line;     ///< "ppsearch" + the arguments, shell-quoted where needed
  std::string model_name;       ///< model preset name, or the model file's name without ".ini"
  std::string cluster_name;     ///< cluster preset name, or the cluster file's name without ".ini"
  bool explain = false;         ///< --explain: explain the best row (docs/explain.md)
  bool gantt = false;           ///< --gantt: text Gantt of the best row's schedule
  std::string trace_path;       ///< --trace FILE.json: Chrome-trace JSON of that schedule
  bool emit = false;            ///< --emit given: print the best row's launch configuration
  LaunchFormat emit_format = LaunchFormat::kMegatron;  ///< --emit FORMAT
  // Re-evaluation of chosen rows (docs/uncertainty.md):
  int uncertainty_top = 10;  ///< --uncertainty-top N: rows per GPU count with bounds (0 = off)
  std::vector<std::string> regret_labels;  ///< --regret-clusters: each cluster's label
  std::vector<Problem> regret_problems;    ///< the problem on each of those clusters
};

/// \brief The result of parsing: either a run (`run` true, `request` filled) or an
///        exit: print `text` (stdout when exit_code is 0, else stderr) and exit
///        with `exit_code` (--help, --version, usage and configuration errors).
struct CliOutcome {
  bool run = false;
  int exit_code = 0;   ///< an ExitCode value; meaningful when !run
  std::string text;    ///< ends with a newline; empty when run
  RunRequest request;  ///< meaningful when run
};

/// \brief Parses the arguments (argv[1..], without the program name) and loads
///        the configuration (config_file.hpp). Errors come back as an exit with
///        code 2 (ExitCode::kUsage) and one line per issue in the form
///        "ppsearch: error: SOURCE: KEY = VALUE: what is allowed".
///        Extra options beyond docs/interface.md §1: --partitioner fast|reference,
///        --simulation fast|full, --print-config (print the resolved INI and exit),
///        --help-config (print the configuration-key reference and exit),
///        --max-candidates N (= search.max_candidates). A sweep with more candidates
///        than search.max_candidates is refused here (exit 2, count and memory estimate
///        in the message), before main creates the output file.
CliOutcome parse_command_line(const std::vector<std::string>& args);

/// \brief Expands a --gpus value: "128", "64,128,256", "64:1024" (every multiple
///        of `gpus_per_node` from 64 to 1024), "64:1024:64" (explicit step), or a
///        comma list mixing these. Sorted, without duplicates.
/// \param gpus_per_node the step of START:END ranges; 0 = check the syntax and order only
///        (counts stays empty)
/// \param why on failure, what is allowed (the message's last part)
/// \return false if the text is malformed or a range holds no GPU count
bool expand_gpu_counts(const std::string& text, int gpus_per_node, std::vector<int>* counts,
                       std::string* why);

/// \brief Renders an issue for the terminal: "SOURCE: KEY = VALUE: ALLOWED",
///        or "SOURCE: VALUE: ALLOWED" for an issue without a key (an option such as --gpus).
std::string issue_line(const ConfigIssue& issue);

/// \brief "hdf5" for .h5/.hdf5, "csv" for .csv, "json" for .json (any case), else "".
std::string format_from_extension(const std::string& path);

/// \brief The usage error for an --output name whose extension names no format (exit 2):
///        "ppsearch: error: --output: PATH: a name ending in .h5 or .hdf5 ...".
std::string unknown_format_text(const std::string& output_path);

/// \brief The --help text.
std::string usage_text();

}  // namespace ppsearch
