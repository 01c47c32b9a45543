// The compiled-in presets equal the files they were generated from. Built twice
// (tests/CMakeLists.txt): against configs/ and against tests/presets/fixtures/, whose files have
// awkward content (quotes, backslashes, raw-string delimiters, CRLF, UTF-8, an empty file, a
// space in a name) and files that must not be embedded (a subfolder, a non-.ini file).
// The expectations come from reading PPSEARCH_PRESETS_DIR at test time, not from the generator.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "ppsearch/io/presets.hpp"

namespace {

namespace fs = std::filesystem;

const fs::path kPresetsDir = PPSEARCH_PRESETS_DIR;

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The stems of <dir>/<kind>/*.ini (regular files, not recursive), sorted.
std::vector<std::string> stems_on_disk(std::string_view kind) {
  std::vector<std::string> stems;
  const fs::path dir = kPresetsDir / std::string(kind);
  if (!fs::is_directory(dir)) {
    return stems;
  }
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".ini") {
      stems.push_back(entry.path().stem().string());
    }
  }
  std::sort(stems.begin(), stems.end());
  return stems;
}

TEST(Presets, NamesMatchTheFilesOfEachKind) {
  for (std::string_view kind : ppsearch::kPresetKinds) {
    SCOPED_TRACE(std::string(kind));
    EXPECT_EQ(ppsearch::preset_names(kind), stems_on_disk(kind));
  }
}

TEST(Presets, TextIsTheFileByteForByte) {
  for (std::string_view kind : ppsearch::kPresetKinds) {
    for (const std::string& stem : stems_on_disk(kind)) {
      SCOPED_TRACE(std::string(kind) + "/" + stem);
      const ppsearch::Preset* preset = ppsearch::find_preset(kind, stem);
      ASSERT_NE(preset, nullptr);
      EXPECT_EQ(preset->name, std::string(kind) + "/" + stem);
      const std::string expected = read_bytes(kPresetsDir / std::string(kind) / (stem + ".ini"));
      EXPECT_EQ(preset->text.size(), expected.size());
      EXPECT_EQ(std::string(preset->text), expected);
    }
  }
}

TEST(Presets, UnknownKindsAndNamesAreNotFound) {
  EXPECT_TRUE(ppsearch::preset_names("no-such-kind").empty());
  EXPECT_TRUE(ppsearch::preset_names("").empty());
  EXPECT_EQ(ppsearch::find_preset("models", "no-such-preset"), nullptr);
  EXPECT_EQ(ppsearch::find_preset("models", ""), nullptr);
  EXPECT_EQ(ppsearch::find_preset("", "models"), nullptr);
  for (std::string_view kind : ppsearch::kPresetKinds) {
    for (const std::string& stem : ppsearch::preset_names(kind)) {
      SCOPED_TRACE(std::string(kind) + "/" + stem);
      // Only (kind, stem) finds it: not the full name, not a prefix, not with ".ini".
      EXPECT_EQ(ppsearch::find_preset("", std::string(kind) + "/" + stem), nullptr);
      EXPECT_EQ(ppsearch::find_preset(kind, stem + ".ini"), nullptr);
      EXPECT_EQ(ppsearch::find_preset(kind.substr(0, kind.size() - 1), stem), nullptr);
      if (stem.size() > 1) {
        EXPECT_EQ(ppsearch::find_preset(kind, stem.substr(0, stem.size() - 1)), nullptr);
      }
    }
  }
}

#if defined(PPSEARCH_PRESETS_FIXTURE)
// What the fixture folder holds, spelled out, so that the listing-based tests above cannot pass
// by both sides being empty.
TEST(PresetsFixture, AwkwardContentSurvives) {
  const ppsearch::Preset* tricky = ppsearch::find_preset("models", "tricky");
  ASSERT_NE(tricky, nullptr);
  const std::string_view text = tricky->text;
  for (std::string_view piece :
       {std::string_view(")\" )ppsearch\" R\"x(not a raw string)x\""),
        std::string_view("\\back\\slash\\"), std::string_view("?\?= ?\?/ ?\?)"),
        std::string_view("${VAR} @PRESET_COUNT@ $<TARGET_FILE:x> a;b;c"),
        std::string_view("\xc2\xb5s \xc2\xb1"), std::string_view("tab\there\r\ncrlf = yes\r\n")}) {
    EXPECT_NE(text.find(piece), std::string_view::npos) << piece;
  }
  EXPECT_EQ(text.substr(text.size() - 4), "true");  // no final newline added

  const ppsearch::Preset* empty = ppsearch::find_preset("searches", "empty");
  ASSERT_NE(empty, nullptr);
  EXPECT_TRUE(empty->text.empty());

  EXPECT_NE(ppsearch::find_preset("clusters", "with space"), nullptr);
  EXPECT_EQ(ppsearch::preset_names("models"), (std::vector<std::string>{"plain", "tricky"}));
  EXPECT_EQ(ppsearch::find_preset("models", "sub/nested"), nullptr);
  EXPECT_EQ(ppsearch::find_preset("models", "README"), nullptr);
}
#endif

}  // namespace
