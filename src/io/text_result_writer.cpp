// CSV and JSON result files (docs/results.md "CSV and JSON"): the rows of the HDF5 tables
// /candidates, /stages and /best with the same field names, enums as their names, NaN as an
// empty CSV field or JSON null. Written with the same output safety as the HDF5 file: every
// file is created in a private temporary folder next to its final name (staging.hpp) and renamed
// onto it by commit(); an uncommitted writer removes everything it created.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "ppsearch/io/result_writer.hpp"
#include "result_fields.hpp"
#include "staging.hpp"

namespace ppsearch {
namespace {

using io_detail::StagedFile;

// The enum names and field tables of the HDF5 file (result_fields.hpp): same names, same order.
using namespace io_detail;

template <typename T>
T load(const void* row, std::size_t offset) {
  T v;
  std::memcpy(&v, static_cast<const unsigned char*>(row) + offset, sizeof v);
  return v;
}

const char* enum_name(const char* const* names, std::size_t count, unsigned v) {
  return v < count ? names[v] : "?";
}

std::string number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);  // reads back to the same double
  return buf;
}

// The value of field `f` of `row` as text; `*is_null` for NaN, `*is_text` for enum names.
std::string field_text(const Field& f, const void* row, bool* is_null, bool* is_text) {
  *is_null = false;
  *is_text = false;
  switch (f.kind) {
    case Kind::kI32:
      return std::to_string(load<std::int32_t>(row, f.offset));
    case Kind::kI64:
      return std::to_string(load<std::int64_t>(row, f.offset));
    case Kind::kU8:
      return std::to_string(load<std::uint8_t>(row, f.offset));
    case Kind::kI8:
      return std::to_string(load<std::int8_t>(row, f.offset));
    case Kind::kF64: {
      const double x = load<double>(row, f.offset);
      if (std::isnan(x)) {
        *is_null = true;
        return "";
      }
      return number(x);
    }
    case Kind::kSchedule:
      *is_text = true;
      return enum_name(kScheduleNames, std::size(kScheduleNames),
                       load<std::uint8_t>(row, f.offset));
    case Kind::kRecompute:
      *is_text = true;
      return enum_name(kRecomputeNames, std::size(kRecomputeNames),
                       load<std::uint8_t>(row, f.offset));
    case Kind::kInfeasible:
      *is_text = true;
      return enum_name(kInfeasibleNames, std::size(kInfeasibleNames),
                       load<std::uint8_t>(row, f.offset));
    case Kind::kPlacement:
      *is_text = true;
      return enum_name(kPlacementNames, std::size(kPlacementNames),
                       load<std::uint8_t>(row, f.offset));
  }
  return "";
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

// One staged output file written with stdio; the first failure is remembered and reported.
class TextFile {
 public:
  TextFile(const std::string& path, bool overwrite)
      : staged_(std::make_unique<StagedFile>(path, overwrite, "results file")) {
    const int fd = ::open(staged_->temp_file().c_str(),
                          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) fail("creating the temporary file '" + staged_->temp_file() + "'", errno);
    file_ = ::fdopen(fd, "w");
    if (file_ == nullptr) {
      const int err = errno;
      ::close(fd);
      fail("opening the temporary file '" + staged_->temp_file() + "'", err);
    }
  }
  ~TextFile() {
    if (file_ != nullptr) std::fclose(file_);
  }  // ~StagedFile removes the temporary file unless published
  TextFile(const TextFile&) = delete;
  TextFile& operator=(const TextFile&) = delete;

  void write(const std::string& text) {
    if (text.empty()) return;
    if (std::fwrite(text.data(), 1, text.size(), file_) != text.size()) {
      fail("writing the temporary file '" + staged_->temp_file() + "'", errno);
    }
  }
  // Flushes, syncs and closes the temporary file (the data is on disk before the rename).
  void close() {
    FILE* f = file_;
    file_ = nullptr;
    if (std::fflush(f) != 0 || ::fsync(::fileno(f)) != 0) {
      const int err = errno;
      std::fclose(f);
      fail("syncing the temporary file '" + staged_->temp_file() + "'", err);
    }
    if (std::fclose(f) != 0)
      fail("closing the temporary file '" + staged_->temp_file() + "'", errno);
  }
  void publish() { staged_->publish(); }
  const std::string& temp_file() const { return staged_->temp_file(); }

 private:
  [[noreturn]] void fail(const std::string& what, int err) const {
    throw OutputError("cannot write '" + staged_->path() + "': " + what + ": " +
                      errno_text(err != 0 ? err : EIO));
  }
  std::unique_ptr<StagedFile> staged_;
  FILE* file_ = nullptr;
};

template <std::size_t N>
std::string csv_header(const Field (&fields)[N]) {
  std::string s;
  for (std::size_t i = 0; i < N; ++i) s += (i ? "," : "") + std::string(fields[i].name);
  return s + "\n";
}

template <std::size_t N>
std::string csv_line(const Field (&fields)[N], const void* row) {
  std::string s;
  for (std::size_t i = 0; i < N; ++i) {
    bool is_null = false;
    bool is_text = false;
    if (i) s += ",";
    s += field_text(fields[i], row, &is_null, &is_text);  // names hold no comma or quote
  }
  return s + "\n";
}

template <std::size_t N>
std::string json_object(const Field (&fields)[N], const void* row) {
  std::string s = "{";
  for (std::size_t i = 0; i < N; ++i) {
    bool is_null = false;
    bool is_text = false;
    const std::string v = field_text(fields[i], row, &is_null, &is_text);
    if (i) s += ", ";
    s += "\"" + std::string(fields[i].name) + "\": " +
         (is_null   ? std::string("null")
          : is_text ? json_string(v)
                    : v);
  }
  return s + "}";
}

// /regret, /uncertainty, /robust as text (docs/uncertainty.md): a CSV header, a CSV line, a JSON
// array.
template <std::size_t N>
std::string small_header(const SmallColumn (&cols)[N]) {
  std::string s;
  for (std::size_t c = 0; c < N; ++c) s += (c ? "," : "") + std::string(cols[c].name);
  return s + "\n";
}

std::string small_text(SmallKind kind, const SmallValue& v, bool json) {
  switch (kind) {
    case SmallKind::kStr:
      if (json) return json_string(v.s);
      // A field with a comma or a quote is quoted (RFC 4180); labels may be file stems.
      if (v.s.find_first_of(",\"\n\r") == std::string::npos) return v.s;
      {
        std::string q = "\"";
        for (char ch : v.s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
        return q + "\"";
      }
    case SmallKind::kF64:
      if (std::isnan(v.f)) return json ? "null" : "";
      if (std::isinf(v.f))
        return json ? (v.f > 0 ? "\"inf\"" : "\"-inf\"") : (v.f > 0 ? "inf" : "-inf");
      return number(v.f);
    default:
      return std::to_string(v.i);
  }
}

template <std::size_t N, typename Row>
std::string small_csv(const SmallColumn (&cols)[N], const std::vector<Row>& rows) {
  std::string s = small_header(cols);
  for (const Row& r : rows) {
    const std::vector<SmallValue> v = small_values(r);
    for (std::size_t c = 0; c < N; ++c) s += (c ? "," : "") + small_text(cols[c].kind, v[c], false);
    s += "\n";
  }
  return s;
}

template <std::size_t N, typename Row>
std::string small_json(const SmallColumn (&cols)[N], const std::vector<Row>& rows) {
  std::string s = "[";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::vector<SmallValue> v = small_values(rows[i]);
    s += (i ? ",\n{" : "\n{");
    for (std::size_t c = 0; c < N; ++c)
      s += (c ? ", " : "") + std::string("\"") + cols[c].name +
           "\": " + small_text(cols[c].kind, v[c], true);
    s += "}";
  }
  return s + (rows.empty() ? "]" : "\n]");
}

class TextResultWriter final : public ResultWriter {
 public:
  TextResultWriter(const std::string& path, bool overwrite, TextFormat format, bool with_regret)
      : format_(format) {
    if (format_ == TextFormat::kCsv) {
      const std::vector<std::string> names = csv_result_paths(path);
      // All three are checked and staged before anything is written.
      candidates_ = std::make_unique<TextFile>(names[0], overwrite);
      stages_ = std::make_unique<TextFile>(names[1], overwrite);
      best_ = std::make_unique<TextFile>(names[2], overwrite);
      // --regret-clusters: STEM_regret.csv beside them (docs/uncertainty.md).
      if (with_regret) regret_ = std::make_unique<TextFile>(csv_regret_path(path), overwrite);
      candidates_->write(csv_header(kRowFields));
      stages_->write(csv_header(kStageFields));
      best_->write(csv_header(kRowFields));
    } else {
      // The stages arrive between blocks of candidates: they are collected in a second staged
      // file (never published) and copied behind the candidates by commit().
      candidates_ = std::make_unique<TextFile>(path, overwrite);
      stages_ = std::make_unique<TextFile>(path, true);
      candidates_->write("{\n\"candidates\": [");
    }
  }

  void write_candidates(const std::vector<ResultRow>& rows) override {
    require_open("write_candidates");
    std::string text;
    for (const ResultRow& r : rows) {
      if (format_ == TextFormat::kCsv) {
        text += csv_line(kRowFields, &r);
      } else {
        text += (candidate_rows_ ? ",\n" : "\n") + json_object(kRowFields, &r);
      }
      ++candidate_rows_;
    }
    candidates_->write(text);
  }

  void write_stages(const std::vector<StageRow>& rows) override {
    require_open("write_stages");
    std::string text;
    for (const StageRow& r : rows) {
      if (format_ == TextFormat::kCsv) {
        text += csv_line(kStageFields, &r);
      } else {
        text += (stage_rows_ ? ",\n" : "\n") + json_object(kStageFields, &r);
      }
      ++stage_rows_;
    }
    stages_->write(text);
  }

  void write_best(const std::vector<ResultRow>& rows) override {
    require_open("write_best");
    best_rows_ = rows;
  }

  void write_regret(const std::vector<RegretRow>& rows) override {
    require_open("write_regret");
    regret_rows_ = rows;
  }
  void write_uncertainty(const std::vector<UncertaintyRow>& rows,
                         const std::vector<RobustRow>& robust) override {
    require_open("write_uncertainty");
    uncertainty_rows_ = rows;
    robust_rows_ = robust;
  }

  void commit(const ResultMeta& meta) override {
    require_open("commit");
    if (format_ == TextFormat::kCsv) {
      std::string text;
      for (const ResultRow& r : best_rows_) text += csv_line(kRowFields, &r);
      best_->write(text);
      if (regret_) {
        regret_->write(small_csv(kRegretColumns, regret_rows_));
        regret_->close();
        regret_->publish();
      }
      candidates_->close();
      stages_->close();
      best_->close();
      candidates_->publish();
      stages_->publish();
      best_->publish();
    } else {
      candidates_->write(std::string(candidate_rows_ ? "\n" : "") + "],\n\"stages\": [");
      stages_->close();
      copy_stages();
      candidates_->write(std::string(stage_rows_ ? "\n" : "") + "],\n\"best\": [");
      std::string text;
      for (std::size_t i = 0; i < best_rows_.size(); ++i)
        text += (i ? ",\n" : "\n") + json_object(kRowFields, &best_rows_[i]);
      candidates_->write(text + (best_rows_.empty() ? "" : "\n") + "],\n\"regret\": " +
                         small_json(kRegretColumns, regret_rows_) + ",\n\"uncertainty\": " +
                         small_json(kUncertaintyColumns, uncertainty_rows_) +
                         ",\n\"robust\": " + small_json(kRobustColumns, robust_rows_) +
                         ",\n\"attributes\": " + attributes(meta) + "\n}\n");
      candidates_->close();
      candidates_->publish();
      stages_.reset();  // removes the collected stages
    }
    committed_ = true;
  }

 private:
  void require_open(const char* op) const {
    if (committed_) throw std::logic_error(std::string("result writer: ") + op + " after commit()");
  }

  void copy_stages() {
    FILE* in = std::fopen(stages_->temp_file().c_str(), "r");
    if (in == nullptr) {
      throw OutputError("cannot write the results: cannot read back '" + stages_->temp_file() +
                        "': " + errno_text(errno));
    }
    std::unique_ptr<FILE, int (*)(FILE*)> guard(in, std::fclose);
    std::vector<char> buf(1 << 16);
    std::size_t n = 0;
    while ((n = std::fread(buf.data(), 1, buf.size(), in)) > 0)
      candidates_->write(std::string(buf.data(), n));
    if (std::ferror(in)) {
      throw OutputError("cannot write the results: cannot read back '" + stages_->temp_file() +
                        "'");
    }
  }

  static std::string attributes(const ResultMeta& m) {
    std::string busy = "[";
    for (std::size_t i = 0; i < m.rank_busy_s.size(); ++i)
      busy += (i ? ", " : "") + number(m.rank_busy_s[i]);
    busy += "]";
    return "{\"ppsearch_version\": " + json_string(m.ppsearch_version) +
           ", \"schema_version\": " + std::to_string(m.schema_version) +
           ", \"command_line\": " + json_string(m.command_line) +
           ", \"created_utc\": " + json_string(m.created_utc) +
           ", \"resolved_config\": " + json_string(m.resolved_config) +
           ", \"mpi_ranks\": " + std::to_string(m.mpi_ranks) +
           ", \"threads_per_rank\": " + std::to_string(m.threads_per_rank) +
           ", \"candidates_evaluated\": " + std::to_string(m.candidates_evaluated) +
           ", \"candidates_feasible\": " + std::to_string(m.candidates_feasible) +
           ", \"search_wall_s\": " + number(m.search_wall_s) +
           ", \"candidates_enumerated\": " + std::to_string(m.candidates_enumerated) +
           ", \"rule_counts\": " + json_string(m.rule_counts) +
           ", \"infeasible_counts\": " + json_string(m.infeasible_counts) +
           ", \"rank_busy_s\": " + busy + ", \"rank_imbalance\": " + number(m.rank_imbalance) +
           ", \"mfu_basis\": " + json_string(m.mfu_basis) + "}";
  }

  TextFormat format_;
  std::unique_ptr<TextFile> candidates_, stages_, best_;
  std::vector<ResultRow> best_rows_;
  std::unique_ptr<TextFile> regret_;  // CSV with --regret-clusters
  std::vector<RegretRow> regret_rows_;
  std::vector<UncertaintyRow> uncertainty_rows_;
  std::vector<RobustRow> robust_rows_;
  std::int64_t candidate_rows_ = 0;
  std::int64_t stage_rows_ = 0;
  bool committed_ = false;
};

}  // namespace

std::vector<std::string> csv_result_paths(const std::string& path) {
  std::string stem = path;
  const std::size_t slash = path.rfind('/');
  const std::size_t dot = path.rfind('.');
  if (dot != std::string::npos && (slash == std::string::npos || dot > slash + 1))
    stem = path.substr(0, dot);
  return {path, stem + "_stages.csv", stem + "_best.csv"};
}

std::string csv_regret_path(const std::string& path) {
  const std::string best = csv_result_paths(path)[2];
  return best.substr(0, best.size() - std::string("_best.csv").size()) + "_regret.csv";
}

std::unique_ptr<ResultWriter> make_text_result_writer(const std::string& path, bool overwrite,
                                                      TextFormat format, bool with_regret) {
  return std::make_unique<TextResultWriter>(path, overwrite, format, with_regret);
}

}  // namespace ppsearch
