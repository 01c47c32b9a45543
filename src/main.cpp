// ppsearch: composition root. Rank 0 parses and enumerates; every rank evaluates
// its share; rank 0 prints the ranked table and writes the HDF5 file.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "ppsearch/build_info.hpp"
#include "ppsearch/cli/options.hpp"
#include "ppsearch/cli/report.hpp"
#include "ppsearch/comm/communicator.hpp"
#include "ppsearch/cost/precision.hpp"
#include "ppsearch/io/config_file.hpp"
#include "ppsearch/io/result_writer.hpp"
#include "ppsearch/runtime/reevaluate.hpp"
#include "ppsearch/runtime/run.hpp"
#include "ppsearch/search/enumerate.hpp"
#include "ppsearch/util/error.hpp"

namespace {

using namespace ppsearch;

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

int default_threads() {
  if (const char* e = std::getenv("OMP_NUM_THREADS")) {
    const int n = std::atoi(e);
    if (n > 0) return n;
  }
  // All cores this rank may run on (its affinity mask: mpirun and srun may bind it).
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

// Seconds between progress lines when stderr is not a terminal (Slurm, a pipe):
// PPSEARCH_PROGRESS_INTERVAL_S, default 5 (docs/results.md "Progress").
double progress_interval_s() {
  if (const char* e = std::getenv("PPSEARCH_PROGRESS_INTERVAL_S")) {
    char* end = nullptr;
    const double v = std::strtod(e, &end);
    if (end != e && *end == '\0' && v > 0 && v < 1e6) return v;
  }
  return 5.0;
}

// Status broadcast by rank 0 before any work starts.
struct Start {
  std::int32_t code = 0;     // -1 = run, else exit with this code
  std::int32_t threads = 0;  // --threads, 0 = OMP_NUM_THREADS or the rank's cores
  std::uint8_t reference_partitioner = 0;
  std::uint8_t full_simulation = 0;
  std::int32_t regret_clusters = 0;  // --regret-clusters: how many (docs/uncertainty.md)
};

// What the run is doing, for the message when memory runs out.
struct Activity {
  const char* what = "reading the configuration";
  std::int64_t candidates = 0;
};

int run(Communicator& comm, int argc, char** argv, Activity& activity) {
  const bool root = comm.rank() == 0;
  Start start;
  RunRequest req;
  std::string resolved;
  std::unique_ptr<ResultWriter> writer;  // created before the search: a bad path fails at once
  if (root) {
    std::vector<std::string> args(argv + 1, argv + argc);
    CliOutcome outcome = parse_command_line(args);
    if (!outcome.run) {
      (outcome.exit_code == 0 ? std::cout : std::cerr) << outcome.text;
      if (!outcome.text.empty() && outcome.text.back() != '\n')
        (outcome.exit_code == 0 ? std::cout : std::cerr) << "\n";
      start.code = outcome.exit_code;
    } else {
      req = std::move(outcome.request);
      // Only a missing name or a regular file (with --overwrite) is written; devices, FIFOs,
      // sockets, folders and symbolic links never are (docs/results.md, "Output safety").
      const std::string problem = output_target_problem(req.output_path, req.overwrite);
      const std::string trace_problem =
          req.trace_path.empty() ? "" : output_target_problem(req.trace_path, req.overwrite);
      if (!trace_problem.empty()) {
        std::cerr << "--trace: trace = " << req.trace_path << ": " << trace_problem << "\n";
        start.code = static_cast<int>(ExitCode::kUsage);
      } else if (!problem.empty()) {
        std::cerr << "--output: output = " << req.output_path << ": " << problem << "\n";
        start.code = static_cast<int>(ExitCode::kUsage);
      } else if (req.format.empty()) {  // an extension that names no format, and no --format
        std::cerr << unknown_format_text(req.output_path);
        start.code = static_cast<int>(ExitCode::kUsage);
      } else {
        try {
          writer = req.format == "hdf5"
                       ? make_hdf5_result_writer(req.output_path, req.overwrite)
                       : make_text_result_writer(
                             req.output_path, req.overwrite,
                             req.format == "json" ? TextFormat::kJson : TextFormat::kCsv,
                             !req.regret_labels.empty());
          start.code = -1;
        } catch (const OutputTargetError& e) {  // changed since the check just above
          std::cerr << "ppsearch: --output: " << e.what() << "\n";
          start.code = static_cast<int>(ExitCode::kUsage);
        } catch (const OutputError& e) {
          std::cerr << "ppsearch: " << e.what() << "\n";
          start.code = static_cast<int>(ExitCode::kOutput);
        }
      }
      if (start.code == -1) {
        start.threads = req.threads;  // 0 = each rank takes its own default
        start.reference_partitioner = req.problem.search.reference_partitioner;
        start.full_simulation = req.problem.search.full_simulation;
        start.regret_clusters = static_cast<std::int32_t>(req.regret_labels.size());
        resolved = req.resolved_config;
      }
    }
  }
  broadcast_pod(comm, start, 0);
  if (start.code >= 0) return start.code;
  broadcast_string(comm, resolved, 0);
  Problem problem = root ? req.problem : problem_from_ini_text(resolved, "rank 0");
  // --regret-clusters: every rank gets each cluster's label and problem (docs/uncertainty.md).
  std::vector<RegretCluster> regret(static_cast<std::size_t>(start.regret_clusters));
  for (std::size_t k = 0; k < regret.size(); ++k) {
    std::string label = root ? req.regret_labels[k] : std::string();
    std::string ini = root ? resolved_ini(req.regret_problems[k]) : std::string();
    broadcast_string(comm, label, 0);
    broadcast_string(comm, ini, 0);
    regret[k].label = label;
    regret[k].problem = root ? req.regret_problems[k] : problem_from_ini_text(ini, "rank 0");
  }

  // Rank 0 enumerates; every rank receives the candidates.
  const auto t0 = std::chrono::steady_clock::now();
  Enumeration en;
  activity.what = "enumerating the candidates";
  if (root) en = enumerate_candidates(problem);
  activity.candidates = static_cast<std::int64_t>(en.candidates.size());
  activity.what = "sending the candidates to every rank";
  broadcast_pod(comm, en.candidates, 0);
  activity.candidates = static_cast<std::int64_t>(en.candidates.size());
  activity.what = "evaluating the candidates";

  RunConfig rc;
  rc.threads = start.threads > 0 ? start.threads : default_threads();
  rc.eval.reference_partitioner = start.reference_partitioner;
  rc.eval.full_simulation = start.full_simulation;
  rc.eval.want_stages = true;
  // Row 0 also gives the printed best partition; more rows than printed lines, so that the
  // table can fold near-duplicates and still show --top distinct strategies.
  rc.keep_top = rows_kept_for_top(req.top);
  Progress progress(root && !req.quiet, isatty(STDERR_FILENO) != 0, progress_interval_s());
  if (progress.enabled())
    rc.progress = [&](std::int64_t done, std::int64_t total) {
      progress.update(done * comm.size(), total);
    };
  // Rows arrive on rank 0 in final order, block by block, and are appended to the file at once:
  // rank 0 never holds every row. Time spent writing them is not search time (search_wall_s).
  double sink_s = 0;
  const bool sizing = problem.training.tokens > 0;  // else the sizing fields stay NaN
  // Step-time bounds of each GPU count's first rows, filled as the rows pass to the file
  // (docs/uncertainty.md); their time is reported apart, like the writing, not as search time.
  std::unique_ptr<TopRowUncertainty> uncertainty;
  std::int64_t sunk = 0;  // rows handed to the file so far
  if (root)
    uncertainty = std::make_unique<TopRowUncertainty>(problem, rc.eval, req.uncertainty_top);
  if (root)
    rc.sink = [&](const std::vector<ResultRow>& rows, const std::vector<StageRow>& stages) {
      const auto w0 = std::chrono::steady_clock::now();
      if (sizing || uncertainty->wants(rows)) {
        std::vector<ResultRow> sized(rows);
        if (sizing) add_training_cost(sized, problem);
        uncertainty->annotate(sized, sunk);
        writer->write_candidates(sized);
      } else {
        writer->write_candidates(rows);
      }
      writer->write_stages(stages);
      sunk += static_cast<std::int64_t>(rows.size());
      sink_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    };
  SearchOutput out;
  int code = 0;
  try {
    out = run_search(problem, en.candidates, comm, rc);
  } catch (const SearchFailed& e) {  // rank 0 only; every rank has stopped
    std::cerr << "ppsearch: " << e.what() << "\n";
    code = e.exit_code();
  } catch (const OutputTargetError& e) {  // from the sink, rank 0 only; every rank has stopped
    std::cerr << "ppsearch: --output: " << e.what() << "\n";
    code = static_cast<int>(ExitCode::kUsage);
  } catch (const OutputError& e) {  // from the sink, rank 0 only; every rank has stopped
    std::cerr << "ppsearch: " << e.what() << "\n";
    code = static_cast<int>(ExitCode::kOutput);
  }
  progress.finish();
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() - sink_s;
  if (code != 0) {
    writer.reset();  // removes the temporary file: nothing is written
    return comm.allreduce_max(code);
  }
  // --regret-clusters: each cluster searched (by every rank), its best run on every other.
  std::vector<RegretRow> regret_rows;
  if (!regret.empty()) {
    activity.what = "searching the --regret-clusters";
    RunConfig regret_rc = rc;
    regret_rc.sink = nullptr;
    regret_rc.progress = nullptr;
    try {
      regret_rows = run_regret(regret, comm, regret_rc);
    } catch (const SearchFailed& e) {  // rank 0 only; every rank has stopped
      std::cerr << "ppsearch: " << e.what() << "\n";
      code = e.exit_code();
    }
    if (code != 0) {
      writer.reset();
      return comm.allreduce_max(code);
    }
  }

  if (root) {
    add_training_cost(out.top, problem);
    add_training_cost(out.best, problem);
    uncertainty->fill_top(out.top);
    uncertainty->fill_best(out.best);
    activity.what = "writing the results";
    ResultMeta meta;
    meta.ppsearch_version = PPSEARCH_VERSION;
    meta.command_line = req.command_line;
    meta.created_utc = utc_now();
    meta.resolved_config = resolved;
    meta.mpi_ranks = comm.size();
    meta.threads_per_rank = rc.threads;
    meta.candidates_evaluated = out.evaluated;
    meta.candidates_feasible = out.feasible;
    meta.search_wall_s = wall;
    meta.candidates_enumerated = en.considered;
    meta.rule_counts = rule_summary(en);
    meta.infeasible_counts = reason_summary(out);
    meta.rank_busy_s = out.rank_busy_s;
    meta.rank_imbalance = out.imbalance;
    meta.mfu_basis = mfu_basis(problem);
    try {
      writer->write_best(out.best);
      writer->write_regret(regret_rows);
      writer->write_uncertainty(uncertainty->table(), uncertainty->robust());
      writer->commit(meta);
      writer.reset();
    } catch (const OutputTargetError& e) {  // the output name changed during the search
      std::cerr << "ppsearch: --output: " << e.what() << "\n";
      code = static_cast<int>(ExitCode::kUsage);
    } catch (const OutputError& e) {
      std::cerr << "ppsearch: " << e.what() << "\n";
      code = static_cast<int>(ExitCode::kOutput);
    }
    if (!req.quiet) print_report(std::cout, problem, req, en, out, meta, uncertainty.get());
    if (!req.quiet && !regret.empty()) print_regret(std::cout, regret_rows);
    if (req.emit) print_emitted(std::cout, problem, req, out);
    if (code == 0)
      code = explain_best(std::cout, std::cerr, problem, req, en, out, start.full_simulation);
    if (code == 0 && out.feasible == 0) {
      print_no_feasible(std::cerr, en, out);
      code = static_cast<int>(ExitCode::kInfeasible);
    }
  }
  return comm.allreduce_max(code);
}

}  // namespace

int main(int argc, char** argv) {
  std::unique_ptr<ppsearch::Communicator> comm;
  try {
    comm = ppsearch::make_communicator(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "ppsearch: cannot start the parallel runtime: " << e.what() << "\n";
    return 1;
  }
  // A fatal signal (Ctrl-C, kill, a closed pipe) removes the temporary output files.
  ppsearch::install_output_cleanup_handlers();
  Activity activity;
  try {
    const int code = run(*comm, argc, argv, activity);
    comm.reset();  // finalizes MPI after every HDF5 object is closed
    return code;
  } catch (const ppsearch::ConfigError& e) {
    // Only rank 0 validates; a ConfigError elsewhere is a bug in the broadcast.
    std::cerr << e.what() << "\n";
    if (comm->size() > 1) comm->abort(2);
    return 2;
  } catch (const std::bad_alloc&) {
    // The sweep is too large for this memory: a usage problem (exit 2), not a bug. Seen on one
    // rank only, so the others are ended by abort.
    std::cerr << "ppsearch: " << ppsearch::out_of_memory_message(activity.what, activity.candidates)
              << "\n";
    if (comm->size() > 1) comm->abort(static_cast<int>(ppsearch::ExitCode::kUsage));
    return static_cast<int>(ppsearch::ExitCode::kUsage);
  } catch (const std::exception& e) {
    std::cerr << "ppsearch: internal error: " << e.what() << "\n";
    if (comm->size() > 1) comm->abort(1);
    return 1;
  }
}
