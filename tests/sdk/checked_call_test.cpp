// The SDK's checked-call vocabulary (ptdp/checked_call.hpp) and PluginLog, over a status type of
// the test's own, so that no library is needed. PTDP_PLUGIN_NAME is set by ptdp_set_plugin_name.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "ptdp/checked_call.hpp"
#include "ptdp/plugin_log.hpp"

namespace {

enum class FakeStatus { Done, Working, Broken, Unloading };

FakeStatus fake_call(FakeStatus answer) { return answer; }

}  // namespace

namespace ptdp {

template <>
struct CallStatus<FakeStatus> {
  static constexpr const char* library = "Fake";
  static bool ok(FakeStatus s) { return s == FakeStatus::Done || s == FakeStatus::Working; }
  static bool ok_at_teardown(FakeStatus s) { return ok(s) || s == FakeStatus::Unloading; }
  static std::string reason(FakeStatus s) { return s == FakeStatus::Broken ? "broken" : "unloading"; }
};

namespace {

TEST(CheckedCall, ReturnsTheStatusOfACallThatWorked) {
  EXPECT_EQ(PTDP_CALL(fake_call(FakeStatus::Done)), FakeStatus::Done);
  EXPECT_EQ(PTDP_CALL(fake_call(FakeStatus::Working)), FakeStatus::Working);
}

TEST(CheckedCall, NamesThePluginTheCallTheReasonAndWhere) {
  const int line = __LINE__ + 2;
  try {
    PTDP_CALL(fake_call(FakeStatus::Broken));
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string where = " [checked_call_test.cpp:" + std::to_string(line) + "]";
    EXPECT_EQ(std::string(e.what()),
              "sdk-test: fake_call(FakeStatus::Broken) failed: Fake error: broken" + where);
    const auto* call = dynamic_cast<const CallError*>(&e);
    ASSERT_NE(call, nullptr);
    EXPECT_EQ(call->detail(), "fake_call(FakeStatus::Broken) failed: Fake error: broken" + where);
    EXPECT_EQ(reason_of(e), call->detail());
  }
}

TEST(CheckedCall, NamesAStatusByTheTextGiven) {
  const FakeStatus answer = FakeStatus::Broken;
  try {
    PTDP_CALL_AS(answer, "fake_call to rank " + std::to_string(3));
    FAIL() << "no error";
  } catch (const CallError& e) {
    EXPECT_EQ(e.detail().rfind("fake_call to rank 3 failed: Fake error: broken [", 0), 0u) << e.detail();
  }
}

TEST(CheckedCall, OtherErrorsKeepTheirWholeText) {
  EXPECT_EQ(reason_of(Error("sdk-test: bad input")), "sdk-test: bad input");
}

TEST(TeardownCall, KeepsTheFirstFailureAndCountsTheRest) {
  TeardownFailures failures;
  EXPECT_TRUE(PTDP_TEARDOWN_CALL(failures, fake_call(FakeStatus::Done)));
  EXPECT_TRUE(failures.empty());
  EXPECT_EQ(failures.summary(), "");
  // What the library says when the process is going away is nothing to report.
  EXPECT_TRUE(PTDP_TEARDOWN_CALL(failures, fake_call(FakeStatus::Unloading)));
  EXPECT_TRUE(failures.empty());

  EXPECT_FALSE(PTDP_TEARDOWN_CALL(failures, fake_call(FakeStatus::Broken)));
  const std::string first = failures.summary();
  const std::string expected = "fake_call(FakeStatus::Broken) failed: Fake error: broken [checked_call_test.cpp:";
  EXPECT_EQ(first.rfind(expected, 0), 0u) << first;
  failures.note("second");
  EXPECT_EQ(failures.summary(), first + " (and 1 more failure)");
  failures.note("third");
  EXPECT_EQ(failures.summary(), first + " (and 2 more failures)");
}

struct HostLog {
  std::vector<std::pair<LogLevel, std::string>> lines;
  static void write(void* user, LogLevel level, const char* message) {
    static_cast<HostLog*>(user)->lines.emplace_back(level, message);
  }
};

TEST(PluginLog, WritesToTheHostUntilTheObjectCloses) {
  HostLog host;
  PluginContext context;
  context.log = &HostLog::write;
  context.log_user = &host;
  PluginLog log(context);
  const PluginLog kept_by_a_group = log;

  TeardownFailures failures;
  log.write_failures("sdk-test: teardown", failures);
  EXPECT_TRUE(host.lines.empty()) << "nothing failed, nothing written";
  failures.note("x failed");
  kept_by_a_group.write_failures("sdk-test: teardown", failures);
  ASSERT_EQ(host.lines.size(), 1u);
  EXPECT_EQ(host.lines[0].first, LogLevel::Warn);
  EXPECT_EQ(host.lines[0].second, "sdk-test: teardown: x failed");

  log.close();
  testing::internal::CaptureStderr();
  kept_by_a_group.write(LogLevel::Warn, "sdk-test: after the object went");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "sdk-test: after the object went\n");
  EXPECT_EQ(host.lines.size(), 1u);
}

TEST(PluginLog, StaysSilentForAHostWithoutALogAndUsesStandardErrorWithoutAHost) {
  const PluginLog silent{PluginContext{}};
  testing::internal::CaptureStderr();
  silent.write(LogLevel::Warn, "unheard");
  silent.close();
  silent.write(LogLevel::Warn, "unheard");
  PluginLog().write(LogLevel::Warn, "sdk-test: no host");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "sdk-test: no host\n");
}

}  // namespace
}  // namespace ptdp
