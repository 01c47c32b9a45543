// What ppsearch-validate prints (docs/validation.md "What it prints").
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "ppsearch/validate/validate.hpp"

namespace ppsearch {
namespace {

std::string fmt(const char* format, double x) {
  if (std::isnan(x)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

std::string pad(const std::string& s, std::size_t width, bool right = false) {
  if (s.size() >= width) return s;
  const std::string fill(width - s.size(), ' ');
  return right ? fill + s : s + fill;
}

std::string configuration(const Candidate& c) {
  std::string s = "tp" + std::to_string(c.tp) + " pp" + std::to_string(c.pp);
  if (c.cp > 1) s += " cp" + std::to_string(c.cp);
  s += " dp" + std::to_string(c.dp) + " vpp" + std::to_string(c.vpp) + " mbs" +
       std::to_string(c.mbs) + " " + to_string(c.schedule) + " " + to_string(c.recompute) +
       " sp=" + (c.sp ? "on" : "off") + " zero" + std::to_string(c.zero);
  return s;
}

void print_stats(std::ostream& os, const std::string& title,
                 const std::vector<const RunResult*>& rows, int of) {
  std::vector<double> errors;
  std::vector<const RunResult*> used;
  for (const RunResult* r : rows) {
    if (!r->modelled || std::isnan(r->error_pct)) continue;  // memory-only rows have no time
    errors.push_back(r->error_pct);
    used.push_back(r);
  }
  const ErrorStats s = error_stats(errors);
  os << "Step-time error (" << title << ", " << s.count << " of " << of << " modelled): ";
  if (s.count == 0) {
    os << "no modelled rows\n";
    return;
  }
  os << "mean |error| " << fmt("%.2f", s.mean_abs) << "%, median |error| "
     << fmt("%.2f", s.median_abs) << "%, max |error| " << fmt("%.2f", s.max_abs) << "% ("
     << used[static_cast<std::size_t>(s.max_index)]->id << "), mean signed "
     << fmt("%+.2f", s.mean_signed) << "%\n";
}

// Peak-memory error over the rows with a measured and a predicted peak (a single stated
// configuration that does not fit counts with the memory it would need).
void print_memory_stats(std::ostream& os, const std::string& title,
                        const std::vector<const RunResult*>& rows) {
  std::vector<double> errors;
  std::vector<const RunResult*> used;
  int with_memory = 0;
  for (const RunResult* r : rows) {
    if (std::isnan(r->measured_peak_memory_gb)) continue;
    ++with_memory;
    if (std::isnan(r->memory_error_pct)) continue;
    errors.push_back(r->memory_error_pct);
    used.push_back(r);
  }
  if (with_memory == 0) return;
  const ErrorStats s = error_stats(errors);
  os << "Peak-memory error (" << title << ", " << s.count << " of " << with_memory
     << " measured): ";
  if (s.count == 0) {
    os << "no predicted rows\n";
    return;
  }
  const auto over = std::count_if(errors.begin(), errors.end(), [](double e) { return e > 0; });
  const auto under = std::count_if(errors.begin(), errors.end(), [](double e) { return e < 0; });
  os << "mean |error| " << fmt("%.2f", s.mean_abs) << "%, median |error| "
     << fmt("%.2f", s.median_abs) << "%, max |error| " << fmt("%.2f", s.max_abs) << "% ("
     << used[static_cast<std::size_t>(s.max_index)]->id << "), mean signed "
     << fmt("%+.2f", s.mean_signed) << "%; over-predicted " << over << ", under-predicted " << under
     << "\n";
}

const char* metric_short(const std::string& metric) {
  if (metric == "allocated") return "alloc";
  if (metric == "reserved") return "resv";
  if (metric == "device") return "dev";
  return "-";
}

bool in_fit(const std::string& id, const std::vector<std::string>& patterns) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const std::string& p) { return id_matches(p, id); });
}

}  // namespace

void print_validation_report(std::ostream& os, const std::vector<RunRecord>& runs,
                             const std::vector<RunResult>& results,
                             const std::vector<std::string>& fit_patterns) {
  std::size_t id_w = 2;
  for (const RunResult& r : results) id_w = std::max(id_w, r.id.size());
  std::size_t conv_w = 10;
  for (const RunResult& r : results) {
    conv_w = std::max(conv_w, std::string(to_string(r.convention)).size());
  }

  // ---- per-row table ----------------------------------------------------------------------
  os << pad("id", id_w) << "  " << pad("pred_s", 9, true) << " " << pad("meas_s", 9, true) << " "
     << pad("err%", 8, true) << "  " << pad("mem_pred", 8, true) << " " << pad("mem_meas", 8, true)
     << " " << pad("mem_err%", 8, true) << " " << pad("metric", 6) << "  "
     << pad("mfu_pred", 8, true) << " " << pad("mfu_meas", 8, true) << " "
     << pad("mfu_rep", 7, true) << "  " << pad("convention", conv_w)
     << "  configuration  [searched]\n";
  for (const RunResult& r : results) {
    os << pad(r.id, id_w) << "  " << pad(fmt("%.4g", r.predicted_step_time_s), 9, true) << " "
       << pad(fmt("%.4g", r.measured_step_time_s), 9, true) << " "
       << pad(fmt("%+.2f", r.error_pct), 8, true) << "  "
       << pad(fmt("%.2f", r.peak_memory_gb), 8, true) << " "
       << pad(fmt("%.2f", r.measured_peak_memory_gb), 8, true) << " "
       << pad(fmt("%+.2f", r.memory_error_pct), 8, true) << " "
       << pad(metric_short(r.memory_metric), 6) << "  "
       << pad(fmt("%.1f", 100 * r.predicted_mfu), 8, true) << " "
       << pad(fmt("%.1f", 100 * r.measured_mfu), 8, true) << " "
       << pad(fmt("%.1f", 100 * r.reported_mfu), 7, true) << "  "
       << pad(to_string(r.convention), conv_w) << "  ";
    if (r.modelled) {
      os << configuration(r.chosen);
      if (!r.searched.empty()) {
        os << "  [" << r.searched << "; best of " << r.feasible << " feasible / " << r.evaluated
           << "]";
      }
      if (!r.note.empty()) os << "  (" << r.note << ")";
    } else {
      os << "not modelled: " << r.reason;
    }
    os << "\n";
  }
  os << "(times in s; err% = 100*(pred-meas)/meas; peak memory per GPU in GB (1e9 bytes), "
        "mem_err% likewise, metric: alloc = max allocated, resv = max reserved, dev = device "
        "level; MFU in % under the row's convention: mfu_pred at the predicted time, mfu_meas at "
        "the measured time, mfu_rep as reported)\n\n";

  // ---- statistics -------------------------------------------------------------------------
  std::vector<const RunResult*> all, kor, fit, held, split_fit, split_held, timed;
  for (const RunResult& r : results) {
    all.push_back(&r);
    if (!std::isnan(r.measured_step_time_s)) timed.push_back(&r);
    if (r.id.compare(0, 6, "kor22-") == 0) kor.push_back(&r);
    (in_fit(r.id, fit_patterns) ? fit : held).push_back(&r);
    if (r.split == "fit") split_fit.push_back(&r);
    if (r.split == "held-out") split_held.push_back(&r);
  }
  const int n = static_cast<int>(results.size());
  print_stats(os, "all rows", timed, static_cast<int>(timed.size()));
  if (!kor.empty()) {
    print_stats(os, "Korthikanti Table 5 rows kor22-*", kor, static_cast<int>(kor.size()));
  }
  auto timed_count = [](const std::vector<const RunResult*>& v) {
    return static_cast<int>(std::count_if(v.begin(), v.end(), [](const RunResult* r) {
      return !std::isnan(r->measured_step_time_s);
    }));
  };
  if (!split_fit.empty() || !split_held.empty()) {
    print_stats(os, "split = fit", split_fit, timed_count(split_fit));
    print_stats(os, "split = held-out", split_held, timed_count(split_held));
  }
  if (!fit_patterns.empty()) {
    print_stats(os, "fit rows (--fit-ids)", fit, timed_count(fit));
    print_stats(os, "held-out rows", held, timed_count(held));
  }
  print_memory_stats(os, "all rows with a peak memory", all);
  // Per metric when the file mixes them (allocated < reserved < device for one run).
  std::vector<std::vector<const RunResult*>> by_metric(3);
  const char* const kMetrics[3] = {"allocated", "reserved", "device"};
  for (const RunResult* r : all) {
    for (int k = 0; k < 3; ++k) {
      if (r->memory_metric == kMetrics[k]) by_metric[static_cast<std::size_t>(k)].push_back(r);
    }
  }
  const auto metrics_present =
      std::count_if(by_metric.begin(), by_metric.end(), [](const auto& v) { return !v.empty(); });
  if (metrics_present > 1) {
    for (int k = 0; k < 3; ++k) {
      print_memory_stats(os, std::string("memory_metric = ") + kMetrics[k],
                         by_metric[static_cast<std::size_t>(k)]);
    }
  }

  // ---- feasibility rule: every published run's stated configuration must fit --------------
  std::vector<const RunResult*> no_fit;
  for (const RunResult& r : results) {
    if (r.does_not_fit) no_fit.push_back(&r);
  }
  os << "Published configurations the model judges not to fit in memory: " << no_fit.size()
     << " of " << n << " rows\n";
  for (const RunResult* r : no_fit) {
    os << "  " << r->id << ": " << r->reason;
    if (!std::isnan(r->measured_peak_memory_gb)) {
      os << " (measured peak " << fmt("%.2f", r->measured_peak_memory_gb) << " GB "
         << r->memory_metric << ")";
    }
    os << "\n";
  }
  std::vector<const RunResult*> skipped;
  for (const RunResult& r : results) {
    if (!r.modelled) skipped.push_back(&r);
  }
  os << "Not modelled: " << skipped.size() << " of " << n << " rows\n";
  for (const RunResult* r : skipped) os << "  " << r->id << ": " << r->reason << "\n";

  // ---- ranking fidelity -------------------------------------------------------------------
  std::vector<RankItem> items;
  for (std::size_t i = 0; i < results.size() && i < runs.size(); ++i) {
    const RunResult& r = results[i];
    if (!r.modelled || std::isnan(r.measured_step_time_s)) continue;  // memory-only rows
    items.push_back(
        RankItem{family_key(runs[i]), r.id, r.predicted_step_time_s, r.measured_step_time_s});
  }
  const std::vector<FamilyRanking> families = ranking_fidelity(items);
  os << "\nRanking fidelity (rows of one model on one GPU type with the same sequences per GPU "
        "per step; pairs with equal measured times skipped):\n";
  if (families.empty()) os << "  no family with two or more modelled rows\n";
  std::int64_t pairs = 0, concordant = 0;
  std::size_t label_w = 0;
  for (const FamilyRanking& f : families) label_w = std::max(label_w, f.label.size());
  for (const FamilyRanking& f : families) {
    pairs += f.pairs;
    concordant += f.concordant;
    os << "  " << pad(f.label, label_w) << "  " << f.ids.size() << " rows: " << f.concordant << "/"
       << f.pairs << " pairs in the measured order";
    if (f.measured_ties > 0) os << " (" << f.measured_ties << " tied pairs skipped)";
    os << "\n";
    // The first discordant pairs are spelled out; their total is pairs − concordant.
    const std::size_t shown = std::min<std::size_t>(f.discordant.size(), kMaxDiscordantShown);
    for (std::size_t k = 0; k < shown; ++k) os << "      " << f.discordant[k] << "\n";
    const std::int64_t more = f.pairs - f.concordant - static_cast<std::int64_t>(shown);
    if (more > 0) os << "      ... and " << more << " more\n";
  }
  if (!families.empty()) {
    os << "  total: " << concordant << "/" << pairs << " pairs in the measured order\n";
  }
}

}  // namespace ppsearch
