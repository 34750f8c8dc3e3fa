// reactor.h - lets the thread that waits for non-blocking completions read
// their replies itself.
//
// Without it a non-blocking call's reply wakes the connection's I/O thread,
// which reads it and then wakes the thread that waits for the completion: two
// wake-ups per call where a blocking caller pays one. A Reactor is an epoll
// set the waiting thread sleeps on (the completion queue's fd). Calls
// submitted while a Reactor is current on the thread (Reactor::Scope) carry
// it; when such a call is in flight and nobody drives its connection, the
// connection's socket is registered in that set (edge-triggered, and kept
// while calls of the set keep coming: no epoll_ctl per call), and drive() -
// on the thread that waits - reads the replies that are in, without
// blocking, to the end of what the socket holds, and completes their calls.
// The I/O thread then only guards deadlines: it leads the connection when
// the oldest call's deadline passes with nobody reading.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace polylimit {

class Mux;

class Reactor : public std::enable_shared_from_this<Reactor> {
 public:
  // Throws polylimit::Error when the kernel refuses an epoll set.
  static std::shared_ptr<Reactor> make();
  ~Reactor();
  Reactor(const Reactor&) = delete;
  Reactor& operator=(const Reactor&) = delete;

  // The epoll set: readable when an armed socket or an added fd is.
  int fd() const { return ep_; }
  // Adds a level-triggered fd (e.g. the queue's eventfd) that drive() skips.
  void add_signal(int fd);
  // Waits up to timeout_ms (0: not at all, -1: no limit) for the set, then
  // reads the armed connections that are readable and completes their
  // calls on this thread. A look without a wait at a set of one socket
  // reads that socket directly, without asking the set (see drive()).
  void drive(int timeout_ms);
  // Registers `fd`, the socket of `mux`, edge-triggered, or arms its
  // registration again: each drive() that finds bytes arrived drives `mux`,
  // and bytes already there are announced now. False when the kernel
  // refused (the caller falls back to its I/O thread).
  bool arm(int fd, const std::weak_ptr<Mux>& mux);
  // Takes `fd` out of the set.
  void forget(int fd);

  // Makes `reactor` current on this thread while it lives (calls submitted
  // meanwhile carry it).
  class Scope {
   public:
    explicit Scope(const std::shared_ptr<Reactor>& reactor, bool driving = false);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    const std::shared_ptr<Reactor>* previous_;
    bool previous_driving_;
  };
  // Makes `reactors` (distinct, none null) read the replies of the calls
  // submitted on this thread while it lives too, besides the current one: a
  // coalesced call carries checks whose pollers may be several, and each of
  // them may be the one that keeps polling.
  class AlsoScope {
   public:
    explicit AlsoScope(const std::vector<std::shared_ptr<Reactor>>& reactors);
    ~AlsoScope();
    AlsoScope(const AlsoScope&) = delete;
    AlsoScope& operator=(const AlsoScope&) = delete;

   private:
    const std::vector<std::shared_ptr<Reactor>>* previous_;
  };
  // The reactor current on this thread, or null.
  static std::shared_ptr<Reactor> current();
  // The reactors of the AlsoScope on this thread, or null.
  static const std::vector<std::shared_ptr<Reactor>>* also();
  // Whether this thread is inside `reactor`'s drive(): what it completes is
  // taken by this thread right after, so nobody else need be woken.
  static bool driving(const Reactor* reactor);
  // Whether bytes wait unread on a socket armed in the reactor current on
  // this thread, which is the thread that drives it (not inside drive()):
  // replies are in that only this thread reads, when its event loop comes
  // back to the set after the turn it is busy with. False without a
  // reactor, or when another thread drove it last (a pool of threads: one
  // of the others may read them now). One poll() of those sockets (the
  // first 8), none when one found bytes since the last drive(), and one in
  // kLookEvery calls while they found none since then.
  static bool replies_unread_here();
  static constexpr uint32_t kLookEvery = 8;

 private:
  Reactor() = default;

  int ep_ = -1;
  // drive() calls begun, and that count when replies_unread_here() last
  // found bytes: bytes found stay unread until the next drive().
  std::atomic<uint64_t> drives_{0};
  std::atomic<uint64_t> unread_at_{~uint64_t{0}};
  // That count when a look last found nothing, and the calls answered
  // "nothing" without a look since.
  std::atomic<uint64_t> none_at_{~uint64_t{0}};
  std::atomic<uint32_t> none_skipped_{0};
  std::atomic<std::thread::id> driver_{};  // the thread of the last drive()
  std::mutex mu_;
  std::unordered_map<int, std::weak_ptr<Mux>> armed_;  // socket -> its connection
};

}  // namespace polylimit
