#include "check_runner.hpp"

#include <chrono>
#include <cstdio>
#include <stdexcept>

#include "ptdp/error.hpp"

bool CheckRunner::run(const std::string& name, const std::function<void()>& check) {
  const auto start = std::chrono::steady_clock::now();
  std::string failure;
  try {
    check();
  } catch (const std::exception& e) {
    failure = e.what();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (failure.empty()) {
    std::printf("[rank %d] PASS %s (%.2f s)\n", rank_, name.c_str(), seconds);
  } else {
    ++failures_;
    std::printf("[rank %d] FAIL %s (%.2f s): %s\n", rank_, name.c_str(), seconds, failure.c_str());
  }
  std::fflush(stdout);
  return failure.empty();
}

void CheckRunner::skip(const std::string& name, const std::string& why) {
  std::printf("[rank %d] SKIP %s: %s\n", rank_, name.c_str(), why.c_str());
  std::fflush(stdout);
}

void expect(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}

bool contains(const std::string& text, const std::string& fragment) {
  return text.find(fragment) != std::string::npos;
}

std::string expect_error(const std::function<void()>& call, std::initializer_list<std::string> fragments) {
  try {
    call();
  } catch (const ptdp::Error& e) {
    const std::string message = e.what();
    for (const std::string& fragment : fragments)
      expect(contains(message, fragment), "the error lacks '" + fragment + "': " + message);
    std::printf("      error as expected: %s\n", message.c_str());
    return message;
  }
  throw std::runtime_error("no ptdp::Error was thrown");
}

void expect_values(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  expect(got.size() == want.size(), what + ": " + std::to_string(got.size()) + " values, expected " +
                                        std::to_string(want.size()));
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i])
      throw std::runtime_error(what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) +
                               ", expected " + std::to_string(want[i]));
}
