// The CSV and JSON result writers (io/text_result_writer.cpp): what an empty or an abandoned
// result leaves, and the companion names. The full round trip against the HDF5 rows is the e2e
// test tests/e2e/sizing_formats.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "../support/temp_dir.hpp"
#include "ppsearch/io/result_writer.hpp"

namespace ppsearch {
namespace {

namespace fs = std::filesystem;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(TextResultWriter, CompanionNames) {
  EXPECT_EQ(csv_result_paths("out/r.csv"),
            (std::vector<std::string>{"out/r.csv", "out/r_stages.csv", "out/r_best.csv"}));
  EXPECT_EQ(csv_result_paths("r"), (std::vector<std::string>{"r", "r_stages.csv", "r_best.csv"}));
  EXPECT_EQ(csv_result_paths("a.b/.r"),
            (std::vector<std::string>{"a.b/.r", "a.b/.r_stages.csv", "a.b/.r_best.csv"}));
}

TEST(TextResultWriter, AbandonedWriterLeavesNothing) {
  test::TempDir dir;
  for (TextFormat f : {TextFormat::kCsv, TextFormat::kJson}) {
    auto w = make_text_result_writer(dir.path() + "/r.out", false, f);
    w->write_candidates({ResultRow{}});
    w.reset();  // no commit
    EXPECT_TRUE(entries(dir.path()).empty()) << entries(dir.path()).front();
  }
}

TEST(TextResultWriter, EmptyResultsAreValidFiles) {
  test::TempDir dir;
  ResultMeta meta;
  meta.command_line = "ppsearch \"quoted\"\n";
  {
    auto w = make_text_result_writer(dir.path() + "/r.csv", false, TextFormat::kCsv);
    w->commit(meta);
  }
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"r.csv", "r_best.csv", "r_stages.csv"}));
  EXPECT_EQ(slurp(dir.path() + "/r_stages.csv"),
            "candidate,stage,pipeline_rank,first_layer,last_layer,time_s,memory_gb,weights_gb,"
            "gradients_gb,optimizer_gb,activations_gb,wstate_gb,transient_gb,workspace_gb,"
            "recomputed_layers\n");
  EXPECT_EQ(slurp(dir.path() + "/r.csv").rfind("gpus,tp,pp,cp,dp,", 0), 0U);
  {
    auto w = make_text_result_writer(dir.path() + "/r.json", false, TextFormat::kJson);
    w->commit(meta);
  }
  const std::string json = slurp(dir.path() + "/r.json");
  EXPECT_EQ(json.rfind("{\n\"candidates\": [],\n\"stages\": [],\n\"best\": [],\n", 0), 0U) << json;
  EXPECT_NE(json.find("\"command_line\": \"ppsearch \\\"quoted\\\"\\n\""), std::string::npos)
      << json;
}

TEST(TextResultWriter, NanIsEmptyInCsvAndNullInJson) {
  test::TempDir dir;
  ResultRow r{};
  r.gpus = 8;
  r.mfu = std::numeric_limits<double>::quiet_NaN();
  r.tokens_per_s = 0.1;  // 17 significant digits
  for (TextFormat f : {TextFormat::kCsv, TextFormat::kJson}) {
    const std::string path = dir.path() + (f == TextFormat::kCsv ? "/n.csv" : "/n.json");
    auto w = make_text_result_writer(path, false, f);
    w->write_candidates({r});
    w->commit(ResultMeta{});
    const std::string text = slurp(path);
    if (f == TextFormat::kCsv) {
      EXPECT_NE(text.find("\n8,0,0,0,0,0,0,0,0,gpipe,none,0,0,0,none,0,,0,0,0.10000000000000001,"),
                std::string::npos)
          << text;
    } else {
      EXPECT_NE(text.find("\"mfu\": null"), std::string::npos) << text;
      EXPECT_NE(text.find("\"tokens_per_s\": 0.10000000000000001"), std::string::npos) << text;
    }
  }
}

TEST(TextResultWriter, ExistingCompanionIsRefusedBeforeAnythingIsWritten) {
  test::TempDir dir;
  dir.write("r_best.csv", "keep\n");
  EXPECT_THROW(make_text_result_writer(dir.path() + "/r.csv", false, TextFormat::kCsv),
               OutputTargetError);
  EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"r_best.csv"}));
  EXPECT_EQ(slurp(dir.path() + "/r_best.csv"), "keep\n");
}

}  // namespace
}  // namespace ppsearch
