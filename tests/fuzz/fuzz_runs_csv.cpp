// libFuzzer target: the runs CSV reader of ppsearch-validate (src/validate/csv.cpp):
// RFC 4180 splitting, the header check and the check of every column of every row; then, for the
// first rows that pass, what ppsearch-validate does before the engine runs: the pre-check, the
// GPU mapping, the row applied to its cluster preset (src/validate/run.cpp), the configurations the
// row allows and its family key. A ConfigError is the normal answer to bad input (exit 2); any
// other exception, a crash or a sanitizer report is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>

#include "ppsearch/io/config_file.hpp"
#include "ppsearch/util/error.hpp"
#include "ppsearch/validate/runs_csv.hpp"
#include "ppsearch/validate/validate.hpp"

namespace {

// The cluster presets, loaded once each (as ppsearch-validate loads them for every row).
const ppsearch::Problem* cluster_problem(const std::string& preset) {
  static std::map<std::string, ppsearch::Problem> loaded;
  auto it = loaded.find(preset);
  if (it == loaded.end()) {
    ppsearch::LoadRequest req;
    req.cluster = preset;
    req.sets = {"search.gpus=8"};
    it = loaded.emplace(preset, ppsearch::load_problem(req)).first;  // presets always load
  }
  return &it->second;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<ppsearch::RunRecord> runs;
  try {
    runs = ppsearch::parse_runs_csv(text, "runs.csv");
  } catch (const ppsearch::ConfigError& e) {
    if (e.issues().empty()) std::abort();  // an error must say what is wrong
    return 0;
  }
  std::size_t modelled = 0;
  for (const ppsearch::RunRecord& run : runs) {
    if (run.line < 1 || run.id.empty()) std::abort();  // a checked row has a line and an id
    (void)ppsearch::family_key(run);
    if (!ppsearch::precheck_run(run).empty() || ++modelled > 4) continue;
    const ppsearch::GpuMapping gpu = ppsearch::map_gpu(run.gpu);
    ppsearch::Problem problem = *cluster_problem(gpu.cluster_preset);
    std::string why;
    if (!ppsearch::apply_run_to_problem(run, gpu, &problem, &why)) {
      if (why.empty()) std::abort();  // a refusal says why
      continue;
    }
    (void)ppsearch::run_candidates(run);
  }
  return 0;
}
