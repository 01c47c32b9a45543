#include "ppsearch/cli/report.hpp"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "ppsearch/cli/emit.hpp"
#include "ppsearch/search/candidate.hpp"

namespace ppsearch {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string stage_segment(int first, int last, int layers) {
  std::string s;
  if (first == 0) s += "E";
  const int lo = std::max(first, 1), hi = std::min(last, layers);
  const int n = hi >= lo ? hi - lo + 1 : 0;
  if (n == 1) s += "t";
  if (n > 1) s += "t*" + std::to_string(n);
  if (last == layers + 1) s += "L";
  return s;
}

}  // namespace

std::string megatron_layout(const std::vector<std::pair<int, int>>& stages, int layers) {
  std::string out;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    if (i) out += "|";
    out += stage_segment(stages[i].first, stages[i].second, layers);
  }
  return out;
}

std::string megatron_first_last_flags(const std::vector<std::pair<int, int>>& stages, int layers,
                                      int vpp) {
  const int P = static_cast<int>(stages.size());
  if (vpp != 1 || P < 3) return {};
  auto count = [&](int i) {
    const int lo = std::max(stages[i].first, 1), hi = std::min(stages[i].second, layers);
    return hi >= lo ? hi - lo + 1 : 0;
  };
  const int mid = count(1);
  for (int i = 2; i < P - 1; ++i)
    if (count(i) != mid) return {};
  if (count(0) == mid && count(P - 1) == mid) return "(even split: no flag needed)";
  return "--decoder-first-pipeline-num-layers " + std::to_string(count(0)) +
         " --decoder-last-pipeline-num-layers " + std::to_string(count(P - 1));
}

std::string rule_summary(const Enumeration& en) {
  std::string s;
  for (const auto& r : en.rules) {
    if (!s.empty()) s += ";";
    s += r.name + "=" + std::to_string(r.removed);
  }
  return s;
}

std::string reason_summary(const SearchOutput& out) {
  std::string s;
  for (int r = 1; r < kNumInfeasible; ++r) {
    if (!s.empty()) s += ";";
    s +=
        std::string(to_string(static_cast<Infeasible>(r))) + "=" + std::to_string(out.by_reason[r]);
  }
  return s;
}

void print_report(std::ostream& os, const Problem& problem, const RunRequest& req,
                  const Enumeration& en, const SearchOutput& out, const ResultMeta& meta) {
  os << "ppsearch " << meta.ppsearch_version << ": " << problem.model.name << " on "
     << problem.cluster.name << " (" << problem.gpu.name << "), global batch "
     << problem.training.global_batch_size << " × " << problem.model.seq_length << " tokens\n";
  const double rate = meta.search_wall_s > 0 ? out.evaluated / meta.search_wall_s : 0;
  os << "evaluated " << out.evaluated << " candidates (" << out.feasible << " feasible) in "
     << fmt("%.2f", meta.search_wall_s) << " s on " << meta.mpi_ranks << " rank(s) × "
     << meta.threads_per_rank << " thread(s): " << fmt("%.0f", rate) << " candidates/s\n";
  std::int64_t removed = 0;
  for (const auto& r : en.rules) removed += r.removed;
  os << "enumeration: " << en.considered << " combinations, " << removed << " removed by rules, "
     << en.candidates.size() << " evaluated\n";
  for (const auto& r : en.rules)
    if (r.removed > 0)
      os << "  " << r.name << ": " << r.removed << " removed (" << r.meaning << ")\n";
  os << "\n";

  const int K = std::min<int>(req.top, static_cast<int>(out.top.size()));
  char line[512];
  std::snprintf(line, sizeof line,
                "%4s %5s %3s %3s %3s %4s %3s %3s %4s %-16s %-9s %2s %4s %9s %6s %9s %6s %8s\n",
                "rank", "gpus", "tp", "pp", "cp", "dp", "vpp", "mbs", "M", "schedule", "recompute",
                "sp", "zero", "step_s", "mfu_%", "tflops/g", "bubb_%", "mem_gb");
  os << line;
  for (int i = 0; i < K; ++i) {
    const ResultRow& r = out.top[i];
    if (!r.feasible) break;
    std::snprintf(line, sizeof line,
                  "%4d %5d %3d %3d %3d %4d %3d %3d %4d %-16s %-9s %2s %4d %9.3f %6.2f %9.1f %6.2f "
                  "%8.1f\n",
                  i + 1, r.gpus, r.tp, r.pp, r.cp, r.dp, r.vpp, r.mbs, r.num_microbatches,
                  to_string(static_cast<Schedule>(r.schedule)),
                  to_string(static_cast<Recompute>(r.recompute)),
                  r.sequence_parallel ? "on" : "off", r.zero_stage, r.iteration_time_s, 100 * r.mfu,
                  r.tflops_per_gpu, 100 * r.bubble_fraction, r.peak_memory_gb);
    os << line;
  }
  // The best row as Megatron-LM takes it: every flag the row depends on (emit.hpp).
  if (!out.top.empty() && out.top.front().feasible)
    print_best_launch(os, problem, out.top.front(), out.first_stages);
  if (!out.best.empty() && out.best.size() > 1) {
    os << "\nbest per GPU count:\n";
    for (const ResultRow& r : out.best) {
      if (!r.feasible) {
        std::snprintf(line, sizeof line, "  %5d GPUs: no feasible configuration\n", r.gpus);
      } else {
        std::snprintf(
            line, sizeof line,
            "  %5d GPUs: tp %d pp %d cp %d dp %d vpp %d mbs %d %s: %.3f s/step, MFU %.1f%%, "
            "%.0f tokens/s\n",
            r.gpus, r.tp, r.pp, r.cp, r.dp, r.vpp, r.mbs,
            to_string(static_cast<Schedule>(r.schedule)), r.iteration_time_s, 100 * r.mfu,
            r.tokens_per_s);
      }
      os << line;
    }
  }
  os << "\nresults: " << req.output_path << "\n";
}

std::vector<std::pair<int, int>> stage_spans(const std::vector<StageRow>& stages) {
  std::vector<std::pair<int, int>> st;
  for (const StageRow& s : stages) st.emplace_back(s.first_layer, s.last_layer);
  return st;
}

std::vector<std::int64_t> stage_recomputed(const std::vector<StageRow>& stages) {
  std::vector<std::int64_t> n;
  for (const StageRow& s : stages) n.push_back(s.recomputed_layers);
  return n;
}

void print_best_launch(std::ostream& os, const Problem& problem, const ResultRow& best,
                       const std::vector<StageRow>& stages) {
  const LaunchConfig lc = emit_launch_config(LaunchFormat::kMegatron, problem, best,
                                             stage_spans(stages), stage_recomputed(stages));
  os << "\nbest configuration as Megatron-LM arguments (--emit megatron|nemo|torchtitan prints "
        "one alone):\n";
  std::istringstream in(lc.text);
  for (std::string line; std::getline(in, line);) os << "  " << line << "\n";
}

void print_emitted(std::ostream& os, const Problem& problem, const RunRequest& req,
                   const SearchOutput& out) {
  if (out.top.empty() || !out.top.front().feasible) return;
  if (!req.quiet) os << "\nbest configuration for " << to_string(req.emit_format) << ":\n";
  os << emit_launch_config(req.emit_format, problem, out.top.front(), stage_spans(out.first_stages),
                           stage_recomputed(out.first_stages))
            .text;
}

void print_no_feasible(std::ostream& os, const Enumeration& en, const SearchOutput& out) {
  os << "ppsearch: no feasible configuration among " << out.evaluated << " candidates\n";
  for (int r = 1; r < kNumInfeasible; ++r)
    if (out.by_reason[r])
      os << "  " << to_string(static_cast<Infeasible>(r)) << ": " << out.by_reason[r] << "\n";
  // The closest miss on memory, if any.
  const ResultRow* best = out.has_closest_miss ? &out.closest_miss : nullptr;
  if (best) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "  closest: tp %d pp %d cp %d dp %d mbs %d: pipeline rank %d needs %.1f GB\n",
                  best->tp, best->pp, best->cp, best->dp, best->mbs, best->worst_rank,
                  best->needed_memory_gb);
    os << line;
  }
  if (en.candidates.empty()) {
    os << "  every combination was removed by the enumeration rules:\n";
    for (const auto& r : en.rules)
      if (r.removed > 0) os << "    " << r.name << ": " << r.removed << " (" << r.meaning << ")\n";
  }
}

Progress::Progress(bool enabled)
    : enabled_(enabled), start_(std::chrono::steady_clock::now()), last_(start_) {}

void Progress::update(std::int64_t done, std::int64_t total) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_).count() < 0.2 && done < total) return;
  last_ = now;
  const double el = std::chrono::duration<double>(now - start_).count();
  const double rate = el > 0 ? done / el : 0;
  const double eta = rate > 0 ? (total - std::min(done, total)) / rate : 0;
  std::fprintf(stderr, "\r%lld/%lld candidates, %.0f/s, ETA %.0f s   ",
               static_cast<long long>(std::min(done, total)), static_cast<long long>(total), rate,
               eta);
  drawn_ = true;
}

void Progress::finish() {
  if (enabled_ && drawn_) std::fprintf(stderr, "\n");
}

}  // namespace ppsearch
