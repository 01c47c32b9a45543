// libFuzzer target: the command-line parser (src/cli/options.cpp) on arbitrary argument lists.
// The input is split into argv words at newlines (so a word may hold spaces, '=' and any byte
// but '\n'). parse_command_line loads presets and files named by --model/--cluster/--config, so
// the target runs in a private folder (with m.ini, k.ini and c.ini to name) and skips inputs
// containing '/': a fuzzer must never open system paths or device files. Exit 2 (usage/config
// error) and exit 0 (--help, a run) are normal outcomes; a crash, a sanitizer report, an exception
// escaping the parser, or an exit outcome without text is a finding.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "ppsearch/cli/options.hpp"
#include "ppsearch/io/presets.hpp"
#include "ppsearch/util/error.hpp"

namespace {
void write_file(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) std::abort();
}

// A fresh folder under $TMPDIR (libFuzzer ends with _Exit, so tests/fuzz/run.sh points TMPDIR
// into build/fuzz and removes it afterwards), made once, holding a model file (m.ini), a cluster
// file (k.ini) and a config file (c.ini) for the command lines to name. The parser runs inside it;
// libFuzzer itself keeps the caller's folder (it reads the corpus folders by their relative names
// while fuzzing).
const std::string& private_folder() {
  static const std::string dir = [] {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/ppsearch-fuzz-cli-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    const std::string d = tmpl;
    write_file(d + "/m.ini", ppsearch::find_preset("models", "llama3-8b")->text);
    write_file(d + "/k.ini", ppsearch::find_preset("clusters", "h200-8gpu-ndr")->text);
    write_file(d + "/c.ini", "[training]\nglobal_batch_size = 256\n[search]\ntp = 1,2,4,8\n");
    return d;
  }();
  return dir;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 4096 || std::memchr(data, '/', size) != nullptr) return -1;  // stay in our folder
  std::vector<std::string> args;
  std::string word;
  for (std::size_t k = 0; k < size; ++k) {
    const char c = static_cast<char>(data[k]);
    if (c == '\n') {
      args.push_back(word);
      word.clear();
    } else {
      word += c;
    }
  }
  if (!word.empty()) args.push_back(word);
  const int caller = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (caller < 0 || chdir(private_folder().c_str()) != 0) std::abort();
  const ppsearch::CliOutcome out = ppsearch::parse_command_line(args);
  if (fchdir(caller) != 0) std::abort();
  close(caller);
  if (out.run) {
    if (out.request.problem.gpus.empty() || out.request.output_path.empty()) std::abort();
  } else {
    if (out.text.empty()) std::abort();
    if (out.exit_code != static_cast<int>(ppsearch::ExitCode::kOk) &&
        out.exit_code != static_cast<int>(ppsearch::ExitCode::kUsage)) {
      std::abort();
    }
  }
  return 0;
}
