// mux.h - one connection shared by many callers (auto-pipelining).
//
// Callers queue their encoded commands; whoever drives the connection (the
// "leader") writes everything queued in one send and reads replies, which
// are matched to calls strictly in the order they were written. There is no
// I/O thread on the synchronous path: a caller that finds nobody driving
// becomes the leader itself, so an uncontended call is one write and one
// read on the caller's thread, as with a private connection. When the
// leader's own reply is in, it hands the connection to the caller whose
// reply comes next (one wake-up) and returns.
//
// While the leader waits for replies, a new caller's bytes would sit in the
// queue until the next reply arrives; instead the caller kicks an eventfd the
// leader polls alongside the socket, and the leader writes them at once, so
// several batches are in flight on one connection.
//
// Writes are batched by demand, not by a timer: queued calls are written
// when nothing is in flight or when they are at least half as many as the
// calls in flight. A caller whose bytes arrive while the leader waits for
// replies kicks it only then; otherwise its bytes wait for the replies the
// leader reads next (the server is busy meanwhile). Of the replies one read
// brings, all are matched and their callers woken before the next read, and
// the calls queued meanwhile are written first when the rule allows, so the
// server starts on them while the woken callers run. The rule keeps batches
// large: over TLS every write is a record the server handles in a pass of
// its own, and writing whatever was queued after each read locked a
// connection into small batches (4 calls a write instead of 11 at 64 threads,
// 0.64-0.72x of plain TCP instead of 0.86-0.92x in bench_tls).
//
// A synchronous caller sleeps on its own futex word (Call::signal), not on
// the connection's mutex: waking it does not make it contend for that lock.
//
// Calls submitted without a waiting thread (submit(): the non-blocking API)
// are driven by one I/O thread per connection, started on first use. The
// submitter writes a call itself when nobody drives the connection. Once the
// I/O thread has driven such calls it waits for the socket to become
// readable ("armed") rather than for a hand-off, so the submitter need not
// wake it: the reply does, and one wake-up per call is all a lone caller
// pays for the reply, as a blocking caller does. A wake-up that finds no
// hand-off (a synchronous caller leads) disarms it until the next one.
//
// A call submitted under a Reactor (polylimit/reactor.h: the completion
// queue's epoll set) is read by the thread that waits on that set instead:
// when nobody drives the connection, its socket is registered in the
// reactor of each call in flight, edge-triggered, and the first
// drive_ready() reads what is in without blocking, until the socket is
// empty (try_drive() when the set holds this socket alone: the event
// loop's look reads it without an epoll_wait first). The registration
// stays while the reactor's calls keep coming (no epoll_ctl per call); it
// is armed again only after a reader that may have left bytes unannounced
// (a blocking caller, a drive that found another reader). A call
// submitted while others are in flight waits for that drive to be written
// with them. The I/O thread then only guards: the oldest call's deadline,
// and calls left unwritten for a quarter of the command timeout (a drive
// that does not come: a busy event loop).
//
// Deadlines: each call has its own (the command timeout from submission,
// covering the queue, the write and the whole reply). When the oldest call in
// flight passes its deadline the server is not answering in time: the
// connection is broken and every call on it fails (those written with an
// unknown outcome). A caller whose own deadline passes while an older call is
// still in time abandons its call; its reply is read and dropped later, so
// no reply can ever reach another call.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "net/connection.h"
#include "polylimit/errors.h"
#include "polylimit/reactor.h"

namespace polylimit {

class Mux : public std::enable_shared_from_this<Mux> {
 public:
  using Clock = std::chrono::steady_clock;

  static constexpr uint32_t kWaiting = 0, kDone = 1, kLead = 2;

  // A call's replies, in order. Most calls expect one, held inline: a lone
  // call allocates no list for it.
  class Replies {
   public:
    size_t size() const { return n_; }
    void push_back(ReplyPtr r) {
      if (n_++ == 0)
        first_ = std::move(r);
      else
        rest_.push_back(std::move(r));
    }
    ReplyPtr& front() { return first_; }
    void clear() {
      first_.reset();
      rest_.clear();
      n_ = 0;
    }
    // All of them, as a list; the call has none left.
    std::vector<ReplyPtr> take();

   private:
    size_t n_ = 0;
    ReplyPtr first_;
    std::vector<ReplyPtr> rest_;
  };

  struct Call {
    std::string bytes;  // the encoded commands (reused between calls)
    size_t expect = 0;  // replies to read
    Replies replies;
    std::exception_ptr error;  // set when the call failed
    Clock::time_point deadline{};
    bool sent = false;        // some of its bytes may have reached the server
    bool done = false;        // replies or error are final
    bool abandoned = false;   // its caller gave up; the replies are dropped
    bool lead = false;        // handed the connection: drive it
    bool may_resend = false;  // failed unwritten, in time: a fresh connection may serve it
    bool holds = false;       // holds the connection until the server answers (WAIT)
    // What a synchronous caller sleeps on: kWaiting, then kDone or kLead,
    // stored (release) after the fields above; the futex word of its wait.
    std::atomic<uint32_t> signal{0};
    // The non-blocking API: called once done (outside every lock), on the
    // connection's I/O thread or on a caller's thread that was driving it.
    std::function<void(Call&)> on_done;
    // The reactors whose threads may read its reply (set by submit()): the
    // submitting thread's, or null, and those of a Reactor::AlsoScope (a
    // coalesced call's; kept apart so that a lone call allocates nothing).
    std::shared_ptr<Reactor> reactor;
    std::vector<std::shared_ptr<Reactor>> also_reactors;
    bool has_reactor() const { return reactor || !also_reactors.empty(); }

    void reset(size_t commands, Clock::time_point until) {
      bytes.clear();
      expect = commands;
      replies.clear();
      error = nullptr;
      deadline = until;
      sent = done = abandoned = lead = may_resend = holds = false;
      signal.store(kWaiting, std::memory_order_relaxed);
      on_done = nullptr;
      reactor = nullptr;
      also_reactors.clear();
    }
  };
  using CallPtr = std::shared_ptr<Call>;

  // Most calls queued or in flight on one connection; past it run() and
  // submit() throw kPoolExhausted ("queue full").
  static constexpr size_t kMaxPending = 4096;
  // Before a write on a connection with nothing in flight, a poll() looks for
  // a close (or bytes) that came while it was idle, so that the calls are
  // sent again elsewhere, outcome known, instead of failing with an unknown
  // one. It is left out when the connection was used less than this long
  // ago: the poll() cannot see a close made less than one network delay
  // before the write anyway (it is still on its way; 50 to 250 us within a
  // data centre), and the closes it is for (idle timeouts, kills and restarts
  // during a lull) find a connection idle for longer. A caller checking in a
  // loop saves a system call per call.
  static constexpr std::chrono::microseconds kProbeAfter{100};

  // Make it with std::make_shared (the I/O thread holds a weak reference).
  explicit Mux(std::unique_ptr<Connection> conn);
  ~Mux();
  Mux(const Mux&) = delete;
  Mux& operator=(const Mux&) = delete;

  // Queues the call and returns once it is done; throws its error. The call
  // must not be shared with another run() or submit() until then. When the
  // queue is full it waits up to `room_wait` for room first.
  void run(const CallPtr& call, std::chrono::milliseconds room_wait = std::chrono::milliseconds(0));
  // Queues the call and returns at once; call->on_done runs when it is done.
  // Throws (nothing queued, on_done never runs) when the connection is
  // broken or the queue is full.
  void submit(const CallPtr& call);

  // load(), broken() and idle_for() read atomics, not the lock: the pool
  // asks them of every connection for every call, and would otherwise queue
  // on the lock that the leaders hold.
  // What a new call would wait behind: the calls queued or in flight, plus
  // kMaxPending while one that holds the connection (Call::holds) is there.
  size_t load() const { return load_.load(std::memory_order_relaxed); }
  bool broken() const { return broken_.load(std::memory_order_acquire); }
  // Time since the connection last carried a call.
  Clock::duration idle_for() const;
  // Fails every call with kClosed (or `error`) and stops the I/O thread.
  void shut_down(std::exception_ptr error = nullptr);
  // Called by `from`'s drive() when the socket armed there is readable:
  // reads the replies that are in (never waits), unless somebody else
  // drives the connection.
  void drive_ready(const Reactor* from);
  // The same read for a drive that took no event (Reactor::drive reading a
  // set of one socket directly): false, having done nothing, when somebody
  // else drives or the connection broke.
  bool try_drive();

 private:
  void enqueue_locked(const CallPtr& call, std::unique_lock<std::mutex>* lock = nullptr,
                      std::chrono::milliseconds room_wait = std::chrono::milliseconds(0));
  // Drives the connection until `self` is done (self null: until no call of
  // the non-blocking API is outstanding), then hands it on. Called and
  // returns with `lock` held. `once`: one read of what is in, no wait.
  void lead(std::unique_lock<std::mutex>& lock, Call* self, bool once = false);
  void hand_off_locked();
  // Writes every queued call in one send (the caller leads); false when the
  // connection broke (every call has failed).
  bool flush_locked(std::unique_lock<std::mutex>& lock);
  // Whether the queued calls should be written now rather than wait for more
  // replies: nothing is in flight, or they are at least half as many.
  bool worth_flushing_locked() const;
  // Stores load() after unsent_, inflight_ or holding_ changed.
  void publish_load_locked();
  // The error of a call whose deadline passed before it was written.
  Error queued_timeout() const;
  bool io_step();
  // Fails every queued and in-flight call; the connection is not reused.
  void fail_all_locked(std::exception_ptr error);
  // Marks the call done. A synchronous caller is woken at once, or, with
  // `wake`, added to it for wake_all() once the lock is released.
  void complete_locked(const CallPtr& call, std::vector<CallPtr>* wake = nullptr);
  // Wakes the callers of `calls` (without the lock) and clears it.
  static void wake_all(std::vector<CallPtr>& calls);
  // Matches `replies` (one read's worth, in order) to the calls in flight.
  // False when the connection broke (more replies than calls).
  bool dispatch_locked(std::vector<ReplyPtr>& replies, std::vector<CallPtr>& wake);
  void run_callbacks(std::unique_lock<std::mutex>& lock);
  void ensure_io_thread_locked();
  // Waits (without the lock) for the socket, io_wake_fd_ or `until`.
  void armed_wait(Clock::time_point until);
  void kick_io_locked();
  // Registers the socket (edge-triggered) in the reactor of every
  // submit()ted call not yet done, and arms the registrations again when a
  // read may have left bytes they will not announce (synced_ false); false
  // when none took it.
  bool arm_reactors_locked();
  // Counts a call of `reactor` in (+1) or out (-1) of reactors_.
  void count_reactor_locked(const std::shared_ptr<Reactor>& reactor, int delta);
  // Takes the socket out of `reactor`'s set, or out of every set (null),
  // and forgets reactors that are gone.
  void forget_reactors_locked(const Reactor* reactor);
  // The oldest deadline of the calls nobody drives (the I/O thread's guard),
  // or the far future.
  Clock::time_point unguarded_deadline_locked() const;
  // How often the I/O thread looks while calls wait undriven: a quarter of
  // the command timeout.
  Clock::duration guard_tick() const;

  std::unique_ptr<Connection> conn_;
  int wake_fd_ = -1;  // eventfd the leader polls with the socket

  mutable std::mutex mu_;
  std::deque<CallPtr> unsent_;           // queued, not yet written
  std::deque<CallPtr> inflight_;         // written, replies not all read
  std::vector<CallPtr> callbacks_;       // async calls done, on_done not yet run
  bool leader_ = false;                  // somebody drives the connection
  bool parked_ = false;                  // the leader waits in poll (kick wake_fd_)
  std::atomic<bool> broken_{false};      // written under mu_
  size_t async_outstanding_ = 0;         // submit()ted calls not yet done
  size_t holding_ = 0;                   // calls with `holds` queued or in flight
  std::atomic<size_t> load_{0};          // load(), written under mu_
  std::atomic<Clock::rep> last_active_;  // written under mu_
  // How long ago the last write or reply was (last_active_).
  Clock::duration since_active() const {
    return Clock::now() - Clock::time_point(Clock::duration(last_active_.load(std::memory_order_relaxed)));
  }
  std::string out_;                  // the leader's write buffer
  std::vector<ReplyPtr> batch_;      // the leader's replies of one read
  std::vector<CallPtr> wake_;        // the leader's calls to wake after dispatch
  std::condition_variable room_cv_;  // callers waiting for a full queue to drain
  int room_waiters_ = 0;

  std::thread io_;
  std::condition_variable io_cv_;
  bool io_lead_ = false;  // the I/O thread was handed the connection
  bool io_stop_ = false;
  // The I/O thread waits in poll() on the socket and io_wake_fd_ (not on
  // io_cv_) until io_armed_until_; a hand-off to it then needs no wake-up
  // unless the call's deadline comes first.
  bool io_armed_ = false;
  bool io_rearm_ = false;  // arm at the next wait (it led calls, or an armed wait timed out)
  Clock::time_point io_armed_until_{};
  int io_wake_fd_ = -1;  // eventfd: ends an armed wait early
  // The reactors of the submit()ted calls not yet done, with their counts.
  std::vector<std::pair<std::shared_ptr<Reactor>, size_t>> reactors_;
  // The reactors whose sets hold the socket (edge-triggered: each announces
  // bytes as they arrive), until a drive finds another reader and no
  // non-blocking call left here.
  std::vector<std::weak_ptr<Reactor>> armed_in_;
  // Every byte now in the socket has been announced to the registrations
  // (the last read, a reactor's drive, emptied it with no announcement
  // missed since); else arm_reactors_locked arms them again.
  bool synced_ = false;
  // Drives that found somebody else driving: their announcement was spent.
  uint64_t missed_drives_ = 0;
  // When the first of the calls now unsent was left for the next drive.
  Clock::time_point left_since_{};
  // When the I/O thread's condition-variable wait ends.
  Clock::time_point io_wait_until_ = Clock::time_point::max();
};

}  // namespace polylimit
