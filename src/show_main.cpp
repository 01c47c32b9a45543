// ppsearch-show: the launch configuration of one row of a result file (docs/launch.md).
//   ppsearch-show FILE.h5 [--row N] [--emit megatron|nemo|torchtitan]
// Reads row N (default 0, the best) of /candidates, its /stages and the resolved_config
// attribute (the INI the search ran with), and prints the emitted configuration.
// Exit: 0 printed; 2 usage error, unreadable or not a result file, no such row;
//       5 the framework cannot run this row (or the row is infeasible): only comments printed.
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "ppsearch/build_info.hpp"
#include "ppsearch/cli/emit.hpp"
#include "ppsearch/cli/options.hpp"
#include "ppsearch/io/config_file.hpp"
#include "ppsearch/io/result_reader.hpp"
#include "ppsearch/search/candidate.hpp"
#include "ppsearch/util/error.hpp"

namespace {

using namespace ppsearch;

constexpr int kNotLaunchable = 5;

const char* kUsage =
    "usage: ppsearch-show FILE.h5 [--row N] [--emit megatron|nemo|torchtitan]\n"
    "Prints the launch configuration of row N (0-based, ranked order; default 0 = the best) of a\n"
    "ppsearch result file: Megatron-LM arguments (default), NeMo/Megatron-Bridge overrides or\n"
    "torchtitan options (docs/launch.md).\n"
    "Exit status: 0 printed; 2 usage error, unreadable file or no such row; 5 the framework\n"
    "cannot run this row (the comment lines say why and what can).\n";

int usage_error(const std::string& what) {
  std::cerr << "ppsearch-show: error: " << what << "\n" << kUsage;
  return static_cast<int>(ExitCode::kUsage);
}

bool parse_row(const std::string& s, std::int64_t* out) {
  if (s.empty() || s.size() > 18) return false;
  std::int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

int run(const std::vector<std::string>& args) {
  std::string file, row_text = "0", emit_text = "megatron";
  bool file_given = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const std::string& name, std::string* out) -> int {
      if (a == name) {
        if (i + 1 >= args.size()) return -1;
        *out = args[++i];
        return 1;
      }
      if (a.rfind(name + "=", 0) == 0) {
        *out = a.substr(name.size() + 1);
        return 1;
      }
      return 0;
    };
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    }
    if (a == "--version") {
      std::cout << "ppsearch-show " << PPSEARCH_VERSION << "\n";
      return 0;
    }
    int r = value("--row", &row_text);
    if (r == 0) r = value("--emit", &emit_text);
    if (r < 0) return usage_error(a + ": needs a value");
    if (r > 0) continue;
    if (a.size() > 1 && a[0] == '-') return usage_error(a + ": unknown option");
    if (file_given) return usage_error(a + ": only one result file is read");
    file = a;
    file_given = true;
  }
  if (!file_given) return usage_error("FILE.h5: missing");
  std::int64_t row = 0;
  if (!parse_row(row_text, &row))
    return usage_error("--row: " + row_text + ": a row number 0, 1, 2, ...");
  LaunchFormat format;
  if (!parse_launch_format(emit_text, &format))
    return usage_error("--emit: " + emit_text + ": one of " + kLaunchFormatNames);

  StoredRow stored;
  try {
    stored = read_result_row(file, row);
  } catch (const ResultReadError& e) {
    std::cerr << "ppsearch-show: " << e.what() << "\n";
    return static_cast<int>(ExitCode::kUsage);
  }
  Problem problem;
  try {
    problem = problem_from_ini_text(stored.resolved_config, file + ": resolved_config");
  } catch (const ConfigError& e) {
    std::cerr << "ppsearch-show: " << file
              << ": the resolved_config attribute is not a configuration this version reads:\n";
    for (const ConfigIssue& i : e.issues()) std::cerr << "  " << issue_line(i) << "\n";
    return static_cast<int>(ExitCode::kUsage);
  }
  const ResultRow& r = stored.row;
  std::cout << "# " << file << " row " << row << " of " << stored.candidate_count << "\n";
  if (!r.feasible) {
    std::cout << "# NOT RUNNABLE: the row is infeasible ("
              << to_string(static_cast<Infeasible>(r.infeasible_reason))
              << "); no launch configuration\n";
    return kNotLaunchable;
  }
  std::cout << "# predicted: " << r.iteration_time_s << " s/step, peak memory " << r.peak_memory_gb
            << " GB\n";
  std::vector<std::pair<int, int>> st;
  std::vector<std::int64_t> recomputed;
  for (const StageRow& s : stored.stages) {
    st.emplace_back(s.first_layer, s.last_layer);
    recomputed.push_back(s.recomputed_layers);
  }
  const LaunchConfig lc = emit_launch_config(format, problem, r, st, recomputed);
  std::cout << lc.text;
  return lc.runnable ? 0 : kNotLaunchable;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const std::exception& e) {
    std::cerr << "ppsearch-show: internal error: " << e.what() << "\n";
    return 1;
  }
}
