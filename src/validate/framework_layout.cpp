// The layer split a Megatron-family run executes when its recipe states no pipeline layout
// (docs/step-time.md "Megatron-Bridge Llama 3 70B FP8 on H100"). Without the option the
// validator lets the partitioner choose the split, which may move layers away from the stage
// with the output layer, a split the run did not execute.
#include "ppsearch/validate/framework_layout.hpp"

#include <vector>

#include "ppsearch/spec/check.hpp"

namespace ppsearch {

std::string megatron_default_layout(int layers, int pp, int vpp) {
  if (layers < 1 || pp < 2 || vpp < 1) return {};
  const long long stages = 1LL * pp * vpp;
  if (layers % stages != 0) return {};
  const std::string seg = "t*" + std::to_string(layers / stages);
  std::string out;
  for (long long s = 0; s < stages; ++s) {
    if (s > 0) out += '|';
    if (s == 0) out += 'E';
    out += seg;
    if (s + 1 == stages) out += 'L';
  }
  return out;
}

bool row_runs_megatron_default_layout(const RunRecord& run) {
  const bool megatron_family =
      run.stack.rfind("megatron", 0) == 0 || run.stack.rfind("nemo", 0) == 0;
  return megatron_family && run.pp > 1 && run.vpp.has_value() && run.pp_layout.empty() &&
         run.mtp_layers == 0 && !megatron_default_layout(run.layers, run.pp, *run.vpp).empty();
}

bool apply_megatron_default_layout(const RunRecord& run, Problem* problem) {
  if (!row_runs_megatron_default_layout(run)) return false;
  Problem p = *problem;
  p.search.pp_layout = megatron_default_layout(run.layers, run.pp, *run.vpp);
  p.search.vpp = {*run.vpp};
  if (!check(p).empty()) return false;
  *problem = std::move(p);
  return true;
}

}  // namespace ppsearch
