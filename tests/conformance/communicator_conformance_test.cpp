// The Communicator conformance suite: every communicator plugin must pass it. Each test runs
// as every rank of a small job (one process per rank) bootstrapped through the TCP store, and
// compares results with a reference computed locally.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <regex>
#include <thread>

#include "communicator_under_test.hpp"
#include "launch/socket_io.hpp"
#include "launch/tcp_store.hpp"
#include "ptdp/float16_bits.hpp"
#include "rank_processes.hpp"
#include "test_memory.hpp"

namespace ptdp::conformance {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr size_t kSizes[] = {1, 7, 1023, 65536};
constexpr size_t kLarge = size_t{4} << 20;
constexpr ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min};

const char* op_name(ReduceOp op) { return op == ReduceOp::Sum ? "sum" : op == ReduceOp::Max ? "max" : "min"; }

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// What a rank's test body works with.
struct Rank {
  int rank;
  int world;
  Communicator& comm;
  TestMemory& memory;
};

void require(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}

// ---- values and references ---------------------------------------------------------------

// Small integers (exact in f32 and bf16 sums over any group here), different per rank, element
// and call; i64 values also use the high 32 bits.
template <class T>
T value_at(int world_rank, size_t i, int salt) {
  const int small = static_cast<int>((static_cast<size_t>(world_rank) * 131 + i * 17 + static_cast<size_t>(salt) * 7) % 61) - 30;
  if constexpr (std::is_same_v<T, uint16_t>) return float_to_bf16(static_cast<float>(small));
  else if constexpr (std::is_same_v<T, F16Bits>) return F16Bits{ptdp::float_to_f16(static_cast<float>(small))};
  else if constexpr (std::is_same_v<T, int64_t>) return small * (int64_t{1} << 33) + world_rank;
  else return static_cast<T>(small);
}

template <class T>
std::vector<T> values(int world_rank, size_t count, int salt) {
  std::vector<T> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = value_at<T>(world_rank, i, salt);
  return v;
}

template <class T>
T combine(T a, T b, ReduceOp op) {
  if constexpr (std::is_same_v<T, uint16_t>) {
    return float_to_bf16(combine(bf16_to_float(a), bf16_to_float(b), op));
  } else if constexpr (std::is_same_v<T, F16Bits>) {
    return F16Bits{ptdp::float_to_f16(combine(ptdp::f16_to_float(a.bits), ptdp::f16_to_float(b.bits), op))};
  } else {
    return op == ReduceOp::Sum ? static_cast<T>(a + b) : op == ReduceOp::Max ? std::max(a, b) : std::min(a, b);
  }
}

template <class T>
std::vector<T> reference(const std::vector<int>& members, size_t count, int salt, ReduceOp op) {
  std::vector<T> want = values<T>(members[0], count, salt);
  for (size_t m = 1; m < members.size(); ++m)
    for (size_t i = 0; i < count; ++i) want[i] = combine(want[i], value_at<T>(members[m], i, salt), op);
  return want;
}

template <class T>
std::string show(T v) {
  if constexpr (std::is_same_v<T, uint16_t>) return std::to_string(bf16_to_float(v)) + " (bf16)";
  else if constexpr (std::is_same_v<T, F16Bits>) return std::to_string(ptdp::f16_to_float(v.bits)) + " (f16)";
  else return std::to_string(v);
}

template <class T>
void require_equal(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  require(got.size() == want.size(), what + ": " + std::to_string(got.size()) + " elements, expected " +
                                         std::to_string(want.size()));
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i])
      throw std::runtime_error(what + ": element " + std::to_string(i) + " is " + show(got[i]) + ", expected " +
                               show(want[i]));
}

// ---- groups -------------------------------------------------------------------------------

struct Group {
  std::shared_ptr<Communicator> comm;
  std::vector<int> members;  // world rank of each group rank
};

// Splits the world into its first g ranks and the rest. Groups of even g are ordered backwards
// by key, which checks that the key, not the world rank, decides the order.
Group split_first(Rank& r, int g) {
  const bool backwards = g % 2 == 0;
  const int color = r.rank < g ? 0 : 1;
  const std::string name = "first" + std::to_string(g) + (color ? "-rest" : "");
  Group group;
  group.comm = r.comm.split(color, backwards ? -r.rank : r.rank, name);
  for (int w = 0; w < r.world; ++w)
    if ((w < g ? 0 : 1) == color) group.members.push_back(w);
  if (backwards) std::reverse(group.members.begin(), group.members.end());
  const auto me = std::find(group.members.begin(), group.members.end(), r.rank) - group.members.begin();
  require(group.comm != nullptr, "split returned no communicator for color " + std::to_string(color));
  require(group.comm->size() == static_cast<int>(group.members.size()),
          name + ": size " + std::to_string(group.comm->size()) + ", expected " + std::to_string(group.members.size()));
  require(group.comm->rank() == me, name + ": rank " + std::to_string(group.comm->rank()) + ", expected " + std::to_string(me));
  require(group.comm->name() == name, "split named the group '" + group.comm->name() + "', expected '" + name + "'");
  return group;
}

// The whole world as a group, in rank order.
Group whole(Rank& r) {
  Group group;
  group.comm = r.comm.split(0, 0, "all");
  for (int w = 0; w < r.world; ++w) group.members.push_back(w);
  require(group.comm->size() == r.world && group.comm->rank() == r.rank, "split of the whole world");
  return group;
}

std::string where(const Group& g, const std::string& op, size_t count) {
  return g.comm->name() + " " + op + " of " + std::to_string(count);
}

// ---- the fixture --------------------------------------------------------------------------

class CommunicatorConformance : public ::testing::TestWithParam<CommunicatorUnderTest> {
 protected:
  void SetUp() override {
    if (!GetParam().cannot_run_here.empty()) GTEST_SKIP() << GetParam().name << ": " << GetParam().cannot_run_here;
  }
  int world() const { return GetParam().world_size; }

  // Runs body as every rank: each creates its communicator, binds it and joins the world first.
  std::vector<RankOutcome> run_ranks_raw(const std::function<void(Rank&)>& body, double timeout_s,
                                         std::chrono::seconds limit) {
    const CommunicatorUnderTest& under_test = GetParam();
    const int port = net::pick_free_port();
    const auto store_timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
    return run_ranks(under_test.world_size, limit, [&](int rank) {
      TcpStore store("127.0.0.1", port, rank, under_test.world_size, std::max(store_timeout, 10000ms));
      std::shared_ptr<Communicator> comm = under_test.create();
      std::unique_ptr<TestMemory> memory = memory_for(under_test.memory, rank);
      comm->init(CommInit{rank, under_test.world_size, &store, "conformance", timeout_s, memory->device()});
      comm->bind_stream(memory->stream());
      Rank r{rank, under_test.world_size, *comm, *memory};
      body(r);
    });
  }

  void run(const std::function<void(Rank&)>& body, double timeout_s = 30, std::chrono::seconds limit = 150s) {
    const std::vector<RankOutcome> outcomes = run_ranks_raw(body, timeout_s, limit);
    for (const RankOutcome& o : outcomes) EXPECT_EQ(o.error, "") << "rank " << o.rank;
  }
};

TEST_P(CommunicatorConformance, AllReduceMatchesReferenceForEveryGroupSize) {
  run([](Rank& r) {
    for (int g = 1; g <= r.world; ++g) {
      Group group = split_first(r, g);
      int salt = 0;
      for (ReduceOp op : kOps)
        for (size_t count : kSizes) {
          Buffer<float> buffer(r.memory, values<float>(r.rank, count, g * 100 + ++salt));
          group.comm->all_reduce(buffer.tensor(), op);
          require_equal(buffer.download(), reference<float>(group.members, count, g * 100 + salt, op),
                        where(group, std::string("all_reduce ") + op_name(op), count));
        }
    }
  });
}

TEST_P(CommunicatorConformance, AllReduceLargeBuffers) {
  run([](Rank& r) {
    for (int g : {r.world, std::min(5, r.world)}) {
      Group group = split_first(r, g);
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max}) {
        Buffer<float> buffer(r.memory, values<float>(r.rank, kLarge, g + static_cast<int>(op)));
        group.comm->all_reduce(buffer.tensor(), op);
        require_equal(buffer.download(), reference<float>(group.members, kLarge, g + static_cast<int>(op), op),
                      where(group, std::string("all_reduce ") + op_name(op), kLarge));
      }
    }
  });
}

template <class T>
void all_reduce_world(Rank& r, const Group& world, const char* type) {
  int salt = 0;
  for (ReduceOp op : kOps)
    for (size_t count : {size_t{1}, size_t{1023}, size_t{65536}}) {
      Buffer<T> buffer(r.memory, values<T>(r.rank, count, ++salt));
      world.comm->all_reduce(buffer.tensor(), op);
      require_equal(buffer.download(), reference<T>(world.members, count, salt, op),
                    where(world, std::string("all_reduce ") + op_name(op) + " " + type, count));
    }
}

TEST_P(CommunicatorConformance, AllReduceIntegersAnd16BitFloats) {
  run([](Rank& r) {
    Group world = whole(r);
    all_reduce_world<int32_t>(r, world, "i32");
    all_reduce_world<int64_t>(r, world, "i64");
    all_reduce_world<uint16_t>(r, world, "bf16");
    all_reduce_world<F16Bits>(r, world, "f16");
  });
}

TEST_P(CommunicatorConformance, ReduceScatterMatchesReference) {
  run([](Rank& r) {
    for (int g : {r.world, std::min(3, r.world), 1}) {
      Group group = split_first(r, g);
      const size_t n = group.members.size(), me = static_cast<size_t>(group.comm->rank());
      int salt = 0;
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Min})
        for (size_t count : kSizes) {
          ++salt;
          Buffer<float> input(r.memory, values<float>(r.rank, n * count, salt));
          Buffer<float> output(r.memory, count);
          group.comm->reduce_scatter(input.tensor(), output.tensor(), op);
          const std::vector<float> all = reference<float>(group.members, n * count, salt, op);
          require_equal(output.download(),
                        std::vector<float>(all.begin() + static_cast<std::ptrdiff_t>(me * count),
                                           all.begin() + static_cast<std::ptrdiff_t>((me + 1) * count)),
                        where(group, std::string("reduce_scatter ") + op_name(op), count));
        }
    }
    // In place: the output is this rank's block of the input (the distributed optimizer's bucket).
    Group world = whole(r);
    const size_t n = world.members.size(), count = 1023, me = static_cast<size_t>(world.comm->rank());
    Buffer<float> buffer(r.memory, values<float>(r.rank, n * count, 78));
    world.comm->reduce_scatter(buffer.tensor(), buffer.tensor().flat_slice(static_cast<int64_t>(me * count), count),
                               ReduceOp::Sum);
    const std::vector<float> all = reference<float>(world.members, n * count, 78, ReduceOp::Sum), got = buffer.download();
    require_equal(std::vector<float>(got.begin() + static_cast<std::ptrdiff_t>(me * count),
                                     got.begin() + static_cast<std::ptrdiff_t>((me + 1) * count)),
                  std::vector<float>(all.begin() + static_cast<std::ptrdiff_t>(me * count),
                                     all.begin() + static_cast<std::ptrdiff_t>((me + 1) * count)),
                  "in-place reduce_scatter of 1023");
  });
}

TEST_P(CommunicatorConformance, AllGatherInRankOrder) {
  run([](Rank& r) {
    for (int g : {r.world, std::min(3, r.world), 1, std::min(2, r.world)}) {
      Group group = split_first(r, g);
      const size_t n = group.members.size();
      int salt = 0;
      for (size_t count : kSizes) {
        ++salt;
        Buffer<float> input(r.memory, values<float>(r.rank, count, salt));
        Buffer<float> output(r.memory, n * count);
        group.comm->all_gather(input.tensor(), output.tensor());
        std::vector<float> want;
        for (int m : group.members) {
          const std::vector<float> part = values<float>(m, count, salt);
          want.insert(want.end(), part.begin(), part.end());
        }
        require_equal(output.download(), want, where(group, "all_gather", count));
      }
    }
    // In place: the input is this rank's block of the output.
    Group world = whole(r);
    const size_t count = 1023, me = static_cast<size_t>(world.comm->rank());
    std::vector<float> start(world.members.size() * count, -99.0f), want;
    const std::vector<float> mine = values<float>(r.rank, count, 77);
    std::copy(mine.begin(), mine.end(), start.begin() + static_cast<std::ptrdiff_t>(me * count));
    Buffer<float> output(r.memory, start);
    world.comm->all_gather(output.tensor().flat_slice(static_cast<int64_t>(me * count), count), output.tensor());
    for (int m : world.members) {
      const std::vector<float> part = values<float>(m, count, 77);
      want.insert(want.end(), part.begin(), part.end());
    }
    require_equal(output.download(), want, "in-place all_gather of 1023");
  });
}

TEST_P(CommunicatorConformance, BroadcastFromEveryRoot) {
  run([](Rank& r) {
    auto check = [&](const Group& group, int root, size_t count, int salt) {
      const int root_world = group.members[static_cast<size_t>(root)];
      Buffer<float> buffer(r.memory, r.rank == root_world ? values<float>(r.rank, count, salt)
                                                          : std::vector<float>(count, -99.0f));
      group.comm->broadcast(buffer.tensor(), root);
      require_equal(buffer.download(), values<float>(root_world, count, salt),
                    where(group, "broadcast from " + std::to_string(root), count));
    };
    Group world = whole(r);
    for (int root = 0; root < r.world; ++root)
      for (size_t count : {size_t{1}, size_t{1023}, size_t{65536}}) check(world, root, count, root);
    check(world, r.world - 1, kLarge, 99);
    Group part = split_first(r, std::min(3, r.world));
    check(part, std::min(1, part.comm->size() - 1), 65536, 5);
    check(part, 0, 7, 6);
  });
}

TEST_P(CommunicatorConformance, GroupedRingExchangeInBothDirections) {
  run([](Rank& r) {
    for (int g : {r.world, std::min(3, r.world)}) {
      Group group = split_first(r, g);
      const int n = group.comm->size(), me = group.comm->rank();
      const int right = (me + 1) % n, left = (me + n - 1) % n;
      for (size_t count : {size_t{5}, size_t{1} << 20}) {
        // Salt 1 travels rightwards, salt 2 leftwards.
        Buffer<float> to_right(r.memory, values<float>(r.rank, count, 1));
        Buffer<float> to_left(r.memory, values<float>(r.rank, count, 2));
        Buffer<float> from_left(r.memory, count), from_right(r.memory, count);
        group.comm->group_start();
        group.comm->send(to_right.tensor(), right, 0);
        group.comm->send(to_left.tensor(), left, 0);
        group.comm->recv(from_left.tensor(), left, 0);
        group.comm->recv(from_right.tensor(), right, 0);
        group.comm->group_end();
        const int left_world = group.members[static_cast<size_t>(left)];
        const int right_world = group.members[static_cast<size_t>(right)];
        require_equal(from_left.download(), values<float>(left_world, count, 1), where(group, "recv from left", count));
        require_equal(from_right.download(), values<float>(right_world, count, 2), where(group, "recv from right", count));
      }
    }
  });
}

TEST_P(CommunicatorConformance, TagsAndCommunicatorsKeepMessagesApart) {
  if (world() < 2) GTEST_SKIP() << "needs two ranks";
  const bool by_tag = GetParam().has(CommCapability::MatchesTags);
  run([by_tag](Rank& r) {
    std::shared_ptr<Communicator> twin = r.comm.split(0, r.rank, "twin");  // same ranks, other messages
    const size_t count = 33;
    auto payload = [&](int salt) { return values<float>(0, count, salt); };
    if (r.rank == 0) {
      Buffer<float> a(r.memory, payload(1)), b(r.memory, payload(2)), c(r.memory, payload(3)), d(r.memory, payload(4));
      Buffer<float> e(r.memory, payload(5)), f(r.memory, payload(6));
      r.comm.group_start();
      r.comm.send(a.tensor(), 1, 5);
      r.comm.send(b.tensor(), 1, 9);
      r.comm.send(c.tensor(), 1, 3);
      r.comm.send(d.tensor(), 1, 3);
      r.comm.send(e.tensor(), 1, 1);
      r.comm.group_end();
      twin->send(f.tensor(), 1, 1);
      r.memory.synchronize();
    } else if (r.rank == 1 && by_tag) {
      // Every receive is posted before any message is matched, in an order unlike the sends':
      // the twin's first although its message goes last, tag 9 before tag 5, and a world tag 1
      // beside the twin's. A send may wait for its receive, so nothing here may wait for a
      // message sent after it.
      std::vector<std::unique_ptr<Buffer<float>>> got;
      auto post = [&](Communicator& comm, int tag) {
        got.push_back(std::make_unique<Buffer<float>>(r.memory, count));
        comm.recv(got.back()->tensor(), 0, tag);
      };
      twin->group_start();
      post(*twin, 1);
      r.comm.group_start();
      for (int tag : {9, 5, 3, 3, 1}) post(r.comm, tag);
      r.comm.group_end();
      twin->group_end();
      const std::pair<int, const char*> want[] = {{6, "twin tag 1 (posted first, sent last)"},
                                                  {2, "tag 9 (posted before tag 5, sent after it)"},
                                                  {1, "tag 5"},
                                                  {3, "first message of tag 3"},
                                                  {4, "second message of tag 3"},
                                                  {5, "world tag 1, not the twin's"}};
      for (size_t i = 0; i < got.size(); ++i) require_equal(got[i]->download(), payload(want[i].first), want[i].second);
    } else if (r.rank == 1) {
      Buffer<float> got(r.memory, count);
      auto expect = [&](Communicator& comm, int tag, int salt, const std::string& what) {
        comm.recv(got.tensor(), 0, tag);
        require_equal(got.download(), payload(salt), what);
      };
      for (auto [tag, salt] : {std::pair{5, 1}, {9, 2}, {3, 3}, {3, 4}, {1, 5}})
        expect(r.comm, tag, salt, "message " + std::to_string(salt) + " in order");
      expect(*twin, 1, 6, "twin tag 1");
    }
    r.comm.barrier();
  });
}

TEST_P(CommunicatorConformance, BarrierWaitsForEveryRank) {
  // Entry and exit times of every rank, in memory the rank processes share with this one.
  const size_t bytes = 2 * sizeof(double) * static_cast<size_t>(world());
  void* shared = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(shared, MAP_FAILED);
  auto* times = static_cast<double*>(shared);
  const auto now = [] { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); };
  run([&](Rank& r) {
    std::this_thread::sleep_for(std::chrono::milliseconds(40 * r.rank));
    times[2 * r.rank] = now();
    r.comm.barrier();
    times[2 * r.rank + 1] = now();
    Group part = split_first(r, std::min(3, r.world));
    part.comm->barrier();
  });
  double last_entry = 0, first_exit = 1e300;
  for (int rank = 0; rank < world(); ++rank) {
    last_entry = std::max(last_entry, times[2 * rank]);
    first_exit = std::min(first_exit, times[2 * rank + 1]);
  }
  EXPECT_GE(first_exit, last_entry) << "a rank left the barrier before the last one entered it";
  ::munmap(shared, bytes);
}

TEST_P(CommunicatorConformance, SplitOrdersByKeyAndNests) {
  run([](Rank& r) {
    std::shared_ptr<Communicator> parity = r.comm.split(r.rank % 2, -r.rank, "parity");
    std::vector<int32_t> members;  // same parity, descending
    for (int w = r.world - 1; w >= 0; --w)
      if (w % 2 == r.rank % 2) members.push_back(w);
    require(parity->name() == "parity", "name '" + parity->name() + "'");
    require(parity->size() == static_cast<int>(members.size()), "parity group size " + std::to_string(parity->size()));
    Buffer<int32_t> mine(r.memory, std::vector<int32_t>{r.rank});
    Buffer<int32_t> gathered(r.memory, members.size());
    parity->all_gather(mine.tensor(), gathered.tensor());
    require_equal(gathered.download(), members, "world ranks of the parity group in group order");

    // Split again, ties in key broken by rank in the parity group.
    const int half = parity->rank() < (parity->size() + 1) / 2 ? 0 : 1;
    std::shared_ptr<Communicator> quarter = parity->split(half, 0, "quarter");
    std::vector<int32_t> quarter_members;
    for (size_t i = 0; i < members.size(); ++i)
      if ((static_cast<int>(i) < (parity->size() + 1) / 2 ? 0 : 1) == half) quarter_members.push_back(members[i]);
    Buffer<int32_t> sum(r.memory, std::vector<int32_t>{r.rank});
    quarter->all_reduce(sum.tensor(), ReduceOp::Sum);
    int32_t want = 0;
    for (int32_t m : quarter_members) want += m;
    require_equal(sum.download(), std::vector<int32_t>{want}, "sum of world ranks over the quarter group");
    require(quarter->size() == static_cast<int>(quarter_members.size()), "quarter group size");
  });
}

TEST_P(CommunicatorConformance, RankThatDiesStopsEveryOtherRank) {
  if (world() < 2) GTEST_SKIP() << "needs two ranks";
  const int victim = world() > 3 ? 3 : world() - 1;
  const bool names_peer = GetParam().has(CommCapability::NamesDeadPeer);
  constexpr double kTimeout = 3;
  constexpr double kSlack = 6;  // process teardown and a loaded machine
  const std::vector<RankOutcome> outcomes = run_ranks_raw(
      [&](Rank& r) {
        const size_t count = size_t{1} << 20;
        Buffer<float> buffer(r.memory, values<float>(r.rank, count, 1));
        r.comm.all_reduce(buffer.tensor(), ReduceOp::Sum);  // everyone connected and healthy
        if (r.rank == victim)
          std::thread([] {
            std::this_thread::sleep_for(100ms);
            ::_exit(1);  // in the middle of a collective, without any goodbye
          }).detach();
        const auto start = Clock::now();
        std::string message;
        try {
          for (int i = 0; i < 1000000; ++i) {
            r.comm.all_reduce(buffer.tensor(), ReduceOp::Max);
            buffer.download();
          }
        } catch (const std::exception& e) {
          message = e.what();
        }
        const double waited = seconds_since(start);
        require(r.rank != victim, "the rank meant to die is still alive");
        require(!message.empty(), "all_reduce kept succeeding after rank " + std::to_string(victim) + " died");
        const std::regex names_victim("(peer|rank) " + std::to_string(victim) + "\\b");
        require(!names_peer || std::regex_search(message, names_victim),
                "the error does not name rank " + std::to_string(victim) + ": " + message);
        require(waited < kTimeout + kSlack, "stopped only after " + std::to_string(waited) + " s: " + message);
      },
      kTimeout, 60s);
  for (const RankOutcome& o : outcomes) {
    if (o.rank == victim) {
      EXPECT_TRUE(o.finished && o.exit_code == 1) << "victim: " << o.error;
    } else {
      EXPECT_EQ(o.error, "") << "rank " << o.rank;
      EXPECT_TRUE(o.finished) << "rank " << o.rank;
    }
  }
}

// Runs `calls` and returns what they threw ("" when nothing). A communicator that enqueues work
// reports failures at the latest when its stream is synchronized or at its next call.
template <class F>
std::string failure_of(F&& calls) {
  try {
    calls();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST_P(CommunicatorConformance, AbortFromAnotherThreadStopsPendingCalls) {
  if (world() < 2) GTEST_SKIP() << "needs two ranks (the pending call waits for a peer)";
  constexpr double kTimeout = 10;
  run(
      [&](Rank& r) {
        Buffer<float> buffer(r.memory, 16);
        std::string message;
        const auto start = Clock::now();
        if (r.rank == 0) {
          std::thread aborter([&] {
            std::this_thread::sleep_for(300ms);
            r.comm.abort("stop requested by the test");
          });
          message = failure_of([&] {
            r.comm.recv(buffer.tensor(), (r.rank + 1) % r.world, 77);  // never sent
            buffer.download();
            r.comm.barrier();
          });
          aborter.join();
          require(message.find("stop requested by the test") != std::string::npos, "abort reason missing: " + message);
          require(seconds_since(start) < 3, "abort took " + std::to_string(seconds_since(start)) + " s");
          const auto later = Clock::now();
          require(!failure_of([&] { r.comm.barrier(); }).empty(), "a call after abort() succeeded");
          require(seconds_since(later) < 2, "a call after abort() took " + std::to_string(seconds_since(later)) + " s");
        } else {
          message = failure_of([&] { r.comm.barrier(); });  // rank 0 never joins
          require(!message.empty(), "barrier completed without rank 0");
          require(seconds_since(start) < kTimeout + 5, "barrier failed only after " + std::to_string(seconds_since(start)) + " s");
        }
      },
      kTimeout);
}

TEST_P(CommunicatorConformance, SilentPeerTimesOutNamingIt) {
  if (world() < 2) GTEST_SKIP() << "needs two ranks";
  constexpr double kTimeout = 1.5;
  run(
      [&](Rank& r) {
        Buffer<float> buffer(r.memory, 16);
        const auto start = Clock::now();
        if (r.rank == 1) std::this_thread::sleep_for(2500ms);  // silent past rank 0's timeout
        const std::string message = failure_of([&] {
          if (r.rank == 0) {
            r.comm.recv(buffer.tensor(), 1, 5);
            buffer.download();
          }
          r.comm.barrier();
        });
        const double waited = seconds_since(start);
        require(!message.empty(), "no failure although rank 1 never sent and rank 0 never entered the barrier");
        if (r.rank == 0) {
          require(std::regex_search(message, std::regex("(peer|rank) 1\\b")), "the error does not name peer 1: " + message);
          require(waited >= kTimeout * 0.9 && waited < kTimeout + 4,
                  "timed out after " + std::to_string(waited) + " s, configured " + std::to_string(kTimeout));
        } else {
          require(waited < 2.5 + kTimeout + 4, "failed only after " + std::to_string(waited) + " s");
        }
      },
      kTimeout);
}

template <class F>
void require_error(const std::string& what, F&& call, std::initializer_list<std::string> mentions) {
  try {
    call();
  } catch (const Error& e) {
    const std::string m = e.what();
    for (const std::string& word : mentions)
      require(m.find(word) != std::string::npos, what + ": error does not mention '" + word + "': " + m);
    return;
  }
  throw std::runtime_error(what + " was accepted");
}

TEST_P(CommunicatorConformance, RejectsBadArgumentsAndStaysUsable) {
  run([](Rank& r) {
    const std::string n = std::to_string(r.world);
    Buffer<float> eight(r.memory, 8), three(r.memory, 3);
    require_error("send to a rank outside the group", [&] { r.comm.send(eight.tensor(), r.world, 0); }, {"send", n});
    require_error("recv from rank -1", [&] { r.comm.recv(eight.tensor(), -1, 0); }, {"recv", "-1"});
    require_error("reduce_scatter of mismatched sizes",
                  [&] { r.comm.reduce_scatter(eight.tensor(), three.tensor(), ReduceOp::Sum); }, {"reduce_scatter"});
    require_error("all_gather of mismatched sizes", [&] { r.comm.all_gather(three.tensor(), eight.tensor()); },
                  {"all_gather"});
    require_error("broadcast from a rank outside the group", [&] { r.comm.broadcast(eight.tensor(), r.world); },
                  {"broadcast", n});
    Buffer<int32_t> ints(r.memory, 3);
    require_error("all_gather from i32 into f32", [&] { r.comm.all_gather(ints.tensor(), eight.tensor()); },
                  {"all_gather"});

    r.comm.barrier();
    Buffer<float> sum(r.memory, std::vector<float>{1.0f});
    r.comm.all_reduce(sum.tensor(), ReduceOp::Sum);
    require_equal(sum.download(), std::vector<float>{static_cast<float>(r.world)}, "all_reduce after refused calls");
  });
}

TEST_P(CommunicatorConformance, WaitsForWorkQueuedOnTheBoundStream) {
  // The kernels plugin produces a buffer on the stream and hands it over at once: collectives
  // and sends must see what that work writes, not what the buffer held before.
  run([](Rank& r) {
    const size_t count = 65536;
    const int n = r.world;
    Buffer<float> sum(r.memory, count);
    r.memory.fill_later(sum.tensor().data, static_cast<float>(r.rank + 1), count, 50);
    r.comm.all_reduce(sum.tensor(), ReduceOp::Sum);
    require_equal(sum.download(), std::vector<float>(count, static_cast<float>(n * (n + 1) / 2)),
                  "all_reduce of a buffer written by queued work");
    if (n < 2) return;
    Buffer<float> out(r.memory, count), in(r.memory, count);
    r.memory.fill_later(out.tensor().data, static_cast<float>(100 + r.rank), count, 50);
    r.comm.group_start();
    r.comm.send(out.tensor(), (r.rank + 1) % n, 3);
    r.comm.recv(in.tensor(), (r.rank + n - 1) % n, 3);
    r.comm.group_end();
    require_equal(in.download(), std::vector<float>(count, static_cast<float>(100 + (r.rank + n - 1) % n)),
                  "recv of a buffer the sender's queued work wrote");
  });
}

TEST_P(CommunicatorConformance, ScatterGatherPipelineTransfer) {
  // PTD-P's scatter/gather: each tensor-parallel rank of one stage sends only its 1/t slice of
  // the activation to the same tensor rank of the next stage, which receives it into that slice
  // and all-gathers the rest over its tensor-parallel group, in place.
  if (world() < 2) GTEST_SKIP() << "needs two ranks";
  run([](Rank& r) {
    const int t = r.world / 2;  // stage 0: ranks [0, t), stage 1: [t, 2t); any odd rank out idles
    const int stage = r.rank < t ? 0 : r.rank < 2 * t ? 1 : -1;
    std::shared_ptr<Communicator> tp = r.comm.split(stage < 0 ? 2 : stage, r.rank, "stage-tp");
    if (stage < 0) return;
    const int me = tp->rank();
    const size_t slice = 4097, total = slice * static_cast<size_t>(t);
    const std::vector<uint16_t> activation = values<uint16_t>(7, total, 9);  // the same on every TP rank
    if (stage == 0) {
      Buffer<uint16_t> sent(r.memory, activation);
      r.comm.send(sent.tensor().flat_slice(static_cast<int64_t>(me * slice), static_cast<int64_t>(slice)), r.rank + t, 1);
      r.memory.synchronize();
    } else {
      Buffer<uint16_t> received(r.memory, std::vector<uint16_t>(total, float_to_bf16(-99.0f)));
      const Tensor mine = received.tensor().flat_slice(static_cast<int64_t>(me * slice), static_cast<int64_t>(slice));
      r.comm.recv(mine, r.rank - t, 1);
      tp->all_gather(mine, received.tensor());
      require_equal(received.download(), activation, "the activation gathered over the receiving stage");
    }
  });
}

TEST_P(CommunicatorConformance, InitFailsWhenARankNeverJoins) {
  if (world() < 2) GTEST_SKIP() << "needs two ranks";
  constexpr double kTimeout = 2;
  const CommunicatorUnderTest& under_test = GetParam();
  const int port = net::pick_free_port();
  const std::vector<RankOutcome> outcomes = run_ranks(under_test.world_size, 60s, [&](int rank) {
    TcpStore store("127.0.0.1", port, rank, under_test.world_size, 20000ms);
    if (rank == 1) {  // connected to the store, but never joins the communicator
      std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(kTimeout * 1000 * 3)));
      return;
    }
    std::shared_ptr<Communicator> comm = under_test.create();
    std::unique_ptr<TestMemory> memory = memory_for(under_test.memory, rank);
    const auto start = Clock::now();
    const std::string message = failure_of([&] {
      comm->init(CommInit{rank, under_test.world_size, &store, "never-joins", kTimeout, memory->device()});
      comm->barrier();
    });
    require(!message.empty(), "init and barrier succeeded without rank 1");
    require(seconds_since(start) < kTimeout * 2 + 6, "failed only after " + std::to_string(seconds_since(start)) + " s");
  });
  for (const RankOutcome& o : outcomes) EXPECT_EQ(o.error, "") << "rank " << o.rank;
}

TEST_P(CommunicatorConformance, RefusesUseBeforeInitAndASecondInit) {
  const CommunicatorUnderTest& under_test = GetParam();
  const int port = net::pick_free_port();
  const std::vector<RankOutcome> outcomes = run_ranks(1, 60s, [&](int rank) {
    TcpStore store("127.0.0.1", port, rank, 1, 10000ms);
    std::shared_ptr<Communicator> comm = under_test.create();
    std::unique_ptr<TestMemory> memory = memory_for(under_test.memory, rank);
    require(!failure_of([&] { comm->barrier(); }).empty(), "barrier() before init() was accepted");
    const CommInit init{0, 1, &store, "twice", 10, memory->device()};
    comm->init(init);
    comm->bind_stream(memory->stream());
    require(!failure_of([&] { comm->init(CommInit{0, 1, &store, "twice-again", 10, memory->device()}); }).empty(),
            "a second init() was accepted");
    Buffer<float> one(*memory, std::vector<float>{1.0f});
    comm->all_reduce(one.tensor(), ReduceOp::Sum);
    require_equal(one.download(), std::vector<float>{1.0f}, "all_reduce on one rank after the refusals");
  });
  for (const RankOutcome& o : outcomes) EXPECT_EQ(o.error, "") << "rank " << o.rank;
}

TEST_P(CommunicatorConformance, RefusesMemoryItDoesNotMove) {
  // Host memory is the one kind every build of the suite can offer a communicator that lacks it.
  if (GetParam().memory_kinds & memory_bit(MemoryKind::Host)) GTEST_SKIP() << "moves host memory";
  run([](Rank& r) {
    std::vector<float> host(16, 1.0f);
    require_error("all_reduce of host memory", [&] {
      r.comm.all_reduce(Tensor{host.data(), DType::F32, {16}, {}}, ReduceOp::Sum);
    }, {"all_reduce", "host"});
  });
}

INSTANTIATE_TEST_SUITE_P(Plugins, CommunicatorConformance, ::testing::ValuesIn(communicators_under_test()),
                         [](const ::testing::TestParamInfo<CommunicatorUnderTest>& info) { return info.param.name; });

}  // namespace
}  // namespace ptdp::conformance
