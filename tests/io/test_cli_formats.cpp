// The result format (--format, the --output extension) and the sizing options (--tokens,
// --price-per-gpu-hour) of cli/options.cpp: docs/results.md "CSV and JSON" and
// docs/configuration.md "Token budget and price".
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ppsearch/cli/options.hpp"

namespace ppsearch {
namespace {

CliOutcome parse(std::vector<std::string> args) {
  args.insert(args.begin(), {"--gpus", "128"});
  return parse_command_line(args);
}

TEST(CliFormats, ExtensionChoosesTheFormat) {
  EXPECT_EQ(format_from_extension("r.h5"), "hdf5");
  EXPECT_EQ(format_from_extension("dir/r.HDF5"), "hdf5");
  EXPECT_EQ(format_from_extension("r.csv"), "csv");
  EXPECT_EQ(format_from_extension("r.Json"), "json");
  EXPECT_EQ(format_from_extension("r.txt"), "");
  EXPECT_EQ(format_from_extension("r"), "");
  EXPECT_EQ(format_from_extension("dir.csv/r"), "");  // the folder's extension does not count
  EXPECT_EQ(format_from_extension("r.csv.gz"), "");
}

TEST(CliFormats, RequestCarriesTheFormat) {
  CliOutcome out = parse({"--output", "a.csv"});
  ASSERT_TRUE(out.run) << out.text;
  EXPECT_EQ(out.request.format, "csv");
  out = parse({"--output", "a.txt"});  // refused by main after it has looked at the target
  ASSERT_TRUE(out.run) << out.text;
  EXPECT_EQ(out.request.format, "");
  EXPECT_EQ(unknown_format_text("a.txt"),
            "ppsearch: error: --output: a.txt: a name ending in .h5 or .hdf5 (HDF5), .csv (CSV) "
            "or .json (JSON), or give the format with --format hdf5|csv|json\n");
  out = parse({"--output", "a.txt", "--format", "json"});
  ASSERT_TRUE(out.run) << out.text;
  EXPECT_EQ(out.request.format, "json");
  EXPECT_EQ(out.request.output_path, "a.txt");
  // Without --output the default name takes the format's extension.
  out = parse({"--format", "csv"});
  ASSERT_TRUE(out.run) << out.text;
  EXPECT_EQ(out.request.output_path, "results/llama3-70b_h200-16gpu-ib_128.csv");
  out = parse({});
  ASSERT_TRUE(out.run) << out.text;
  EXPECT_EQ(out.request.format, "hdf5");
  EXPECT_EQ(out.request.output_path, "results/llama3-70b_h200-16gpu-ib_128.h5");
}

TEST(CliFormats, UnknownFormatIsAUsageError) {
  const CliOutcome out = parse({"--format", "xml"});
  EXPECT_FALSE(out.run);
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_EQ(out.text, "ppsearch: error: --format: xml: one of hdf5, csv or json\n");
}

TEST(CliFormats, TokensAndPriceSetTheirKeys) {
  CliOutcome out = parse({"--tokens", "300B", "--price-per-gpu-hour", "2.5"});
  ASSERT_TRUE(out.run) << out.text;
  EXPECT_DOUBLE_EQ(out.request.problem.training.tokens, 300e9);
  EXPECT_DOUBLE_EQ(out.request.problem.cluster.price_per_gpu_hour, 2.5);
  out = parse({"--tokens", "-3T"});
  EXPECT_FALSE(out.run);
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_NE(out.text.find("--tokens: training.tokens = -3T: a number in [0, 1e18]"),
            std::string::npos)
      << out.text;
}

}  // namespace
}  // namespace ppsearch
