// per_process.h - state that must not cross fork().
//
// A parent thread may hold a lock at the moment another thread calls fork();
// the child would deadlock on that lock, and it must never use the parent's
// sockets. PerProcess<T> gives each process its own T: the first call in a
// forked child makes a fresh one. The parent's copy is never destroyed in the
// child (its mutexes may be held by threads that do not exist there); it is
// only offered to `inherited`, for cleanup that must not block.
#pragma once

#include <pthread.h>

#include <atomic>
#include <mutex>

namespace polylimit {

// Counts the fork()s on the way to this process: a child sees a value its
// parent never had. Cheaper than getpid() (a system call) on every check.
inline unsigned fork_generation() {
  static std::atomic<unsigned> generation{0};
  static const int registered = ::pthread_atfork(nullptr, nullptr, [] { generation.fetch_add(1); });
  (void)registered;
  return generation.load(std::memory_order_relaxed);
}

template <typename T>
class PerProcess {
 public:
  PerProcess() : current_(new Entry) {}
  ~PerProcess() {
    Entry* e = current_.load();
    if (e->generation == fork_generation()) delete e;
  }
  PerProcess(const PerProcess&) = delete;
  PerProcess& operator=(const PerProcess&) = delete;

  T& get() {
    return get([](T&) {});
  }

  template <typename F>
  T& get(F&& inherited) {
    Entry* e = current_.load(std::memory_order_acquire);
    const unsigned generation = fork_generation();
    if (e->generation == generation) return e->value;
    std::lock_guard<std::mutex> guard(fork_mu_);  // only ever taken in a forked child
    e = current_.load(std::memory_order_acquire);
    if (e->generation == generation) return e->value;
    inherited(e->value);
    Entry* fresh = new Entry;
    current_.store(fresh, std::memory_order_release);
    return fresh->value;
  }

 private:
  struct Entry {
    unsigned generation = fork_generation();
    T value;
  };
  std::atomic<Entry*> current_;
  std::mutex fork_mu_;
};

}  // namespace polylimit
