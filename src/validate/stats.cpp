// Error statistics, ranking fidelity and id patterns of ppsearch-validate (docs/validation.md).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
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

namespace {

// Counts inserted values by rank (a Fenwick tree): add(r), then how many ranks < r.
class RankCounter {
 public:
  explicit RankCounter(std::size_t n) : tree_(n + 1, 0) {}
  void add(std::size_t rank) {
    for (std::size_t i = rank + 1; i < tree_.size(); i += i & (~i + 1)) ++tree_[i];
  }
  std::int64_t below(std::size_t rank) const {
    std::int64_t sum = 0;
    for (std::size_t i = rank; i > 0; i -= i & (~i + 1)) sum += tree_[i];
    return sum;
  }

 private:
  std::vector<std::int64_t> tree_;
};

// The pair counts of one family in O(n log n), equal to visiting every pair (i < j in
// input order) and classifying it as the pairwise definition does: equal measured times
// are a tie; otherwise the measured-faster item a must also be predicted strictly faster.
// A NaN measured time never ties and never swaps (the pair keeps input order); a NaN
// prediction is never faster.
void count_pairs(const std::vector<const RankItem*>& g, FamilyRanking* f) {
  const std::size_t n = g.size();
  std::vector<double> values;
  for (const RankItem* it : g)
    if (!std::isnan(it->predicted_s)) values.push_back(it->predicted_s);
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  // Number of distinct predictions strictly below x: the ranks a query sums.
  auto rank = [&](double x) {
    return static_cast<std::size_t>(std::lower_bound(values.begin(), values.end(), x) -
                                    values.begin());
  };
  const std::int64_t all_pairs =
      static_cast<std::int64_t>(n) * (static_cast<std::int64_t>(n) - 1) / 2;

  // Both measured times known: sort by measured time; a group of equal times ties.
  std::vector<const RankItem*> known;
  for (const RankItem* it : g)
    if (!std::isnan(it->measured_s)) known.push_back(it);
  std::stable_sort(known.begin(), known.end(), [](const RankItem* a, const RankItem* b) {
    return a->measured_s < b->measured_s;
  });
  RankCounter faster(values.size());
  std::int64_t ties = 0;
  std::int64_t concordant = 0;
  for (std::size_t b = 0; b < known.size();) {
    std::size_t e = b;
    while (e < known.size() && known[e]->measured_s == known[b]->measured_s) ++e;
    const std::int64_t k = static_cast<std::int64_t>(e - b);
    ties += k * (k - 1) / 2;
    for (std::size_t i = b; i < e; ++i)
      if (!std::isnan(known[i]->predicted_s))
        concordant += faster.below(rank(known[i]->predicted_s));
    for (std::size_t i = b; i < e; ++i)
      if (!std::isnan(known[i]->predicted_s)) faster.add(rank(known[i]->predicted_s));
    b = e;
  }
  // A pair with a NaN measured time: concordant when the earlier item is predicted faster.
  RankCounter earlier_all(values.size());
  RankCounter earlier_nan(values.size());
  for (const RankItem* it : g) {
    const bool nan_measured = std::isnan(it->measured_s);
    if (std::isnan(it->predicted_s)) continue;  // never faster, nothing is faster than it
    const std::size_t r = rank(it->predicted_s);
    concordant += nan_measured ? earlier_all.below(r) : earlier_nan.below(r);
    earlier_all.add(r);
    if (nan_measured) earlier_nan.add(r);
  }
  f->measured_ties = ties;
  f->pairs = all_pairs - ties;
  f->concordant = concordant;
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
    count_pairs(g, &f);
    // Ids within the family's lines without the shared prefix ("...-16" for "<label>-16").
    auto shorten = [&](const std::string& id) {
      const std::string prefix = f.label + "-";
      return id.compare(0, prefix.size(), prefix) == 0 ? "..." + id.substr(f.label.size()) : id;
    };
    // The first discordant pairs in pair order, for the report: the scan stops when it has
    // them all (or kMaxDiscordantShown) or after 2^22 pairs, which covers every pair of a
    // family up to 2896 rows.
    const std::int64_t discordant = f.pairs - f.concordant;
    std::int64_t budget = std::int64_t{1} << 22;
    for (std::size_t i = 0; i < g.size() && budget > 0; ++i) {
      for (std::size_t j = i + 1; j < g.size() && budget > 0; ++j, --budget) {
        if (static_cast<std::int64_t>(f.discordant.size()) >= discordant ||
            f.discordant.size() >= kMaxDiscordantShown) {
          budget = 0;
          break;
        }
        const RankItem* a = g[i];
        const RankItem* b = g[j];
        if (a->measured_s == b->measured_s) continue;
        if (b->measured_s < a->measured_s) std::swap(a, b);  // a is faster, as measured
        if (a->predicted_s < b->predicted_s) continue;
        f.discordant.push_back(
            shorten(a->id) + " < " + shorten(b->id) + " measured (" + seconds(a->measured_s) +
            " < " + seconds(b->measured_s) + "), predicted " + seconds(a->predicted_s) +
            (a->predicted_s == b->predicted_s ? " = " : " > ") + seconds(b->predicted_s));
      }
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace ppsearch
