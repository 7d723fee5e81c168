#pragma once
// CheckRunner: runs named checks, prints "PASS <name>" or "FAIL <name>: <why>" for each, and
// counts the failures. A check fails by throwing; expect() and expect_error() throw for it.
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

class CheckRunner {
 public:
  explicit CheckRunner(int rank) : rank_(rank) {}
  // False when the check failed.
  bool run(const std::string& name, const std::function<void()>& check);
  void skip(const std::string& name, const std::string& why);
  int failures() const { return failures_; }

 private:
  int rank_;
  int failures_ = 0;
};

void expect(bool ok, const std::string& what);
// Calls `call`, which must throw ptdp::Error whose message holds every fragment; returns the
// message.
std::string expect_error(const std::function<void()>& call, std::initializer_list<std::string> fragments);
void expect_values(const std::vector<double>& got, const std::vector<double>& want, const std::string& what);
bool contains(const std::string& text, const std::string& fragment);
