// Error statistics, ranking fidelity and id patterns of ppsearch-validate (docs/validation.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "ppsearch/validate/validate.hpp"

namespace ppsearch {

bool id_matches(const std::string& pattern, const std::string& id) {
  if (!pattern.empty() && pattern.back() == '*') {
    const std::string prefix = pattern.substr(0, pattern.size() - 1);
    return id.compare(0, prefix.size(), prefix) == 0;
  }
  return pattern == id;
}

std::vector<std::string> split_id_list(const std::string& list) {
  std::vector<std::string> out;
  std::string item;
  auto flush = [&] {
    const auto b = item.find_first_not_of(" \t");
    const auto e = item.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(item.substr(b, e - b + 1));
    item.clear();
  };
  for (char c : list) {
    if (c == ',') {
      flush();
    } else {
      item += c;
    }
  }
  flush();
  return out;
}

ErrorStats error_stats(const std::vector<double>& errors_pct) {
  ErrorStats s;
  s.count = static_cast<int>(errors_pct.size());
  if (errors_pct.empty()) return s;
  std::vector<double> abs_err;
  abs_err.reserve(errors_pct.size());
  double sum_abs = 0, sum = 0;
  for (std::size_t i = 0; i < errors_pct.size(); ++i) {
    const double a = std::fabs(errors_pct[i]);
    abs_err.push_back(a);
    sum_abs += a;
    sum += errors_pct[i];
    if (s.max_index < 0 || a > s.max_abs) {
      s.max_abs = a;
      s.max_index = static_cast<int>(i);
    }
  }
  s.mean_abs = sum_abs / s.count;
  s.mean_signed = sum / s.count;
  std::sort(abs_err.begin(), abs_err.end());
  const std::size_t n = abs_err.size();
  s.median_abs = n % 2 == 1 ? abs_err[n / 2] : 0.5 * (abs_err[n / 2 - 1] + abs_err[n / 2]);
  return s;
}

std::string family_key(const RunRecord& r) {
  // Sequences per GPU per step as a reduced fraction: rows with the same work per GPU (weak
  // scaling, as in the dgxc families) have comparable step times; others do not.
  const int g = std::gcd(r.global_batch_size, r.gpus);
  const std::string work =
      std::to_string(r.global_batch_size / g) + ":" + std::to_string(r.gpus / g);
  return work + "/" + std::to_string(r.layers) + "/" + std::to_string(r.hidden_size) + "/" +
         std::to_string(r.ffn_hidden_size) + "/" + std::to_string(r.attention_heads) + "/" +
         std::to_string(r.kv_heads) + "/" + std::to_string(r.vocab_size) + "/" +
         std::to_string(r.seq_length) + "/" + to_string(r.mlp) + "/" + r.gpu;
}

namespace {

// The ids' common prefix, cut back to its last '-' ("kor22-22b-sp-…", "kor22-22b-full-…" →
// "kor22-22b"); "ID +N" when they share no such prefix.
std::string family_label(const std::vector<std::string>& ids) {
  std::string prefix = ids.front();
  for (const std::string& id : ids) {
    std::size_t k = 0;
    while (k < prefix.size() && k < id.size() && prefix[k] == id[k]) ++k;
    prefix.resize(k);
  }
  const auto dash = prefix.rfind('-');
  if (dash == std::string::npos || dash == 0) {
    return ids.front() + " +" + std::to_string(ids.size() - 1);
  }
  return prefix.substr(0, dash);
}

std::string seconds(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g s", x);
  return buf;
}

}  // namespace

std::vector<FamilyRanking> ranking_fidelity(const std::vector<RankItem>& items) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const RankItem*>> groups;
  for (const RankItem& it : items) {
    auto& g = groups[it.family];
    if (g.empty()) order.push_back(it.family);
    g.push_back(&it);
  }
  std::vector<FamilyRanking> out;
  for (const std::string& key : order) {
    const auto& g = groups[key];
    if (g.size() < 2) continue;
    FamilyRanking f;
    for (const RankItem* it : g) f.ids.push_back(it->id);
    f.label = family_label(f.ids);
    // Ids within the family's lines without the shared prefix ("...-16" for "<label>-16").
    auto shorten = [&](const std::string& id) {
      const std::string prefix = f.label + "-";
      return id.compare(0, prefix.size(), prefix) == 0 ? "..." + id.substr(f.label.size()) : id;
    };
    for (std::size_t i = 0; i < g.size(); ++i) {
      for (std::size_t j = i + 1; j < g.size(); ++j) {
        const RankItem* a = g[i];
        const RankItem* b = g[j];
        if (a->measured_s == b->measured_s) {
          ++f.measured_ties;
          continue;
        }
        if (b->measured_s < a->measured_s) std::swap(a, b);  // a is faster, as measured
        ++f.pairs;
        if (a->predicted_s < b->predicted_s) {
          ++f.concordant;
        } else {
          f.discordant.push_back(
              shorten(a->id) + " < " + shorten(b->id) + " measured (" + seconds(a->measured_s) +
              " < " + seconds(b->measured_s) + "), predicted " + seconds(a->predicted_s) +
              (a->predicted_s == b->predicted_s ? " = " : " > ") + seconds(b->predicted_s));
        }
      }
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace ppsearch
