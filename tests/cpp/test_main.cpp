// The main of every C++ test program: gtest's, plus a watchdog. A test that
// hangs is otherwise killed by ctest's timeout with nothing to say where it
// waited; the watchdog fires a little earlier (POLYLIMIT_TEST_WATCHDOG_S,
// set by tests/CMakeLists.txt), names the running test and prints every
// thread's stack (with gdb, when installed), then aborts the program.
//
// The watchdog is a process forked before any thread exists, not a thread:
// tests fork workers of their own, which ThreadSanitizer refuses in a
// program that has threads. It dies with the test program (PR_SET_PDEATHSIG)
// and reads the running test's name from a page they share.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr size_t kNameSize = 4096;
char* shared_name = nullptr;  // the running test, for the watchdog; a shared page
pid_t watchdog = 0;

void set_name(const std::string& name) {
  if (shared_name == nullptr) return;
  // A torn read at the moment of a hang is harmless: the watchdog only prints it.
  std::strncpy(shared_name, name.c_str(), kNameSize - 1);
}

class Tracker : public testing::EmptyTestEventListener {
  void OnTestStart(const testing::TestInfo& t) override { set_name(std::string(t.test_suite_name()) + "." + t.name()); }
  void OnTestEnd(const testing::TestInfo& t) override {
    set_name(std::string("(after ") + t.test_suite_name() + "." + t.name() + ")");
  }
};

void print_stacks(pid_t pid) {
  const std::string p = std::to_string(pid);
  const pid_t child = ::fork();
  if (child == 0) {
    ::dup2(STDERR_FILENO, STDOUT_FILENO);
    ::execlp("gdb", "gdb", "-batch", "-nx", "-p", p.c_str(), "-ex", "thread apply all bt", static_cast<char*>(nullptr));
    std::fprintf(stderr, "watchdog: no gdb to print the stacks with\n");
    ::_exit(127);
  }
  if (child > 0) {
    int status = 0;
    ::waitpid(child, &status, 0);
  }
}

void watch(pid_t program, long seconds) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != program) ::_exit(0);  // it ended before the line above
  ::sleep(static_cast<unsigned>(seconds));
  if (::getppid() != program) ::_exit(0);
  std::fprintf(stderr, "\nwatchdog: still running after %ld s, in %s; every thread's stack:\n", seconds, shared_name);
  std::fflush(stderr);
  print_stacks(program);
  std::fprintf(stderr, "watchdog: aborting the test program (hung in %s)\n", shared_name);
  std::fflush(stderr);
  ::kill(program, SIGABRT);
  ::_exit(0);
}

void start_watchdog(long seconds) {
  void* page = ::mmap(nullptr, kNameSize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return;
  shared_name = static_cast<char*>(page);
  set_name("(before the first test)");
  const pid_t program = ::getpid();
  const pid_t child = ::fork();
  if (child == 0) watch(program, seconds);
  if (child > 0) watchdog = child;
}

// Ends and reaps it (it would be an orphan for init to reap otherwise).
void stop_watchdog() {
  if (watchdog <= 0) return;
  ::kill(watchdog, SIGKILL);
  int status = 0;
  ::waitpid(watchdog, &status, 0);
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (const char* s = std::getenv("POLYLIMIT_TEST_WATCHDOG_S")) {
    const long seconds = std::strtol(s, nullptr, 10);
    if (seconds > 0) start_watchdog(seconds);
  }
  testing::UnitTest::GetInstance()->listeners().Append(new Tracker);
  const int rc = RUN_ALL_TESTS();
  stop_watchdog();
  return rc;
}
