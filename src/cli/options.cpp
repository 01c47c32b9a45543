// Command line → RunRequest (docs/interface.md §1) with Boost.Program_options.
// Every option value is taken as text and handed to the key registry
// (spec/keys.cpp) as an override, so that an option and the config key it sets
// share one parser, one range and one error message.
#include "ppsearch/cli/options.hpp"
#include "ppsearch/util/text.hpp"

#include <boost/program_options.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "ppsearch/build_info.hpp"
#include "ppsearch/cli/emit.hpp"
#include "ppsearch/io/config_file.hpp"
#include "ppsearch/io/presets.hpp"
#include "ppsearch/io/result_writer.hpp"
#include "ppsearch/search/candidate.hpp"
#include "ppsearch/search/enumerate.hpp"
#include "ppsearch/spec/keys.hpp"

namespace po = boost::program_options;

namespace ppsearch {
namespace {

constexpr long long kMaxTop = 1000000;  // --top: rows printed on stdout

// Options that set a configuration key: option → key (same parser, same message).
struct KeyOption {
  const char* option;
  const char* key;
  const char* value_name;
  const char* help;
};
constexpr KeyOption kKeyOptions[] = {
    {"global-batch", "training.global_batch_size", "N",
     "global batch in sequences (= --set training.global_batch_size=N); default from the model"},
    {"tp", "search.tp", "LIST", "tensor-parallel degrees, a comma list or auto (default auto)"},
    {"pp", "search.pp", "LIST", "pipeline-parallel degrees, a comma list or auto"},
    {"cp", "search.cp", "LIST", "context-parallel degrees, a comma list or auto"},
    {"vpp", "search.vpp", "LIST", "model chunks per pipeline rank (1 = not interleaved), or auto"},
    {"mbs", "search.mbs", "LIST", "micro-batch sizes in sequences, or auto"},
    {"schedule", "search.schedule", "LIST",
     "pipeline schedules from gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-v, dualpipe, zb-h2, or auto "
     "(auto: the first four)"},
    {"recompute", "search.recompute", "LIST",
     "activation recompute from none, selective, full, or auto"},
    {"recompute-num-layers", "search.recompute_num_layers", "LIST",
     "with full recompute: layers recomputed per stage (0 = all, default), or auto (fewest that "
     "fit)"},
    {"sp", "search.sp", "LIST", "sequence parallelism: on, off, or auto"},
    {"zero", "search.zero", "LIST", "ZeRO stages from 0, 1, 2, 3, or auto"},
    {"partitioner", "search.partitioner", "NAME",
     "layer partitioner: fast (default) or reference (plain DP, for checking)"},
    {"simulation", "search.simulation", "NAME",
     "schedule simulation: fast (default) or full (every micro-batch)"},
    {"max-candidates", "search.max_candidates", "N",
     "sweep budget (= --set search.max_candidates=N, default 500000): a sweep with more "
     "candidates stops at once with exit 2"},
    {"tokens", "training.tokens", "N",
     "tokens to train on (= --set training.tokens=N; 15T, 300B, 2.5e12): adds time to train and "
     "GPU-hours to the results and names the fastest GPU count"},
    {"price-per-gpu-hour", "cluster.price_per_gpu_hour", "PRICE",
     "price of one GPU-hour in your currency (= --set cluster.price_per_gpu_hour=PRICE): adds "
     "the cost of training --tokens and names the cheapest GPU count"},
    // FP8 training (docs/precision.md).
    {"precision", "training.precision", "NAME",
     "compute precision of the linear layers: bf16 (default) or fp8 (= --set "
     "training.precision=fp8; recipe: training.fp8_recipe)"},
    // Mixture of experts (docs/moe.md).
    {"ep", "search.ep", "LIST", "expert-parallel degrees (MoE models), a comma list or auto"},
    {"etp", "search.etp", "LIST", "expert-tensor-parallel degrees (MoE models), or auto (= 1)"},
    // Software-stack profile (docs/step-time.md).
    {"stack", "training.stack", "NAME",
     "software stack whose overlaps and fusions the step time assumes (= --set "
     "training.stack=NAME): megatron-2021, megatron-2022, nemo-24.x, nemo-25.x (default), "
     "torchtitan-2024, tuned, megatron-core, nemo-24.09-dfa, llmfoundry-2023, "
     "torchtitan-asynctp, torchtitan-compile, torchtitan-asynctp-compile, llmfoundry-2024, "
     "torchtitan-2025, torchtitan-2025-compile, torchtitan-2025-torch29"},
};

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

po::options_description visible_options() {
  po::options_description desc("Options", 100, 50);
  auto add = [&desc](const char* name, const po::value_semantic* value, const std::string& help) {
    desc.add_options()(name, value, help.c_str());
  };
  auto text = [](const char* value_name) {
    return po::value<std::string>()->value_name(value_name);
  };
  auto repeated = [](const char* value_name) {
    return po::value<std::vector<std::string>>()->composing()->value_name(value_name);
  };
  add("gpus", text("LIST"),
      "GPU counts to search (required): 128, 64,128,256, 64:1024 (every multiple of "
      "cluster.gpus_per_node in range) or 64:1024:64 (explicit step)");
  add("model", text("NAME|PATH"),
      "model preset or INI file (default llama3-70b); presets: " +
          join(preset_names("models"), ", "));
  add("cluster", text("NAME|PATH"),
      "cluster preset or INI file (default h200-16gpu-ib: 16-GPU H200 nodes on InfiniBand); "
      "presets: " +
          join(preset_names("clusters"), ", "));
  add("config", repeated("PATH"),
      "further INI file (training, search settings); repeatable, later files win");
  add("set", repeated("SECTION.KEY=VALUE"),
      "override any configuration key; repeatable; wins over every file");
  for (const KeyOption& k : kKeyOptions) add(k.option, text(k.value_name), k.help);
  add("output", text("PATH"),
      "result file: .h5/.hdf5 (HDF5), .csv (CSV, with _stages.csv and _best.csv next to it) or "
      ".json (default results/<model>_<cluster>_<gpus>.h5)");
  add("format", text("NAME"),
      "result format: hdf5, csv or json (default: from the --output extension .h5/.hdf5, .csv, "
      ".json; an other extension needs --format)");
  add("overwrite", po::bool_switch(), "replace an existing output file");
  add("top", text("K"), "rows of the ranked table printed on stdout (default 10)");
  add("threads", text("N"),
      "OpenMP threads per MPI rank (default OMP_NUM_THREADS, else all cores of the rank)");
  add("quiet", po::bool_switch(), "print nothing but errors (and the --emit output)");
  add("emit", text("FORMAT"),
      "also print the best row's launch configuration: megatron, nemo or torchtitan "
      "(docs/launch.md); with --quiet, only that");
  add("explain", po::bool_switch(),
      "explain the best row: per-rank time and memory, communication hidden and exposed, "
      "bubble, binding constraint, schedule Gantt (on by itself when one candidate is left)");
  add("gantt", po::bool_switch(), "print the best row's schedule as a text Gantt");
  add("trace", text("FILE.json"),
      "write the best row's simulated schedule as Chrome-trace / Perfetto JSON");
  // Re-evaluation of chosen rows (docs/uncertainty.md).
  add("uncertainty-top", text("N"),
      "rows per GPU count re-evaluated with every calibration constant at the ends of its "
      "range, for step-time bounds and a robust winner (default 10, 0 = off, at most 1000)");
  add("regret-clusters", text("A,B,..."),
      "cluster presets or INI files: search each, run each one's best configuration on every "
      "other and report the regret matrix (/regret)");
  add("print-config", po::bool_switch(), "print the resolved configuration (INI) and exit");
  add("help-config", po::bool_switch(), "print every configuration key and exit");
  add("help,h", po::bool_switch(), "print this help and exit");
  add("version", po::bool_switch(), "print the version and exit");
  return desc;
}

std::string closest_option(const po::options_description& desc, const std::string& written) {
  std::string name = written;
  while (!name.empty() && name.front() == '-') name.erase(name.begin());
  name = name.substr(0, name.find('='));
  std::string best;
  std::size_t best_d = std::numeric_limits<std::size_t>::max();
  for (const auto& opt : desc.options()) {
    const std::string& candidate = opt->long_name();
    const std::size_t d = edit_distance(name, candidate);
    if (!candidate.empty() && d < best_d) {
      best_d = d;
      best = candidate;
    }
  }
  return best_d <= std::max<std::size_t>(2, name.size() / 3) ? "--" + best : std::string();
}

std::string error_text(const std::vector<ConfigIssue>& issues) {
  std::string out;
  for (const ConfigIssue& i : issues) out += "ppsearch: error: " + issue_line(i) + "\n";
  return out;
}

CliOutcome exit_with(ExitCode code, std::string text) {
  CliOutcome out;
  out.run = false;
  out.exit_code = static_cast<int>(code);
  out.text = std::move(text);
  return out;
}

CliOutcome usage_error(const std::vector<ConfigIssue>& issues) {
  return exit_with(ExitCode::kUsage, error_text(issues));
}

bool parse_int(const std::string& text, long long* out) {
  if (text.empty()) return false;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  const auto res = std::from_chars(first, last, *out);
  return res.ec == std::errc() && res.ptr == last;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return std::string();
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// Shell-quotes an argument when it holds anything beyond a safe set.
std::string quoted(const std::string& arg) {
  const bool safe = !arg.empty() && arg.find_first_not_of(
                                        "abcdefghijklmnopqrstuvwxyz"
                                        "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789-_.,:/=+@%") == std::string::npos;
  if (safe) return arg;
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

const char* const kGpusSyntax =
    "GPU counts in [1, 131072]: N, a comma list N,M,..., START:END (every multiple of "
    "cluster.gpus_per_node in range) or START:END:STEP";

// The sweep budget: counts the candidates before anything is built or written and
// refuses a sweep above search.max_candidates, saying how to narrow it.
std::optional<ConfigIssue> budget_issue(const Problem& problem, const std::string& source) {
  const SweepSize size = sweep_size(problem);
  const int limit = problem.search.max_candidates;
  if (size.candidates <= limit) return std::nullopt;
  // Memory of the results on rank 0: per candidate its Candidate and its ResultRow (packed
  // per rank and ranked: twice), per virtual stage a StageResult and a StageRow.
  const double bytes = static_cast<double>(size.candidates) *
                           static_cast<double>(sizeof(Candidate) + 2 * sizeof(ResultRow)) +
                       static_cast<double>(size.stages) *
                           static_cast<double>(sizeof(StageResult) + sizeof(StageRow));
  char mem[32];
  std::snprintf(mem, sizeof mem, "%.1f", bytes / 1e9);
  return ConfigIssue{
      source, "search.max_candidates", std::to_string(limit),
      "at least the sweep's " + std::to_string(size.candidates) + " candidates (results alone " +
          "need about " + mem +
          " GB); narrow the sweep (fix --tp, --pp, --cp, --mbs, --schedule or --recompute, or "
          "give a smaller --gpus range) or raise the limit with --max-candidates N"};
}

// The result format: --format, else the --output extension (.h5/.hdf5, .csv, .json); an
// extension that names none of them is a usage error rather than a silent HDF5 file. Without
// --output the default name takes the format's extension.
std::optional<ConfigIssue> resolve_output_format(bool output_given, const std::string& format,
                                                 RunRequest* req) {
  const char* const kAllowed = "hdf5, csv or json";
  if (!format.empty()) {
    if (format != "hdf5" && format != "csv" && format != "json") {
      return ConfigIssue{"--format", "", format, std::string("one of ") + kAllowed};
    }
    req->format = format;
    if (!output_given) {
      const std::string stem = req->output_path.substr(0, req->output_path.rfind('.'));
      req->output_path = stem + (format == "hdf5" ? ".h5" : "." + format);
    }
    return std::nullopt;
  }
  // "" when the extension names no format: main refuses it (unknown_format_text) after it has
  // looked at the output target, whose problems (a device, a FIFO, a folder) come first.
  req->format = format_from_extension(req->output_path);
  return std::nullopt;
}

// --regret-clusters A,B,...: the same model, GPU counts, training and search on each cluster
// (docs/uncertainty.md "Cross-topology regret"). Every issue names the option and the value.
std::vector<ConfigIssue> load_regret_clusters(const std::string& list, const LoadRequest& load,
                                              RunRequest* req) {
  const char* const kOption = "--regret-clusters";
  std::vector<ConfigIssue> issues;
  std::vector<std::string> names;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = list.find(',', start);
    names.push_back(
        trim(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  const std::string allowed_list = "a comma list of at least two cluster presets (" +
                                   join(preset_names("clusters"), ", ") + ") or cluster INI files";
  if (names.size() < 2) return {ConfigIssue{kOption, "", list, allowed_list}};
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    if (name.empty()) {
      issues.push_back(ConfigIssue{kOption, "", list, allowed_list + ", without empty items"});
      continue;
    }
    if (std::find(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(i), name) !=
        names.begin() + static_cast<std::ptrdiff_t>(i)) {
      issues.push_back(ConfigIssue{kOption, "", name, "each cluster once"});
      continue;
    }
    if (is_preset_name(name) && find_preset("clusters", name) == nullptr) {
      issues.push_back(ConfigIssue{kOption, "", name,
                                   "unknown cluster preset; one of " +
                                       join(preset_names("clusters"), ", ") +
                                       ", or a path to a cluster INI file"});
      continue;
    }
    LoadRequest l = load;
    l.cluster = name;
    LoadedConfig loaded = collect_configuration(l);
    auto prefixed = [&](ConfigIssue issue) {
      issue.source = std::string(kOption) + " " + name + ": " + issue.source;
      return issue;
    };
    if (!loaded.issues.empty()) {
      for (const ConfigIssue& is : loaded.issues) issues.push_back(prefixed(is));
      continue;
    }
    loaded.problem.gpus = req->problem.gpus;  // the same GPU counts as the main search
    loaded.sources["search.gpus"] = "--gpus";
    try {
      Problem p = finish_configuration(std::move(loaded));
      if (auto issue = budget_issue(p, "(default)")) {
        issues.push_back(prefixed(*issue));
        continue;
      }
      req->regret_labels.push_back(config_label(name));
      req->regret_problems.push_back(std::move(p));
    } catch (const ConfigError& e) {
      for (const ConfigIssue& is : e.issues()) issues.push_back(prefixed(is));
    }
  }
  for (std::size_t i = 0; i < req->regret_labels.size() && issues.empty(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (req->regret_labels[i] == req->regret_labels[j])
        issues.push_back(ConfigIssue{kOption, "", req->regret_labels[i],
                                     "clusters whose labels (file names) differ"});
  if (!issues.empty()) {
    req->regret_labels.clear();
    req->regret_problems.clear();
  }
  return issues;
}

}  // namespace

std::string format_from_extension(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  const std::size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string ext = path.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == "h5" || ext == "hdf5") return "hdf5";
  if (ext == "csv") return "csv";
  if (ext == "json") return "json";
  return "";
}

std::string unknown_format_text(const std::string& output_path) {
  return error_text({ConfigIssue{"--output", "", output_path,
                                 "a name ending in .h5 or .hdf5 (HDF5), .csv (CSV) or .json "
                                 "(JSON), or give the format with --format hdf5|csv|json"}});
}

// -----------------------------------------------------------------------------
std::string issue_line(const ConfigIssue& issue) {
  std::string out = issue.source;
  auto part = [&out](const std::string& text) {
    if (text.empty()) return;
    out += (out.empty() ? "" : ": ") + text;
  };
  // Key and value are echoed from the input: clipped, so a 1 MB key gives a short line.
  part(issue.key.empty() ? clip_for_message(issue.value, kMessageValueBytes)
                         : clip_for_message(issue.key) + " = " +
                               clip_for_message(issue.value, kMessageValueBytes));
  part(issue.allowed);
  return out;
}

bool expand_gpu_counts(const std::string& text, int gpus_per_node, std::vector<int>* counts,
                       std::string* why) {
  counts->clear();
  const std::string all = trim(text);
  if (all.empty()) {
    *why = kGpusSyntax;
    return false;
  }
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = all.find(',', start);
    const std::string item =
        trim(all.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    std::vector<long long> parts;
    std::size_t from = 0;
    while (true) {
      const std::size_t colon = item.find(':', from);
      long long v = 0;
      if (!parse_int(
              item.substr(from, colon == std::string::npos ? std::string::npos : colon - from),
              &v) ||
          v < 1 || v > kMaxGpus) {
        *why = kGpusSyntax;
        return false;
      }
      parts.push_back(v);
      if (colon == std::string::npos) break;
      from = colon + 1;
    }
    if (parts.size() == 1) {
      if (gpus_per_node > 0) counts->push_back(static_cast<int>(parts[0]));
    } else if (parts.size() <= 3) {
      const long long lo = parts[0];
      const long long hi = parts[1];
      if (lo > hi) {
        *why = "a range with START ≤ END";
        return false;
      }
      if (gpus_per_node <= 0) {  // syntax check only
        if (comma == std::string::npos) break;
        start = comma + 1;
        continue;
      }
      const bool by_node = parts.size() == 2;
      const long long step = by_node ? gpus_per_node : parts[2];
      const long long first = by_node ? (lo + step - 1) / step * step : lo;  // multiples of step
      if (first > hi) {
        *why = "a range that holds a multiple of cluster.gpus_per_node (" +
               std::to_string(gpus_per_node) + ")";
        return false;
      }
      for (long long g = first; g <= hi; g += step) {
        counts->push_back(static_cast<int>(g));
        if (static_cast<int>(counts->size()) > kMaxGpuCounts) {
          *why = "at most " + std::to_string(kMaxGpuCounts) + " GPU counts";
          return false;
        }
      }
    } else {
      *why = kGpusSyntax;
      return false;
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::sort(counts->begin(), counts->end());
  counts->erase(std::unique(counts->begin(), counts->end()), counts->end());
  if (static_cast<int>(counts->size()) > kMaxGpuCounts) {
    *why = "at most " + std::to_string(kMaxGpuCounts) + " GPU counts";
    return false;
  }
  return true;
}

std::string usage_text() {
  std::ostringstream out;
  out << "Usage: ppsearch --gpus LIST [options]\n\n"
         "Searches tensor/pipeline/context/data-parallel degrees, micro-batch size, pipeline\n"
         "schedule, recomputation and ZeRO stage for training a transformer on a GPU cluster,\n"
         "and predicts step time and MFU. Writes every candidate to an HDF5 file and prints the\n"
         "best ones.\n\n";
  out << visible_options();
  out << "\nConfiguration order (later wins): built-in defaults, the GPU preset named by\n"
         "cluster.gpu, --cluster, --model, --config files, --set, then the options above.\n"
         "Every key with its unit and default: ppsearch --help-config.\n\n"
         "Exit codes: 0 success; 1 internal error; 2 usage or configuration error (nothing is\n"
         "written); 3 no feasible configuration (results still written); 4 output error.\n";
  return out.str();
}

CliOutcome parse_command_line(const std::vector<std::string>& args) {
  const po::options_description visible = visible_options();
  po::options_description all;
  all.add(visible);
  all.add_options()("unexpected", po::value<std::vector<std::string>>());
  po::positional_options_description positional;
  positional.add("unexpected", -1);

  po::variables_map vm;
  try {
    const int style = po::command_line_style::unix_style & ~po::command_line_style::allow_guessing;
    po::store(po::command_line_parser(args).options(all).positional(positional).style(style).run(),
              vm);
  } catch (const po::unknown_option& e) {
    const std::string hint = closest_option(visible, e.get_option_name());
    return usage_error({ConfigIssue{e.get_option_name(), "", "",
                                    hint.empty() ? "unknown option (see ppsearch --help)"
                                                 : "unknown option (did you mean " + hint + "?)"}});
  } catch (const po::multiple_occurrences& e) {
    return usage_error({ConfigIssue{e.get_option_name(), "", "",
                                    "given more than once (only --config and "
                                    "--set repeat)"}});
  } catch (const po::invalid_command_line_syntax& e) {
    return usage_error({ConfigIssue{e.get_option_name(), "", "", "needs a value"}});
  } catch (const po::error& e) {
    return usage_error({ConfigIssue{"", "", "", e.what()}});
  }
  auto text = [&vm](const char* name) {
    return vm.count(name) != 0U ? vm[name].as<std::string>() : std::string();
  };
  auto list = [&vm](const char* name) {
    return vm.count(name) != 0U ? vm[name].as<std::vector<std::string>>()
                                : std::vector<std::string>();
  };
  auto flag = [&vm](const char* name) { return vm.count(name) != 0U && vm[name].as<bool>(); };

  if (flag("help")) return exit_with(ExitCode::kOk, usage_text());
  if (flag("version")) {
    return exit_with(ExitCode::kOk, std::string("ppsearch ") + PPSEARCH_VERSION + " (" +
                                        PPSEARCH_GIT_HASH + ")\n");
  }
  if (flag("help-config")) return exit_with(ExitCode::kOk, help_text());

  std::vector<ConfigIssue> issues;
  for (const std::string& arg : list("unexpected")) {
    issues.push_back(ConfigIssue{arg, "", "", "unexpected argument (options start with --)"});
  }

  RunRequest req;
  req.overwrite = flag("overwrite");
  req.quiet = flag("quiet");
  req.explain = flag("explain");
  req.gantt = flag("gantt");
  if (vm.count("trace") != 0U) {
    req.trace_path = text("trace");
    if (req.trace_path.empty())
      issues.push_back(ConfigIssue{"--trace", "", "", "a file name (FILE.json)"});
  }
  if (vm.count("emit") != 0U) {
    if (parse_launch_format(trim(text("emit")), &req.emit_format)) {
      req.emit = true;
    } else {
      issues.push_back(
          ConfigIssue{"--emit", "", text("emit"), std::string("one of ") + kLaunchFormatNames});
    }
  }
  if (vm.count("top") != 0U) {
    long long v = 0;
    if (!parse_int(trim(text("top")), &v) || v < 0 || v > kMaxTop) {
      issues.push_back(ConfigIssue{"--top", "", text("top"), "an integer in [0, 1000000]"});
    } else {
      req.top = static_cast<int>(v);
    }
  }
  if (vm.count("uncertainty-top") != 0U) {
    long long v = 0;
    if (!parse_int(trim(text("uncertainty-top")), &v) || v < 0 || v > 1000) {
      issues.push_back(
          ConfigIssue{"--uncertainty-top", "", text("uncertainty-top"), "an integer in [0, 1000]"});
    } else {
      req.uncertainty_top = static_cast<int>(v);
    }
  }
  if (vm.count("threads") != 0U) {
    long long v = 0;
    if (!parse_int(trim(text("threads")), &v) || v < 1 || v > 4096) {
      issues.push_back(ConfigIssue{"--threads", "", text("threads"), "an integer in [1, 4096]"});
    } else {
      req.threads = static_cast<int>(v);
    }
  }
  if (vm.count("output") != 0U && trim(text("output")).empty()) {
    issues.push_back(ConfigIssue{"--output", "", "(empty)", "a file path"});
  }

  LoadRequest load;
  if (vm.count("model") != 0U) load.model = text("model");
  if (vm.count("cluster") != 0U) load.cluster = text("cluster");
  load.config_files = list("config");
  load.sets = list("set");
  for (const KeyOption& k : kKeyOptions) {
    if (vm.count(k.option) != 0U) {
      load.options.push_back(KeyOverride{k.key, text(k.option), std::string("--") + k.option});
    }
  }

  // --gpus: the syntax is checked now; ranges expand once cluster.gpus_per_node is known.
  const bool gpus_given = vm.count("gpus") != 0U;
  const std::string gpus_text = text("gpus");
  bool gpus_syntax_ok = false;
  if (gpus_given) {
    std::vector<int> ignored;
    std::string why;
    gpus_syntax_ok = expand_gpu_counts(gpus_text, 0, &ignored, &why);
    if (!gpus_syntax_ok) issues.push_back(ConfigIssue{"--gpus", "search.gpus", gpus_text, why});
  }

  LoadedConfig loaded = collect_configuration(load);
  const auto budget_src = loaded.sources.find("search.max_candidates");
  const std::string budget_source =
      budget_src == loaded.sources.end() ? "(default)" : budget_src->second;
  issues.insert(issues.end(), loaded.issues.begin(), loaded.issues.end());
  const bool load_ok = loaded.issues.empty();
  loaded.issues.clear();

  bool gpus_reported = gpus_given && !gpus_syntax_ok;
  if (gpus_given && gpus_syntax_ok) {
    std::vector<int> counts;
    std::string why;
    if (!expand_gpu_counts(gpus_text, loaded.problem.cluster.gpus_per_node, &counts, &why)) {
      issues.push_back(ConfigIssue{"--gpus", "search.gpus", gpus_text, why});
      gpus_reported = true;
    } else {
      loaded.problem.gpus = counts;
      loaded.sources["search.gpus"] = "--gpus";
    }
  } else if (!gpus_given && loaded.problem.gpus.empty()) {
    issues.insert(issues.begin(), ConfigIssue{"--gpus", "", "(missing)",
                                              "required, e.g. --gpus 128 or --gpus 64:1024"});
    gpus_reported = true;
  }

  // Cross-field checks only once every value applied (a half-applied problem
  // would give misleading follow-up messages).
  if (load_ok) {
    try {
      req.problem = finish_configuration(std::move(loaded));
    } catch (const ConfigError& e) {
      for (const ConfigIssue& i : e.issues()) {
        if (gpus_reported && i.key == "search.gpus") continue;  // reported above
        issues.push_back(i);
      }
    }
  }
  if (!issues.empty()) return usage_error(issues);

  req.resolved_config = resolved_ini(req.problem);
  if (flag("print-config")) return exit_with(ExitCode::kOk, req.resolved_config);
  if (auto issue = budget_issue(req.problem, budget_source)) return usage_error({*issue});
  if (vm.count("regret-clusters") != 0U) {
    std::vector<ConfigIssue> regret = load_regret_clusters(text("regret-clusters"), load, &req);
    if (!regret.empty()) return usage_error(regret);
  }

  req.model_name = config_label(load.model);
  req.cluster_name = config_label(load.cluster);
  std::string gpus_label = gpus_given ? gpus_text : key_value(req.problem, "search.gpus");
  gpus_label.erase(std::remove_if(gpus_label.begin(), gpus_label.end(),
                                  [](char c) { return c == ' ' || c == '\t'; }),
                   gpus_label.end());
  std::replace(gpus_label.begin(), gpus_label.end(), ':', '-');
  req.output_path = vm.count("output") != 0U ? text("output")
                                             : "results/" + req.model_name + "_" +
                                                   req.cluster_name + "_" + gpus_label + ".h5";
  if (auto issue = resolve_output_format(vm.count("output") != 0U, text("format"), &req)) {
    return usage_error({*issue});
  }
  req.command_line = "ppsearch";
  for (const std::string& a : args) req.command_line += " " + quoted(a);
  CliOutcome out;
  out.run = true;
  out.request = std::move(req);
  return out;
}

}  // namespace ppsearch
