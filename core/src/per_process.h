// per_process.h - state that must not cross fork().
//
// A parent thread may hold a lock at the moment another thread calls fork();
// the child would deadlock on that lock, and it must never use the parent's
// sockets. PerProcess<T> gives each process its own T: the first call in a
// forked child makes a fresh one. The parent's copy is never destroyed in the
// child (its mutexes may be held by threads that do not exist there); it is
// only offered to `inherited`, for cleanup that must not block.
#pragma once

#include <unistd.h>

#include <atomic>
#include <mutex>

namespace polylimit {

template <typename T>
class PerProcess {
 public:
  PerProcess() : current_(new Entry) {}
  ~PerProcess() {
    Entry* e = current_.load();
    if (e->pid == ::getpid()) delete e;
  }
  PerProcess(const PerProcess&) = delete;
  PerProcess& operator=(const PerProcess&) = delete;

  T& get() {
    return get([](T&) {});
  }

  template <typename F>
  T& get(F&& inherited) {
    Entry* e = current_.load(std::memory_order_acquire);
    const pid_t pid = ::getpid();
    if (e->pid == pid) return e->value;
    std::lock_guard<std::mutex> guard(fork_mu_);  // only ever taken in a forked child
    e = current_.load(std::memory_order_acquire);
    if (e->pid == pid) return e->value;
    inherited(e->value);
    Entry* fresh = new Entry;
    current_.store(fresh, std::memory_order_release);
    return fresh->value;
  }

 private:
  struct Entry {
    pid_t pid = ::getpid();
    T value;
  };
  std::atomic<Entry*> current_;
  std::mutex fork_mu_;
};

}  // namespace polylimit
