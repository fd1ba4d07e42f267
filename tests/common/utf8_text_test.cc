// UTF-8 validity and boundary-respecting cuts (common/utf8_text.h), issue 24: a worker's text
// is made valid and cut on character boundaries at the source.
#include "common/utf8_text.h"

#include <gtest/gtest.h>

namespace ablate {
namespace {

const std::string kBlock = "\xe2\x96\x88";  // U+2588 '█', 3 bytes

TEST(Utf8Text, ValidityFollowsRfc3629) {
  EXPECT_TRUE(IsValidUtf8("plain ascii"));
  EXPECT_TRUE(IsValidUtf8(kBlock + "\xf0\x9f\x98\x80" + "\xc3\xa9"));
  EXPECT_FALSE(IsValidUtf8("\xff"));
  EXPECT_FALSE(IsValidUtf8("\x80"));              // a stray continuation byte
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // a surrogate
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // beyond U+10FFFF
  EXPECT_FALSE(IsValidUtf8(kBlock.substr(0, 2)));  // truncated
}

TEST(Utf8Text, InvalidBytesBecomeReplacementCharacters) {
  EXPECT_EQ(ValidUtf8("a\xff" "b"), "a\xef\xbf\xbd" "b");
  EXPECT_EQ(ValidUtf8(kBlock.substr(0, 2) + "x"), "\xef\xbf\xbd\xef\xbf\xbdx");
  EXPECT_EQ(ValidUtf8(kBlock), kBlock);
}

// The line: 2401 bytes of '█' cut at 2000 bytes must not end inside a character.
TEST(Utf8Text, CutsLandOnCharacterBoundaries) {
  std::string bar;
  while (bar.size() < 2401) bar += kBlock;
  std::string_view head = Utf8Head(bar, 2000);
  EXPECT_EQ(head.size(), 1998u);
  EXPECT_TRUE(IsValidUtf8(head));
  std::string_view tail = Utf8Tail(bar, 2000);
  EXPECT_EQ(tail.size(), 1998u);
  EXPECT_TRUE(IsValidUtf8(tail));
  EXPECT_EQ(Utf8Head("short", 2000), "short");
  EXPECT_EQ(Utf8Head(kBlock, 2), "");
}

}  // namespace
}  // namespace ablate
