#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>

#include "support/thread_group.hpp"

namespace ptdp::test {
namespace {

Tensor host(std::vector<float>& v) { return Tensor{v.data(), DType::F32, {static_cast<int64_t>(v.size())}, {}}; }
Tensor host(std::vector<int64_t>& v) { return Tensor{v.data(), DType::I64, {static_cast<int64_t>(v.size())}, {}}; }

TEST(ThreadGroup, AllReduceGivesEveryRankTheSameReduction) {
  ThreadGroup group(4, "tp");
  std::vector<std::vector<float>> sums(4), maxes(4);
  std::vector<std::vector<int64_t>> mins(4);
  run_ranks(group, [&](int r) {
    sums[r] = {float(r), 0.5f * r, 1.0f};
    maxes[r] = {float(r), -float(r)};
    mins[r] = {int64_t{10} - r, int64_t{1} << (40 + r)};
    group.rank(r)->all_reduce(host(sums[r]), ReduceOp::Sum);
    group.rank(r)->all_reduce(host(maxes[r]), ReduceOp::Max);
    group.rank(r)->all_reduce(host(mins[r]), ReduceOp::Min);
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(sums[r], (std::vector<float>{6.0f, 3.0f, 4.0f}));
    EXPECT_EQ(maxes[r], (std::vector<float>{3.0f, 0.0f}));
    EXPECT_EQ(mins[r], (std::vector<int64_t>{7, int64_t{1} << 40}));
  }
}

TEST(ThreadGroup, ReduceScatterAndAllGatherFollowRankOrder) {
  ThreadGroup group(3);
  std::vector<std::vector<float>> scattered(3), gathered(3);
  run_ranks(group, [&](int r) {
    std::vector<float> in(6);
    std::iota(in.begin(), in.end(), 10.0f * r);  // rank r: 10r .. 10r+5
    scattered[r].assign(2, 0.0f);
    group.rank(r)->reduce_scatter(host(in), host(scattered[r]), ReduceOp::Sum);
    std::vector<float> mine{float(r), float(r) + 0.5f};
    gathered[r].assign(6, 0.0f);
    group.rank(r)->all_gather(host(mine), host(gathered[r]));
  });
  for (int r = 0; r < 3; ++r) {
    // element i summed over ranks: 30 + 3i
    EXPECT_EQ(scattered[r], (std::vector<float>{30.0f + 6 * r, 33.0f + 6 * r}));
    EXPECT_EQ(gathered[r], (std::vector<float>{0, 0.5f, 1, 1.5f, 2, 2.5f}));
  }
}

TEST(ThreadGroup, BroadcastCopiesTheRootsBuffer) {
  ThreadGroup group(3);
  std::vector<std::vector<float>> bufs(3);
  run_ranks(group, [&](int r) {
    bufs[r] = {float(r), float(r * r)};
    group.rank(r)->broadcast(host(bufs[r]), 2);
  });
  for (int r = 0; r < 3; ++r) EXPECT_EQ(bufs[r], (std::vector<float>{2.0f, 4.0f}));
}

TEST(ThreadGroup, GroupedSendRecvAroundARingDoesNotDeadlockAndKeepsOrder) {
  ThreadGroup group(4, "pp", 5.0);
  std::vector<std::vector<float>> first(4), second(4);
  run_ranks(group, [&](int r) {
    Communicator* c = group.rank(r);
    const int right = (r + 1) % 4, left = (r + 3) % 4;
    std::vector<float> a{float(r)}, b{float(100 + r)};
    first[r].assign(1, -1.0f);
    second[r].assign(1, -1.0f);
    c->group_start();
    c->recv(host(first[r]), left, 7);  // posted before the sends: only legal inside a group
    c->recv(host(second[r]), left, 7);
    c->send(host(a), right, 7);
    c->send(host(b), right, 7);
    c->group_end();
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(first[r][0], float((r + 3) % 4));
    EXPECT_EQ(second[r][0], float(100 + (r + 3) % 4));
  }
}

TEST(ThreadGroup, SplitOrdersByKeyAndReducesWithinTheSubgroup) {
  ThreadGroup group(4);
  std::vector<int> sub_rank(4), sub_size(4);
  std::vector<std::string> names(4);
  std::vector<std::vector<float>> sums(4);
  run_ranks(group, [&](int r) {
    auto sub = group.rank(r)->split(r % 2, -r, "half" + std::to_string(r % 2));
    sub_rank[r] = sub->rank();
    sub_size[r] = sub->size();
    names[r] = sub->name();
    sums[r] = {float(r)};
    sub->all_reduce(host(sums[r]), ReduceOp::Sum);
    EXPECT_EQ(group.rank(r)->split(r == 0 ? 0 : -1, 0, "solo") == nullptr, r != 0);
  });
  EXPECT_EQ(sub_rank, (std::vector<int>{1, 1, 0, 0}));  // key -r: higher ranks first
  EXPECT_EQ(sub_size, (std::vector<int>{2, 2, 2, 2}));
  EXPECT_EQ(names[1], "half1");
  EXPECT_EQ(sums, (std::vector<std::vector<float>>{{2}, {4}, {2}, {4}}));
}

TEST(ThreadGroup, MismatchedCollectivesAreReported) {
  ThreadGroup group(2, "tp");
  std::vector<float> v{1.0f, 2.0f};
  try {
    run_ranks(group, [&](int r) {
      std::vector<float> mine = v;
      if (r == 0)
        group.rank(r)->all_reduce(host(mine), ReduceOp::Sum);
      else
        group.rank(r)->barrier();
    });
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("was matched with"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'tp'"), std::string::npos) << e.what();
  }
}

TEST(ThreadGroup, AMissingRankTimesOutNamingIt) {
  ThreadGroup group(3, "dp", 0.2);
  try {
    run_ranks(group, [&](int r) {
      if (r != 2) group.rank(r)->barrier();
    });
    FAIL() << "expected a timeout";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ranks 2"), std::string::npos) << e.what();
  }
}

TEST(ThreadGroup, AFailingRankAbortsTheOthersPromptly) {
  ThreadGroup group(3, "world", 30.0);
  const auto start = std::chrono::steady_clock::now();
  try {
    run_ranks(group, [&](int r) {
      if (r == 1) throw Error("rank 1 broke");
      auto sub = group.rank(r)->split(0, r, "sub");  // ranks 0 and 2 wait for rank 1 here
    });
    FAIL() << "expected the failure";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "rank 1 broke");
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  std::vector<float> v{1.0f};
  EXPECT_THROW(group.rank(0)->send(host(v), 1, 0), Error);  // stays aborted
}

TEST(ThreadGroup, BadArgumentsAreRefused) {
  ThreadGroup group(2);
  std::vector<float> one{1.0f}, two{1.0f, 2.0f};
  EXPECT_THROW(group.rank(0)->send(host(one), 5, 0), Error);
  Tensor bf16{one.data(), DType::BF16, {2}, {}};
  EXPECT_THROW(group.rank(0)->all_reduce(bf16, ReduceOp::Sum), Error);
  EXPECT_THROW(group.rank(0)->all_gather(host(one), host(one)), Error);
  EXPECT_THROW(group.rank(0)->group_end(), Error);
  EXPECT_THROW(group.rank(0)->init(CommInit{1, 2, nullptr, "", 1.0}), Error);
  EXPECT_THROW(ThreadGroup(0), Error);
  group.rank(0)->send(host(two), 1, 3);
  try {
    group.rank(1)->recv(host(one), 0, 3);
    FAIL() << "expected a size error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("got 8 bytes into a buffer of 4"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ptdp::test
