// INI configuration loading with Boost.Program_options (docs/interface.md §2,
// docs/architecture.md §3.5). Every key is parsed, range-checked and converted by the
// registry (spec/keys.cpp); this file only finds the texts, splits them into
// (key, value, line) with Boost.PO and applies them in the documented order.
#include "ppsearch/io/config_file.hpp"
#include "ppsearch/util/text.hpp"

#include <boost/program_options.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "ppsearch/io/presets.hpp"
#include "ppsearch/spec/check.hpp"
#include "ppsearch/spec/keys.hpp"
#include "ppsearch/spec/stacks.hpp"
#include "ppsearch/util/error.hpp"

namespace po = boost::program_options;

namespace ppsearch {
namespace {

// One "key = value" setting of a document, with its 1-based line; a setting that
// cannot apply (unknown or repeated key) carries its issue instead, so that issues
// come out in line order.
struct Entry {
  std::string key;
  std::string value;
  int line = 0;
  std::optional<ConfigIssue> issue;
};

// A parsed INI text: where it came from ("preset models/llama3-70b" or a path) and its settings.
struct Document {
  std::string label;
  std::vector<Entry> entries;
};

// ---- line scanner ------------------------------------------------------------
// Boost.PO's config parser (libs/program_options/src/config_file.cpp) reads line
// by line: text from '#' on is a comment, whitespace " \t\r\n" is trimmed, a
// line "[name]" sets the prefix "name.", any other non-empty line must hold '='.
// PO reports neither line numbers nor the offending line, so this scanner
// applies the same rules to find them.
struct ScannedLine {
  int line = 0;
  bool is_setting = false;  // "key = value"; else a line PO rejects
  std::string key;          // with the section prefix
  std::string text;         // the line without its comment, trimmed
};

std::string trim_ws(const std::string& s) {
  const char* ws = " \t\r\n";
  const auto b = s.find_first_not_of(ws);
  if (b == std::string::npos) return std::string();
  const auto e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

// The longest line a configuration file may have (comments excluded). The longest legitimate
// line is a list key at its limits: search.gpus with 10000 counts of up to 6 digits and a comma
// is under 70 kB (the resolved configuration that rank 0 broadcasts carries such lines too).
constexpr std::size_t kMaxLineBytes = 128 * 1024;

std::vector<ScannedLine> scan_lines(const std::string& text) {
  std::vector<ScannedLine> out;
  std::istringstream in(text);
  std::string raw;
  std::string prefix;
  int line = 0;
  while (std::getline(in, raw)) {
    ++line;
    std::string s = raw.substr(0, raw.find('#'));
    s = trim_ws(s);
    if (s.empty()) continue;
    if (s.front() == '[' && s.back() == ']') {
      prefix = s.substr(1, s.size() - 2);
      if (prefix.empty() || prefix.back() != '.') prefix += '.';
      continue;
    }
    const auto eq = s.find('=');
    if (eq == std::string::npos) {
      out.push_back(ScannedLine{line, false, "", s});
    } else {
      out.push_back(ScannedLine{line, true, prefix + trim_ws(s.substr(0, eq)), s});
    }
  }
  return out;
}

// Every registered key as a PO option, so that PO marks the others "unregistered".
const po::options_description& known_options() {
  static const po::options_description desc = [] {
    po::options_description d;
    for (const std::string& key : known_keys()) {
      d.add_options()(key.c_str(), po::value<std::string>());
    }
    return d;
  }();
  return desc;
}

std::string at_line(const std::string& label, int line) {
  return line > 0 ? label + ":" + std::to_string(line) : label;
}

// Splits `text` into settings with Boost.PO (allow_unregistered = true). Unknown
// and repeated keys become entries carrying their issue; a malformed line is
// reported at once (PO stops there) and leaves the document empty.
Document parse_document(const std::string& raw_text, const std::string& label,
                        std::vector<ConfigIssue>* issues) {
  Document doc{label, {}};
  // A UTF-8 byte-order mark (as some editors write) is no part of the first line.
  const bool bom = raw_text.compare(0, 3, "\xEF\xBB\xBF") == 0;
  const std::string text = bom ? raw_text.substr(3) : raw_text;
  const std::vector<ScannedLine> lines = scan_lines(text);
  // Lines are short text: a line over kMaxLineBytes (a file that is not a configuration, or
  // a runaway value) or one that is not UTF-8 (its text would reach messages and the HDF5
  // attributes) is refused before any value is taken from the file.
  for (const ScannedLine& l : lines) {
    const std::string what = l.is_setting ? l.text.substr(l.text.find('=') + 1) : l.text;
    if (l.text.size() > kMaxLineBytes) {
      issues->push_back(
          ConfigIssue{at_line(label, l.line), l.is_setting ? l.key : "", trim_ws(what),
                      "a line of at most " + std::to_string(kMaxLineBytes) +
                          " bytes (this one has " + std::to_string(l.text.size()) + ")"});
      return doc;
    }
    if (!is_valid_utf8(l.text)) {
      issues->push_back(ConfigIssue{at_line(label, l.line), l.is_setting ? l.key : "",
                                    "(bytes that are not UTF-8)", "UTF-8 text"});
      return doc;
    }
  }
  std::istringstream in(text);
  try {
    const po::parsed_options parsed =
        po::parse_config_file(in, known_options(), /*allow_unregistered=*/true);
    std::size_t next = 0;
    std::vector<std::pair<std::string, int>> seen;
    for (const po::option& opt : parsed.options) {
      while (next < lines.size() && !lines[next].is_setting) ++next;
      int line = 0;
      if (next < lines.size() && lines[next].key == opt.string_key) line = lines[next++].line;
      const std::string value = opt.value.empty() ? std::string() : opt.value.front();
      const std::string source = at_line(label, line);
      Entry entry{opt.string_key, value, line, std::nullopt};
      const auto dup = std::find_if(seen.begin(), seen.end(),
                                    [&](const auto& s) { return s.first == opt.string_key; });
      if (opt.unregistered || !is_known_key(opt.string_key)) {
        const std::string hint = closest_key(opt.string_key);
        entry.issue =
            ConfigIssue{source, opt.string_key, value,
                        hint.empty() ? "unknown key" : "unknown key (did you mean " + hint + "?)"};
      } else if (dup != seen.end()) {
        entry.issue = ConfigIssue{
            source, opt.string_key, value,
            "set once per file (first set at line " + std::to_string(dup->second) + ")"};
      } else {
        seen.emplace_back(opt.string_key, line);
      }
      doc.entries.push_back(std::move(entry));
    }
  } catch (const po::error&) {
    // The first line PO cannot read: no '=' and not a [section] header.
    const auto bad = std::find_if(lines.begin(), lines.end(),
                                  [](const ScannedLine& l) { return !l.is_setting; });
    const int line = bad == lines.end() ? 0 : bad->line;
    issues->push_back(ConfigIssue{at_line(label, line), "", bad == lines.end() ? "" : bad->text,
                                  "not a 'key = value' line or a [section] header"});
    doc.entries.clear();
  }
  return doc;
}

// ---- finding texts ---------------------------------------------------------------
std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

struct Kind {
  const char* folder;  // preset kind: "models"
  const char* what;    // in messages: "model"
};
constexpr Kind kModels{"models", "model"};
constexpr Kind kClusters{"clusters", "cluster"};
constexpr Kind kGpus{"gpus", "GPU"};
constexpr Kind kSearches{"searches", "search"};

std::string preset_list_text(const Kind& kind) {
  return std::string("a ") + kind.what + " preset (" + join(preset_names(kind.folder)) + ")";
}

std::string unknown_preset_text(const Kind& kind, const std::string& name) {
  const std::vector<std::string> names = preset_names(kind.folder);
  std::string hint;
  std::size_t best = std::numeric_limits<std::size_t>::max();
  for (const auto& n : names) {
    const std::size_t d = edit_distance(name, n);
    if (d < best) {
      best = d;
      hint = n;
    }
  }
  std::string text = preset_list_text(kind) + " or an INI file path";
  if (!hint.empty() && best <= std::max<std::size_t>(2, name.size() / 3)) {
    text += " (did you mean " + hint + "?)";
  }
  return text;
}

// Reads a preset or a file into a Document. On failure adds one issue, with
// `source` and `key` naming where the name was given, and returns false.
bool load_document(const std::string& name, const Kind& kind, const std::string& source,
                   const std::string& key, Document* doc, std::vector<ConfigIssue>* issues) {
  if (is_preset_name(name)) {
    const Preset* preset = find_preset(kind.folder, name);
    if (preset == nullptr) {
      issues->push_back(ConfigIssue{source, key, name, unknown_preset_text(kind, name)});
      return false;
    }
    *doc = parse_document(std::string(preset->text), "preset " + std::string(preset->name), issues);
    return true;
  }
  std::string text;
  std::string why;
  if (read_regular_file(name, kMaxIniBytes, &text, &why)) {
    *doc = parse_document(text, name, issues);
    return true;
  }
  issues->push_back(ConfigIssue{source, key, name,
                                "an existing INI file (" + why + ") or " + preset_list_text(kind)});
  return false;
}

void apply_document(const Document& doc, LoadedConfig* out, std::vector<ConfigIssue>* issues) {
  for (const Entry& e : doc.entries) {
    if (e.issue) {
      issues->push_back(*e.issue);
      continue;
    }
    const std::string source = at_line(doc.label, e.line);
    if (auto issue = apply_key(out->problem, e.key, e.value, source)) {
      issues->push_back(*issue);
    } else {
      out->sources[e.key] = source;
    }
  }
}

bool split_set(const std::string& text, std::string* key, std::string* value) {
  const auto eq = text.find('=');
  if (eq == std::string::npos) return false;
  *key = trim_ws(text.substr(0, eq));
  *value = text.substr(eq + 1);
  return !key->empty();
}

}  // namespace

// -----------------------------------------------------------------------------
bool read_regular_file(const std::string& path, std::size_t max_bytes, std::string* text,
                       std::string* why) {
  text->clear();
  // O_NONBLOCK: opening a FIFO must not wait for a writer; the type check below then
  // rejects it. fstat on the open descriptor, so the file checked is the file read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    *why = err == ENOENT || err == ENOTDIR ? "no such file"
                                           : std::string("cannot be opened: ") + std::strerror(err);
    return false;
  }
  struct stat st {};
  bool ok = false;
  if (::fstat(fd, &st) != 0) {
    *why = std::string("cannot be read: ") + std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    *why = "not a regular file";
  } else if (static_cast<unsigned long long>(st.st_size) > max_bytes) {
    *why = "larger than " + std::to_string(max_bytes / (1024 * 1024)) + " MiB";
  } else {
    // Read up to one byte beyond the cap: a file that grows (or a special file that
    // reports size 0) is still held to it.
    ok = true;
    char buf[65536];
    while (true) {
      const ssize_t n = ::read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        *why = std::string("cannot be read: ") + std::strerror(errno);
        ok = false;
        break;
      }
      if (n == 0) break;
      text->append(buf, static_cast<std::size_t>(n));
      if (text->size() > max_bytes) {
        *why = "larger than " + std::to_string(max_bytes / (1024 * 1024)) + " MiB";
        ok = false;
        break;
      }
    }
  }
  ::close(fd);
  if (!ok) text->clear();
  return ok;
}

bool is_preset_name(const std::string& name) {
  const bool has_ini = name.size() >= 4 && name.compare(name.size() - 4, 4, ".ini") == 0;
  return !name.empty() && name.find('/') == std::string::npos && !has_ini;
}

std::string config_label(const std::string& name_or_path) {
  if (is_preset_name(name_or_path)) return name_or_path;
  const std::filesystem::path p(name_or_path);
  return p.extension() == ".ini" ? p.stem().string() : p.filename().string();
}

LoadedConfig collect_configuration(const LoadRequest& request) {
  LoadedConfig out;
  std::vector<ConfigIssue>& issues = out.issues;

  // The texts, in the order they apply.
  std::vector<Document> docs;
  Document doc;
  if (load_document(request.cluster, kClusters, "--cluster", "", &doc, &issues)) {
    docs.push_back(doc);
  }
  if (load_document(request.model, kModels, "--model", "", &doc, &issues)) docs.push_back(doc);
  for (const std::string& path : request.config_files) {
    if (load_document(path, kSearches, "--config", "", &doc, &issues)) docs.push_back(doc);
  }

  // The GPU preset is the last cluster.gpu given anywhere; it applies first, so
  // that every file and override can refine it.
  std::string gpu_name;
  std::string gpu_source;
  for (const Document& d : docs) {
    for (const Entry& e : d.entries) {
      if (e.key == "cluster.gpu" && !e.issue) {
        gpu_name = trim_ws(e.value);
        gpu_source = at_line(d.label, e.line);
      }
    }
  }
  for (const std::string& s : request.sets) {
    std::string key;
    std::string value;
    if (split_set(s, &key, &value) && key == "cluster.gpu") {
      gpu_name = trim_ws(value);
      gpu_source = "--set";
    }
  }
  for (const KeyOverride& o : request.options) {
    if (o.key == "cluster.gpu") {
      gpu_name = trim_ws(o.value);
      gpu_source = o.source;
    }
  }
  if (!gpu_name.empty()) {
    Document gpu;
    if (load_document(gpu_name, kGpus, gpu_source, "cluster.gpu", &gpu, &issues)) {
      apply_document(gpu, &out, &issues);
    }
  }

  for (const Document& d : docs) apply_document(d, &out, &issues);

  for (const std::string& s : request.sets) {
    std::string key;
    std::string value;
    if (!split_set(s, &key, &value)) {
      issues.push_back(ConfigIssue{"--set", "", s, "SECTION.KEY=VALUE, e.g. model.layers=80"});
      continue;
    }
    if (auto issue = apply_key(out.problem, key, value, "--set")) {
      issues.push_back(*issue);
    } else {
      out.sources[key] = "--set";
    }
  }
  for (const KeyOverride& o : request.options) {
    if (auto issue = apply_key(out.problem, o.key, o.value, o.source)) {
      issues.push_back(*issue);
    } else {
      out.sources[o.key] = o.source;
    }
  }
  // Software-stack profile (docs/step-time.md): the stack's keys that nothing above set.
  {
    std::set<std::string> given;
    for (const auto& kv : out.sources) given.insert(kv.first);
    apply_stack(&out.problem, given);  // an unknown name was refused by training.stack's parser
  }
  return out;
}

LoadedConfig apply_configuration(const LoadRequest& request) {
  LoadedConfig out = collect_configuration(request);
  if (!out.issues.empty()) throw ConfigError(std::move(out.issues));
  return out;
}

Problem finish_configuration(LoadedConfig loaded) {
  std::vector<ConfigIssue> issues = check(loaded.problem);
  for (ConfigIssue& issue : issues) {
    if (!issue.source.empty()) continue;
    const auto it = loaded.sources.find(issue.key);
    issue.source = it == loaded.sources.end() ? "(default)" : it->second;
  }
  if (!issues.empty()) throw ConfigError(std::move(issues));
  resolve_defaults(loaded.problem);
  return std::move(loaded.problem);
}

Problem load_problem(const LoadRequest& request) {
  return finish_configuration(apply_configuration(request));
}

std::string resolved_ini(const Problem& problem) { return to_ini(problem); }

Problem problem_from_ini_text(const std::string& text, const std::string& source) {
  std::vector<ConfigIssue> issues;
  LoadedConfig loaded;
  const Document doc = parse_document(text, source, &issues);
  apply_document(doc, &loaded, &issues);
  if (!issues.empty()) throw ConfigError(std::move(issues));
  return finish_configuration(std::move(loaded));
}

}  // namespace ppsearch
