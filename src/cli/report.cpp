#include "ppsearch/cli/report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "ppsearch/cli/emit.hpp"
#include "ppsearch/search/candidate.hpp"
#include "ppsearch/search/explain.hpp"
#include "ppsearch/search/sizing.hpp"

namespace ppsearch {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// "cp 4 dp 32 mbs 2": the knobs in which `other` differs from `lead`.
std::string knob_difference(const ResultRow& lead, const ResultRow& other) {
  std::string out;
  auto add = [&out](const char* name, const std::string& value) {
    out += (out.empty() ? "" : " ") + std::string(name) + " " + value;
  };
  auto num = [&add](const char* name, int a, int b) {
    if (a != b) add(name, std::to_string(b));
  };
  num("tp", lead.tp, other.tp);
  num("pp", lead.pp, other.pp);
  num("cp", lead.cp, other.cp);
  num("dp", lead.dp, other.dp);
  num("vpp", lead.vpp, other.vpp);
  num("mbs", lead.mbs, other.mbs);
  if (lead.schedule != other.schedule)
    add("schedule", to_string(static_cast<Schedule>(other.schedule)));
  if (lead.recompute != other.recompute)
    add("recompute", to_string(static_cast<Recompute>(other.recompute)));
  if (lead.sequence_parallel != other.sequence_parallel)
    add("sp", other.sequence_parallel ? "on" : "off");
  num("zero", lead.zero_stage, other.zero_stage);
  num("ep", lead.ep, other.ep);  // mixture of experts (docs/moe.md)
  num("etp", lead.etp, other.etp);
  if (lead.placement != other.placement && other.placement < kNumPlacements)  // docs/topology.md
    add("placement", to_string(static_cast<Placement>(other.placement)));
  return out.empty() ? "the same knobs" : out;
}

// "15T tokens" / "300B tokens" / "2.5e+12 tokens".
std::string tokens_text(double tokens) {
  struct Scale {
    double factor;
    const char* suffix;
  };
  for (const Scale& sc : {Scale{1e12, "T"}, Scale{1e9, "B"}, Scale{1e6, "M"}, Scale{1e3, "K"}}) {
    if (tokens >= sc.factor) return fmt("%.4g", tokens / sc.factor) + sc.suffix + " tokens";
  }
  return fmt("%.0f", tokens) + " tokens";
}

// 18307917 → "18,307,917".
std::string grouped(double x) {
  std::string digits = fmt("%.0f", x);
  std::string out;
  const std::size_t first = digits[0] == '-' ? 1 : 0;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > first && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// "745.0 days (6.436e+07 s), 18,307,917 GPU-hours, cost 45,769,793"
std::string sizing_text(const ResultRow& r, bool with_seconds = true) {
  std::string s = fmt("%.1f days", r.time_to_train_s / 86400.0);
  if (with_seconds) s += " (" + fmt("%.4g", r.time_to_train_s) + " s)";
  s += ", " + grouped(r.gpu_hours) + " GPU-hours";
  if (std::isfinite(r.cost)) s += ", cost " + grouped(r.cost);
  return s;
}

// Time to train for a single GPU count (the best row); the sweep's summary is
// print_fastest_cheapest.
void print_sizing(std::ostream& os, const Problem& problem, const SearchOutput& out) {
  if (!(problem.training.tokens > 0) || out.best.size() != 1) return;
  const ResultRow& r = out.best.front();
  if (!r.feasible || !std::isfinite(r.time_to_train_s)) return;
  os << "\ntime to train " << tokens_text(problem.training.tokens) << " on " << r.gpus
     << " GPUs: " << sizing_text(r) << "\n";
}

// The fastest and the cheapest GPU count of a sweep, each at its best configuration.
void print_fastest_cheapest(std::ostream& os, const Problem& problem, const SearchOutput& out) {
  if (!(problem.training.tokens > 0)) return;
  const ResultRow* fastest = nullptr;
  const ResultRow* cheapest = nullptr;
  for (const ResultRow& r : out.best) {
    if (!r.feasible || !std::isfinite(r.time_to_train_s)) continue;
    if (fastest == nullptr || r.time_to_train_s < fastest->time_to_train_s) fastest = &r;
    // Cheapest by cost, or by GPU-hours when no price is given (the same order).
    if (cheapest == nullptr || r.gpu_hours < cheapest->gpu_hours) cheapest = &r;
  }
  if (fastest == nullptr) return;
  const std::string what = tokens_text(problem.training.tokens);
  os << "fastest for " << what << ": " << fastest->gpus << " GPUs, " << sizing_text(*fastest)
     << "\n";
  os << (std::isfinite(cheapest->cost) ? "cheapest" : "fewest GPU-hours") << " for " << what << ": "
     << cheapest->gpus << " GPUs, " << sizing_text(*cheapest) << "\n";
}

}  // namespace

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

// ---- Uncertainty and regret (docs/uncertainty.md) ------------------------------------------

namespace {

std::string knobs_text(std::int32_t tp, std::int32_t pp, std::int32_t cp, std::int32_t dp,
                       std::int32_t vpp, std::int32_t mbs, const std::string& schedule,
                       const std::string& recompute, int sp, int zero) {
  char line[256];
  std::snprintf(line, sizeof line,
                "tp %d pp %d cp %d dp %d vpp %d mbs %d %s recompute %s sp %s "
                "zero %d",
                tp, pp, cp, dp, vpp, mbs, schedule.c_str(), recompute.c_str(), sp ? "on" : "off",
                zero);
  return line;
}

// The bounds of the printed leaders (their /candidates index is their position in out.top),
// the statement about the top three and the robust winner of each GPU count.
void print_uncertainty(std::ostream& os, const SearchOutput& out,
                       const std::vector<std::size_t>& leaders, const TopRowUncertainty& u) {
  if (u.top_n() <= 0 || out.top.empty() || !out.top.front().feasible) return;
  const ResultRow& best = out.top.front();
  if (!std::isfinite(best.iteration_time_lo_s)) return;
  os << "\nuncertainty: each calibration constant varied over its range (docs/uncertainty.md), "
     << u.variations() << " re-evaluations per row for the first " << u.top_n()
     << " rows of each GPU count\n";
  os << "  recommendation (rank 1): " << fmt("%.3f", best.iteration_time_s) << " s/step, "
     << fmt("%.3f", best.iteration_time_lo_s) << " to " << fmt("%.3f", best.iteration_time_hi_s)
     << " s (" << fmt("%+.1f", 100 * (best.iteration_time_lo_s / best.iteration_time_s - 1))
     << " % / " << fmt("%+.1f", 100 * (best.iteration_time_hi_s / best.iteration_time_s - 1))
     << " %)\n";
  // The printed leaders of the first GPU count with bounds, in rank order.
  std::vector<double> lo, hi;
  std::vector<int> shown;
  for (std::size_t k = 0; k < leaders.size() && lo.size() < 3; ++k) {
    const ResultRow& r = out.top[leaders[k]];
    if (!r.feasible || r.gpus != best.gpus || !std::isfinite(r.iteration_time_lo_s)) break;
    lo.push_back(r.iteration_time_lo_s);
    hi.push_back(r.iteration_time_hi_s);
    shown.push_back(static_cast<int>(k) + 1);
  }
  for (std::size_t k = 1; k < lo.size(); ++k)
    os << "  rank " << shown[k] << ": " << fmt("%.3f", out.top[leaders[k]].iteration_time_s)
       << " s/step, " << fmt("%.3f", lo[k]) << " to " << fmt("%.3f", hi[k]) << " s\n";
  if (top_within_uncertainty(lo, hi, 3)) {
    os << "  the top 3 differ by less than the model's uncertainty (their ranges overlap)\n";
  } else if (top_within_uncertainty(lo, hi, 2)) {
    os << "  the top 2 differ by less than the model's uncertainty (their ranges overlap)\n";
  } else if (lo.size() >= 2) {
    os << "  rank 1 stays ahead of rank 2 across the uncertainty\n";
  }
  // How the ranking moves: under how many variations the best row stays first.
  const std::vector<UncertaintyRow> table = u.table();
  int first = 0;
  int total = 0;
  for (const UncertaintyRow& t : table)
    if (t.candidate == 0) {
      ++total;
      first += t.rank == 1 ? 1 : 0;
    }
  if (total > 0)
    os << "  rank 1 stays fastest under " << first << " of " << total
       << " single-constant variations\n";
  for (const RobustRow& r : u.robust()) {
    if (r.candidate < 0 || r.candidate >= static_cast<std::int64_t>(out.top.size())) continue;
    const ResultRow& w = out.top[static_cast<std::size_t>(r.candidate)];
    // Named by its line in the table above when it leads one, else by its /candidates index.
    std::string which = "row " + std::to_string(r.candidate) + " of /candidates (0-based)";
    for (std::size_t k = 0; k < leaders.size(); ++k)
      if (static_cast<std::int64_t>(leaders[k]) == r.candidate)
        which = "rank " + std::to_string(k + 1) + " of the table";
    if (r.candidate == r.best_candidate) which = "the recommendation itself";
    os << "  robust winner (smallest worst case) on " << r.gpus << " GPUs: " << which << ", "
       << knobs_text(
              w.tp, w.pp, w.cp, w.dp, w.vpp, w.mbs, to_string(static_cast<Schedule>(w.schedule)),
              to_string(static_cast<Recompute>(w.recompute)), w.sequence_parallel, w.zero_stage)
       << ": " << fmt("%.3f", r.iteration_time_s) << " s/step, at worst "
       << fmt("%.3f", r.iteration_time_hi_s) << " s\n";
  }
}

}  // namespace

void print_regret(std::ostream& os, const std::vector<RegretRow>& rows) {
  // Labels in their first order; rows are tuned_on major, run_on minor per GPU count.
  std::vector<std::string> labels;
  for (const RegretRow& r : rows)
    if (std::find(labels.begin(), labels.end(), r.run_on) == labels.end())
      labels.push_back(r.run_on);
  std::size_t width = 12;
  for (const std::string& l : labels) width = std::max(width, l.size() + 1);
  std::vector<std::int32_t> counts;
  for (const RegretRow& r : rows)
    if (std::find(counts.begin(), counts.end(), r.gpus) == counts.end()) counts.push_back(r.gpus);
  for (const std::int32_t g : counts) {
    os << "\ncross-topology regret on " << g
       << " GPUs: step time in s (regret % against the run-on cluster's own best) of each "
          "cluster's best configuration (rows) run on each cluster (columns)\n";
    auto pad = [&](const std::string& t) {
      return t + std::string(width > t.size() ? width - t.size() : 1, ' ');
    };
    os << pad("tuned on") << "  ";
    for (const std::string& l : labels) os << pad(l) << " ";
    os << "worst\n";
    int infeasible = 0;
    const RegretRow* robust = nullptr;
    for (const std::string& t : labels) {
      os << pad(t) << "  ";
      double worst = 0;
      for (const std::string& l : labels) {
        const RegretRow* c = nullptr;
        for (const RegretRow& r : rows)
          if (r.gpus == g && r.tuned_on == t && r.run_on == l) c = &r;
        std::string cell = "-";
        if (c != nullptr) {
          worst = c->worst_regret_pct;
          if (c->robust) robust = c;
          if (!c->feasible) {
            ++infeasible;
            cell = "infeasible";
          } else if (std::isnan(c->regret_pct)) {
            cell = fmt("%.3f", c->iteration_time_s);
          } else {
            cell = fmt("%.3f", c->iteration_time_s) + " (" + fmt("%.1f", c->regret_pct) + ")";
          }
        }
        os << pad(cell) << " ";
      }
      os << (std::isfinite(worst) ? fmt("%.1f %%", worst) : std::string("does not run everywhere"))
         << "\n";
    }
    os << "best configuration of each cluster:\n";
    for (const RegretRow& r : rows)
      if (r.gpus == g && r.tuned_on == r.run_on)
        os << "  " << pad(r.tuned_on)
           << knobs_text(r.tp, r.pp, r.cp, r.dp, r.vpp, r.mbs, r.schedule, r.recompute,
                         r.sequence_parallel, r.zero_stage)
           << (r.ep > 1 || r.etp > 1
                   ? " ep " + std::to_string(r.ep) + " etp " + std::to_string(r.etp)
                   : std::string())
           << "\n";
    if (infeasible > 0) {
      os << infeasible << " pairing(s) do not run on the run-on cluster:";
      for (const RegretRow& r : rows)
        if (r.gpus == g && !r.feasible)
          os << " " << r.tuned_on << " on " << r.run_on << " (" << r.infeasible_reason << ");";
      os << "\n";
    }
    if (robust != nullptr)
      os << "robust: " << robust->tuned_on << "'s configuration, at worst "
         << fmt("%.1f", robust->worst_regret_pct) << " % slower than the best on any of these "
         << "clusters\n";
    else
      os << "robust: none of these configurations runs on every cluster\n";
  }
}

void print_report(std::ostream& os, const Problem& problem, const RunRequest& req,
                  const Enumeration& en, const SearchOutput& out, const ResultMeta& meta,
                  const TopRowUncertainty* uncertainty) {
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

  // Rows equal in step time and memory within 0.1 % are one line with a "+n" count
  // (fold_near_duplicates): the table shows up to --top distinct strategies.
  std::vector<FoldKey> keys;
  keys.reserve(out.top.size());
  for (const ResultRow& r : out.top)
    keys.push_back(FoldKey{r.gpus, r.feasible != 0, r.iteration_time_s, r.peak_memory_gb});
  const std::vector<std::size_t> group = fold_near_duplicates(keys);
  std::vector<std::vector<std::size_t>> members(out.top.size());
  std::vector<std::size_t> leaders;
  for (std::size_t i = 0; i < group.size(); ++i) {
    if (group[i] == i) {
      leaders.push_back(i);
    } else {
      members[group[i]].push_back(i);
    }
  }
  const int K = std::min<int>(req.top, static_cast<int>(leaders.size()));
  bool folded_any = false;
  char line[512];
  // Mixture of experts (docs/moe.md): ep and etp columns when a row uses them.
  bool moe_cols = false;
  for (const ResultRow& r : out.top) moe_cols = moe_cols || r.ep > 1 || r.etp > 1;
  std::snprintf(line, sizeof line,
                "%4s %5s %3s %3s %3s %4s %3s %3s %4s %-16s %-9s %2s %4s %9s %6s %9s %6s %8s %4s\n",
                "rank", "gpus", "tp", "pp", "cp", "dp", "vpp", "mbs", "M", "schedule", "recompute",
                "sp", "zero", "step_s", "mfu_%", "tflops/g", "bubb_%", "mem_gb",
                moe_cols ? "  ep etp same" : "same");
  os << line;
  for (int i = 0; i < K; ++i) {
    const ResultRow& r = out.top[leaders[i]];
    if (!r.feasible) break;
    const std::vector<std::size_t>& same = members[leaders[i]];
    const std::string more = same.empty() ? "" : "+" + std::to_string(same.size());
    std::snprintf(line, sizeof line,
                  "%4d %5d %3d %3d %3d %4d %3d %3d %4d %-16s %-9s %2s %4d %9.3f %6.2f %9.1f %6.2f "
                  "%8.1f %4s\n",
                  i + 1, r.gpus, r.tp, r.pp, r.cp, r.dp, r.vpp, r.mbs, r.num_microbatches,
                  to_string(static_cast<Schedule>(r.schedule)),
                  to_string(static_cast<Recompute>(r.recompute)),
                  r.sequence_parallel ? "on" : "off", r.zero_stage, r.iteration_time_s, 100 * r.mfu,
                  r.tflops_per_gpu, 100 * r.bubble_fraction, r.peak_memory_gb,
                  moe_cols
                      ? (std::to_string(r.ep).insert(
                             0, 4 - std::min<std::size_t>(4, std::to_string(r.ep).size()), ' ') +
                         " " +
                         std::to_string(r.etp).insert(
                             0, 3 - std::min<std::size_t>(3, std::to_string(r.etp).size()), ' ') +
                         " " + more)
                            .c_str()
                      : more.c_str());
    std::string text = line;
    while (text.size() > 1 && text[text.size() - 2] == ' ') text.erase(text.size() - 2, 1);
    os << text;
    if (!same.empty()) {
      folded_any = true;
      os << "           also: " << knob_difference(r, out.top[same[0]]);
      if (same.size() > 1) os << "; and " << same.size() - 1 << " more";
      os << "\n";
    }
  }
  if (folded_any)
    os << "same: further rows within 0.1 % in step time and memory, folded into the line (every "
          "row is in the results file)\n";
  if (uncertainty != nullptr) print_uncertainty(os, out, leaders, *uncertainty);
  // The best row as Megatron-LM takes it: every flag the row depends on (emit.hpp).
  if (!out.top.empty() && out.top.front().feasible)
    print_best_launch(os, problem, out.top.front(), out.first_stages);
  print_sizing(os, problem, out);
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
      if (r.feasible && std::isfinite(r.time_to_train_s)) {
        std::string text = line;
        text.pop_back();  // the newline
        os << text << "; " << sizing_text(r, false) << "\n";
      } else {
        os << line;
      }
    }
    print_fastest_cheapest(os, problem, out);
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
    // A MoE row also names its expert-parallel degrees (docs/moe.md).
    char moe[64] = "";
    if (best->ep > 1 || best->etp > 1)
      std::snprintf(moe, sizeof moe, " ep %d etp %d", best->ep, best->etp);
    std::snprintf(line, sizeof line,
                  "  closest: tp %d pp %d cp %d dp %d mbs %d%s: pipeline rank %d needs %.1f GB\n",
                  best->tp, best->pp, best->cp, best->dp, best->mbs, moe, best->worst_rank,
                  best->needed_memory_gb);
    os << line;
  }
  if (en.candidates.empty()) {
    os << "  every combination was removed by the enumeration rules:\n";
    for (const auto& r : en.rules)
      if (r.removed > 0) os << "    " << r.name << ": " << r.removed << " (" << r.meaning << ")\n";
  }
}

int explain_best(std::ostream& os, std::ostream& err, const Problem& problem, const RunRequest& req,
                 const Enumeration& en, const SearchOutput& out, bool full_simulation) {
  const bool exact = en.candidates.size() == 1;
  const bool text = !req.quiet && (req.explain || req.gantt || exact);
  if (!text && req.trace_path.empty()) return 0;
  if (out.top.empty() || !out.top.front().feasible) {
    if (!req.trace_path.empty())
      err << "ppsearch: --trace: trace = " << req.trace_path
          << ": no feasible configuration, no trace written\n";
    return 0;
  }
  const Candidate c = candidate_of(out.top.front());
  EvalOptions eo;
  eo.reference_partitioner = problem.search.reference_partitioner;
  eo.full_simulation = full_simulation;
  const ExplainedRow row = explain_candidate(problem, c, eo);
  if (text) {
    os << "\n";
    if (req.explain || exact) os << format_explain(problem, c, row);
    if (c.pp <= kGanttMaxRanks && c.num_microbatches <= kGanttMaxMicrobatches) {
      os << "\n" << format_gantt(row.detail.schedule, row.ops);
    } else {
      os << "\n(no text Gantt for pp > " << kGanttMaxRanks << " or more than "
         << kGanttMaxMicrobatches << " micro-batches: use --trace FILE.json)\n";
    }
  }
  if (!req.trace_path.empty()) {
    try {
      write_text_output(req.trace_path, req.overwrite, schedule_trace_json(c, row), "trace file");
    } catch (const OutputTargetError& e) {
      err << "ppsearch: --trace: " << e.what() << "\n";
      return static_cast<int>(ExitCode::kUsage);
    } catch (const OutputError& e) {
      err << "ppsearch: " << e.what() << "\n";
      return static_cast<int>(ExitCode::kOutput);
    }
    if (!req.quiet) os << "trace: " << req.trace_path << "\n";
  }
  return 0;
}

Progress::Progress(bool enabled, bool terminal, double interval_s)
    : enabled_(enabled),
      terminal_(terminal),
      interval_s_(interval_s),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

void Progress::update(std::int64_t done, std::int64_t total) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (!terminal_) {  // plain lines, no carriage returns: readable in a Slurm log
    if (std::chrono::duration<double>(now - last_).count() < interval_s_) return;
    last_ = now;
    const double el = std::chrono::duration<double>(now - start_).count();
    const std::int64_t d = std::min(done, total);
    const double frac = total > 0 ? static_cast<double>(d) / static_cast<double>(total) : 0;
    const double eta = d > 0 ? el * static_cast<double>(total - d) / static_cast<double>(d) : 0;
    std::fprintf(stderr, "progress: %.0f%% (%lld/%lld candidates), %.1f s elapsed, ETA %.0f s\n",
                 100 * frac, static_cast<long long>(d), static_cast<long long>(total), el, eta);
    std::fflush(stderr);
    return;
  }
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
  if (enabled_ && terminal_ && drawn_) std::fprintf(stderr, "\n");
}

}  // namespace ppsearch
