// Cluster slot computation against values Redis itself reports.
#include <gtest/gtest.h>

#include "transport/crc16.h"

using polylimit::key_slot;

TEST(Crc16, XmodemCheckValue) { EXPECT_EQ(polylimit::crc16_xmodem("123456789"), 0x31C3); }

TEST(Crc16, KnownSlots) {
  EXPECT_EQ(key_slot("foo"), 12182);
  EXPECT_EQ(key_slot("bar"), 5061);
  EXPECT_EQ(key_slot(""), 0);
}

TEST(Crc16, HashTags) {
  EXPECT_EQ(key_slot("{user1000}.following"), key_slot("user1000"));
  EXPECT_EQ(key_slot("{user1000}.followers"), key_slot("{user1000}.following"));
  EXPECT_EQ(key_slot("foo{}{bar}"), key_slot("foo{}{bar}"));  // empty tag: whole key
  EXPECT_NE(key_slot("foo{}{bar}"), key_slot("bar"));
  EXPECT_EQ(key_slot("foo{{bar}}zap"), key_slot("{bar"));  // first '{' to first '}'
  EXPECT_EQ(key_slot("foo{bar}{zap}"), key_slot("bar"));
  EXPECT_EQ(key_slot("no}tag{"), key_slot("no}tag{"));
  EXPECT_EQ(polylimit::hash_tag("a{b}c"), "b");
  EXPECT_EQ(polylimit::hash_tag("a{}c"), "a{}c");
  EXPECT_EQ(polylimit::hash_tag("a{bc"), "a{bc");
}
