// faults_common.cpp - see faults_common.h.
#include "faults_common.h"

#include <dirent.h>

#include <fstream>
#include <thread>

#include "polylimit.h"

namespace faults {

bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds timeout, std::chrono::milliseconds poll) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    if (done()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(poll);
  }
}

std::string code_name(polylimit::ErrorCode code) {
  std::string name = polylimit_status_name(static_cast<int>(code));
  const std::string prefix = "POLYLIMIT_";
  if (name.compare(0, prefix.size(), prefix) == 0) name = name.substr(prefix.size());
  return name;
}

std::string Call::outcome() const {
  if (!ok) return code_name(code);
  std::string s = decision.allowed ? "OK admitted" : "OK denied";
  if (decision.degraded) s += " (degraded)";
  return s;
}

Call timed(const std::function<polylimit::Decision()>& f) {
  Call c;
  auto t = Clock::now();
  try {
    c.decision = f();
    c.ok = true;
  } catch (const polylimit::Error& e) {
    c.code = e.code();
    c.message = e.what();
  } catch (const std::exception& e) {
    c.code = polylimit::ErrorCode::kInternal;
    c.message = std::string("unexpected exception: ") + e.what();
  }
  c.ms = ms_since(t);
  return c;
}

namespace {

int count_entries(const char* dir) {
  DIR* d = ::opendir(dir);
  if (!d) return -1;
  int n = 0;
  while (dirent* e = ::readdir(d))
    if (e->d_name[0] != '.') ++n;
  ::closedir(d);
  return n;
}

}  // namespace

int open_fds() { return count_entries("/proc/self/fd") - 1; }  // minus the DIR's own descriptor
int thread_count() { return count_entries("/proc/self/task"); }

long rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.compare(0, 6, "VmRSS:") == 0) return std::stol(line.substr(6));
  return -1;
}

}  // namespace faults
