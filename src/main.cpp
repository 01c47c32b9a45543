// ppsearch: composition root. Rank 0 parses and enumerates; every rank evaluates
// its share; rank 0 prints the ranked table and writes the HDF5 file.
#include <sched.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "ppsearch/build_info.hpp"
#include "ppsearch/cli/options.hpp"
#include "ppsearch/cli/report.hpp"
#include "ppsearch/comm/communicator.hpp"
#include "ppsearch/io/config_file.hpp"
#include "ppsearch/io/result_writer.hpp"
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

// Status broadcast by rank 0 before any work starts.
struct Start {
  std::int32_t code = 0;     // -1 = run, else exit with this code
  std::int32_t threads = 0;  // --threads, 0 = OMP_NUM_THREADS or the rank's cores
  std::uint8_t reference_partitioner = 0;
  std::uint8_t full_simulation = 0;
};

int run(Communicator& comm, int argc, char** argv) {
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
      if (!problem.empty()) {
        std::cerr << "--output: output = " << req.output_path << ": " << problem << "\n";
        start.code = static_cast<int>(ExitCode::kUsage);
      } else {
        try {
          writer = make_hdf5_result_writer(req.output_path, req.overwrite);
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
        resolved = req.resolved_config;
      }
    }
  }
  broadcast_pod(comm, start, 0);
  if (start.code >= 0) return start.code;
  broadcast_string(comm, resolved, 0);
  Problem problem = root ? req.problem : problem_from_ini_text(resolved, "rank 0");

  // Rank 0 enumerates; every rank receives the candidates.
  const auto t0 = std::chrono::steady_clock::now();
  Enumeration en;
  if (root) en = enumerate_candidates(problem);
  broadcast_pod(comm, en.candidates, 0);

  RunConfig rc;
  rc.threads = start.threads > 0 ? start.threads : default_threads();
  rc.eval.reference_partitioner = start.reference_partitioner;
  rc.eval.full_simulation = start.full_simulation;
  rc.eval.want_stages = true;
  Progress progress(root && !req.quiet && isatty(STDERR_FILENO));
  if (progress.enabled())
    rc.progress = [&](std::int64_t done, std::int64_t total) {
      progress.update(done * comm.size(), total);
    };
  SearchOutput out = run_search(problem, en.candidates, comm, rc);
  progress.finish();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  int code = 0;
  if (root) {
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
    try {
      writer->write_candidates(out.rows);
      writer->write_stages(out.stages);
      writer->write_best(out.best);
      writer->commit(meta);
      writer.reset();
    } catch (const OutputTargetError& e) {  // the output name changed during the search
      std::cerr << "ppsearch: --output: " << e.what() << "\n";
      code = static_cast<int>(ExitCode::kUsage);
    } catch (const OutputError& e) {
      std::cerr << "ppsearch: " << e.what() << "\n";
      code = static_cast<int>(ExitCode::kOutput);
    }
    if (!req.quiet) print_report(std::cout, problem, req, en, out, meta);
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
  try {
    const int code = run(*comm, argc, argv);
    comm.reset();  // finalizes MPI after every HDF5 object is closed
    return code;
  } catch (const ppsearch::ConfigError& e) {
    // Only rank 0 validates; a ConfigError elsewhere is a bug in the broadcast.
    std::cerr << e.what() << "\n";
    if (comm->size() > 1) comm->abort(2);
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "ppsearch: internal error: " << e.what() << "\n";
    if (comm->size() > 1) comm->abort(1);
    return 1;
  }
}
