// Text helpers: UTF-8 validation (RFC 3629) and clipping of echoed input in messages.
#include <gtest/gtest.h>

#include <string>

#include "ppsearch/util/text.hpp"

namespace ppsearch {
namespace {

TEST(Utf8, AcceptsWellFormedText) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("llama3-70b"));
  EXPECT_TRUE(is_valid_utf8("\xC2\xB5s"));             // µs, 2 bytes
  EXPECT_TRUE(is_valid_utf8("\xE2\x89\xA5 1"));        // ≥, 3 bytes
  EXPECT_TRUE(is_valid_utf8("\xF0\x9F\x98\x80"));      // U+1F600, 4 bytes
  EXPECT_TRUE(is_valid_utf8("\xF4\x8F\xBF\xBF"));      // U+10FFFF, the last code point
  EXPECT_TRUE(is_valid_utf8("\xEF\xBB\xBF[model]"));   // a byte-order mark is UTF-8
  EXPECT_TRUE(is_valid_utf8(std::string("a\0b", 3)));  // NUL is a character
}

TEST(Utf8, RejectsMalformedText) {
  EXPECT_FALSE(is_valid_utf8("\xFF\xFE"));          // never valid bytes
  EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));          // overlong '/'
  EXPECT_FALSE(is_valid_utf8("\xE0\x80\xAF"));      // overlong 3-byte
  EXPECT_FALSE(is_valid_utf8("\xED\xA0\x80"));      // UTF-16 surrogate U+D800
  EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // beyond U+10FFFF
  EXPECT_FALSE(is_valid_utf8("\xE2\x82"));          // truncated at the end
  EXPECT_FALSE(is_valid_utf8("\xE2\x82x"));         // continuation byte missing
  EXPECT_FALSE(is_valid_utf8("\x80"));              // lone continuation byte
  EXPECT_FALSE(is_valid_utf8("latin-1 \xB5s"));     // µ in Latin-1
}

// Every byte string of length ≤ 2 against the definition: one ASCII byte each, or one
// 2-byte sequence C2..DF followed by 80..BF.
TEST(Utf8, AllShortStringsMatchTheDefinition) {
  for (int a = 0; a < 256; ++a) {
    const std::string one(1, static_cast<char>(a));
    EXPECT_EQ(is_valid_utf8(one), a < 0x80) << a;
    for (int b = 0; b < 256; ++b) {
      const std::string two{static_cast<char>(a), static_cast<char>(b)};
      const bool want =
          (a < 0x80 && b < 0x80) || (a >= 0xC2 && a <= 0xDF && b >= 0x80 && b <= 0xBF);
      EXPECT_EQ(is_valid_utf8(two), want) << a << " " << b;
    }
  }
}

TEST(ClipForMessage, ShortTextIsUnchangedLongTextIsCutAtACharacter) {
  EXPECT_EQ(clip_for_message("model.layers", 120), "model.layers");
  const std::string k(1000000, 'k');
  const std::string c = clip_for_message(k, 120);
  EXPECT_EQ(c, std::string(120, 'k') + "… (1000000 bytes)");
  // 'µ' is 2 bytes: a cut inside it backs up to its first byte.
  std::string mu;
  for (int i = 0; i < 100; ++i) mu += "\xC2\xB5";
  const std::string m = clip_for_message(mu, 7);
  EXPECT_EQ(m, "\xC2\xB5\xC2\xB5\xC2\xB5… (200 bytes)");
  EXPECT_TRUE(is_valid_utf8(m));
}

}  // namespace
}  // namespace ppsearch
