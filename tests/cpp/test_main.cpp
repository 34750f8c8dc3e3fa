// The main of every C++ test program: gtest's, plus a watchdog. A test that
// hangs is otherwise killed by ctest's timeout with nothing to say where it
// waited; the watchdog fires a little earlier (POLYLIMIT_TEST_WATCHDOG_S,
// set by tests/CMakeLists.txt), names the running test and prints every
// thread's stack (with gdb, when installed), then aborts.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

namespace {

std::mutex running_mu;
std::string running = "(before the first test)";

class Tracker : public testing::EmptyTestEventListener {
  void OnTestStart(const testing::TestInfo& t) override {
    std::lock_guard<std::mutex> lock(running_mu);
    running = std::string(t.test_suite_name()) + "." + t.name();
  }
  void OnTestEnd(const testing::TestInfo& t) override {
    std::lock_guard<std::mutex> lock(running_mu);
    running = std::string("(after ") + t.test_suite_name() + "." + t.name() + ")";
  }
};

void print_stacks() {
  const std::string pid = std::to_string(::getpid());
  const pid_t child = ::fork();
  if (child == 0) {
    ::dup2(STDERR_FILENO, STDOUT_FILENO);
    ::execlp("gdb", "gdb", "-batch", "-nx", "-p", pid.c_str(), "-ex", "thread apply all bt", static_cast<char*>(nullptr));
    std::fprintf(stderr, "watchdog: no gdb to print the stacks with\n");
    ::_exit(127);
  }
  if (child > 0) {
    int status = 0;
    ::waitpid(child, &status, 0);
  }
}

// Fires once the process has run `seconds`; the thread is detached and
// needs nothing from the tests, which may end (and exit) at any time.
void start_watchdog(long seconds) {
  std::thread([seconds] {
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    std::string name;
    {
      std::lock_guard<std::mutex> lock(running_mu);
      name = running;
    }
    std::fprintf(stderr, "\nwatchdog: still running after %ld s, in %s; every thread's stack:\n", seconds, name.c_str());
    std::fflush(stderr);
    print_stacks();
    std::fprintf(stderr, "watchdog: aborting (hung in %s)\n", name.c_str());
    std::fflush(stderr);
    std::abort();
  }).detach();
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  testing::UnitTest::GetInstance()->listeners().Append(new Tracker);
  if (const char* s = std::getenv("POLYLIMIT_TEST_WATCHDOG_S")) {
    const long seconds = std::strtol(s, nullptr, 10);
    if (seconds > 0) start_watchdog(seconds);
  }
  return RUN_ALL_TESTS();
}
