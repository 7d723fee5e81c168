#include "tag_layout.hpp"

#include <gtest/gtest.h>

namespace ptdp::comm_ucx {
namespace {

bool matches(uint64_t message, uint64_t wanted, uint64_t mask) { return (message & mask) == (wanted & mask); }

TEST(TagLayout, FieldsDoNotOverlap) {
  const uint64_t tag = make_tag(0x1234, 0xabcd, true, 0x7654321);
  EXPECT_EQ(tag >> 48, 0x1234u);
  EXPECT_EQ(tag_sender(tag), 0xabcd);
  EXPECT_EQ((tag >> 31) & 1, 1u);
  EXPECT_EQ(tag & kMaxUserTag, 0x7654321u);
  EXPECT_EQ(tag_sender(make_tag(kMaxCommId, kMaxWorldSize - 1, false, kMaxUserTag)), kMaxWorldSize - 1);
}

TEST(TagLayout, EveryFieldSeparatesMessages) {
  const uint64_t base = make_tag(3, 5, false, 9);
  EXPECT_NE(base, make_tag(4, 5, false, 9)) << "communicator";
  EXPECT_NE(base, make_tag(3, 6, false, 9)) << "sender";
  EXPECT_NE(base, make_tag(3, 5, true, 9)) << "collective vs user";
  EXPECT_NE(base, make_tag(3, 5, false, 10)) << "user tag";
}

TEST(TagLayout, SequenceNumbersWrapInsideTheirField) {
  EXPECT_EQ(make_tag(1, 2, true, 0x80000005u), make_tag(1, 2, true, 5));
}

TEST(TagLayout, NoticeReceiveMatchesAnySenderOnly) {
  const uint64_t notice = make_tag(kNoticeComm, 0, false, 0);
  EXPECT_TRUE(matches(make_tag(kNoticeComm, 7, false, 0), notice, kAnySenderMask));
  EXPECT_TRUE(matches(make_tag(kNoticeComm, 65535, false, 0), notice, kAnySenderMask));
  EXPECT_FALSE(matches(make_tag(0, 7, false, 0), notice, kAnySenderMask));
  EXPECT_FALSE(matches(make_tag(kMaxCommId, 7, true, 0), notice, kAnySenderMask));
  EXPECT_FALSE(matches(make_tag(kNoticeComm, 7, false, 1), notice, kAnySenderMask));
}

}  // namespace
}  // namespace ptdp::comm_ucx
