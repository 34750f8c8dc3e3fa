// mux.cpp - Mux: the leader/follower engine over one Connection.
#include "net/mux.h"

#include <linux/futex.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <new>

#include "polylimit/errors.h"

namespace polylimit {

namespace {

// `error` as this call sees it: an Error that reached the server marked
// outcome-unknown, anything else turned into an Error.
std::exception_ptr for_call(const std::exception_ptr& error, bool sent) {
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    Error copy = e;
    copy.set_outcome_unknown(sent || e.outcome_unknown());
    return std::make_exception_ptr(copy);
  } catch (const std::bad_alloc&) {
    Error copy(ErrorCode::kNoMemory, "out of memory while driving a connection");
    copy.set_outcome_unknown(sent);
    return std::make_exception_ptr(copy);
  } catch (const std::exception& e) {
    Error copy(ErrorCode::kInternal, e.what());
    copy.set_outcome_unknown(sent);
    return std::make_exception_ptr(copy);
  }
}

uint32_t* futex_word(std::atomic<uint32_t>& signal) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "a futex word is 32 bits");
  return reinterpret_cast<uint32_t*>(&signal);
}

void wake_one(std::atomic<uint32_t>& signal) {
  ::syscall(SYS_futex, futex_word(signal), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

// Sleeps until `signal` leaves kWaiting or `deadline` passes; false on the
// deadline. Spurious wake-ups (a wake meant for the call's previous use) loop.
bool wait_signal(std::atomic<uint32_t>& signal, Mux::Clock::time_point deadline) {
  // steady_clock is CLOCK_MONOTONIC, the clock of FUTEX_WAIT_BITSET's absolute time.
  const auto since_epoch = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.time_since_epoch()).count();
  timespec until{};
  until.tv_sec = static_cast<time_t>(since_epoch / 1000000000);
  until.tv_nsec = static_cast<long>(since_epoch % 1000000000);
  while (signal.load(std::memory_order_acquire) == Mux::kWaiting) {
    const long r = ::syscall(SYS_futex, futex_word(signal), FUTEX_WAIT_BITSET_PRIVATE, Mux::kWaiting, &until, nullptr,
                             FUTEX_BITSET_MATCH_ANY);
    if (r != 0 && errno == ETIMEDOUT) return signal.load(std::memory_order_acquire) != Mux::kWaiting;
  }
  return true;
}

}  // namespace

Mux::Mux(std::unique_ptr<Connection> conn)
    : conn_(std::move(conn)), last_active_(Clock::now().time_since_epoch().count()) {
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) throw Error(ErrorCode::kUnavailable, "eventfd: cannot make one for a connection", errno);
  io_wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (io_wake_fd_ < 0) {
    const int e = errno;
    ::close(wake_fd_);
    throw Error(ErrorCode::kUnavailable, "eventfd: cannot make one for a connection", e);
  }
}

Mux::~Mux() {
  shut_down();
  {
    // Out of the reactors' sets before the socket closes: a registration
    // would outlive the descriptor while a forked child holds the socket.
    std::lock_guard<std::mutex> lock(mu_);
    forget_reactors_locked(nullptr);
  }
  if (io_.joinable()) {
    if (io_.get_id() == std::this_thread::get_id())
      io_.detach();  // the I/O thread released the last reference; it returns at once
    else
      io_.join();
  }
  ::close(wake_fd_);
  ::close(io_wake_fd_);
}

Mux::Clock::duration Mux::idle_for() const {
  if (load() != 0) return Clock::duration::zero();
  return since_active();
}

void Mux::publish_load_locked() {
  load_.store(unsent_.size() + inflight_.size() + (holding_ > 0 ? kMaxPending : 0), std::memory_order_relaxed);
}

void Mux::enqueue_locked(const CallPtr& call, std::unique_lock<std::mutex>* lock, std::chrono::milliseconds room_wait) {
  auto full = [this] { return unsent_.size() + inflight_.size() >= kMaxPending; };
  if (lock != nullptr && full() && room_wait.count() > 0) {
    ++room_waiters_;
    room_cv_.wait_for(*lock, room_wait, [&] { return broken_ || !full(); });
    --room_waiters_;
  }
  if (broken_) {
    call->may_resend = Clock::now() < call->deadline;
    throw Error(ErrorCode::kUnavailable, "the connection to " + conn_->where() + " is closed");
  }
  if (full())
    throw Error(ErrorCode::kPoolExhausted,
                "queue full: " + std::to_string(kMaxPending) + " calls already wait on the connection to " +
                    conn_->where() +
                    (room_wait.count() > 0 ? " (waited acquire_timeout_ms=" + std::to_string(room_wait.count()) + ")"
                                           : std::string()));
  unsent_.push_back(call);
  if (call->holds) ++holding_;
  publish_load_locked();
  // The leader waits for replies; it writes what is queued when enough of it
  // is (worth_flushing_locked) and is kicked only then: one send per call
  // would cost the server (and us) more than the wait.
  if (leader_ && parked_ && worth_flushing_locked()) {
    parked_ = false;
    const uint64_t one = 1;
    while (::write(wake_fd_, &one, sizeof one) < 0 && errno == EINTR) {
    }
  }
}

void Mux::complete_locked(const CallPtr& call, std::vector<CallPtr>* wake) {
  call->done = true;
  if (room_waiters_ > 0) room_cv_.notify_one();
  if (call->on_done) {
    --async_outstanding_;
    if (call->reactor) count_reactor_locked(call->reactor, -1);
    for (const std::shared_ptr<Reactor>& r : call->also_reactors) count_reactor_locked(r, -1);
    callbacks_.push_back(call);
  } else if (!call->abandoned) {
    call->signal.store(kDone, std::memory_order_release);
    if (wake != nullptr)
      wake->push_back(call);
    else
      wake_one(call->signal);
  }
}

void Mux::wake_all(std::vector<CallPtr>& calls) {
  for (const CallPtr& c : calls) wake_one(c->signal);
  calls.clear();
}

std::vector<ReplyPtr> Mux::Replies::take() {
  std::vector<ReplyPtr> out;
  out.reserve(n_);
  if (n_ > 0) out.push_back(std::move(first_));
  for (ReplyPtr& r : rest_) out.push_back(std::move(r));
  clear();
  return out;
}

bool Mux::dispatch_locked(std::vector<ReplyPtr>& replies, std::vector<CallPtr>& wake) {
  bool unsolicited = false;
  for (ReplyPtr& reply : replies) {
    if (inflight_.empty()) {
      unsolicited = true;
      break;
    }
    CallPtr& head = inflight_.front();
    head->replies.push_back(std::move(reply));
    if (head->replies.size() >= head->expect) {
      CallPtr c = std::move(head);
      inflight_.pop_front();
      if (c->holds) --holding_;
      if (!c->abandoned || c->on_done)
        complete_locked(c, &wake);
      else if (room_waiters_ > 0)
        room_cv_.notify_one();
    }
  }
  replies.clear();
  publish_load_locked();
  if (unsolicited || (inflight_.empty() && conn_->has_leftover())) {
    // A reply nobody asked for: the stream cannot be trusted any more.
    fail_all_locked(std::make_exception_ptr(
        Error(ErrorCode::kServer, "reply from " + conn_->where() + ": unsolicited bytes after a reply")));
    return false;
  }
  return true;
}

void Mux::fail_all_locked(std::exception_ptr error) {
  broken_ = true;
  holding_ = 0;
  room_cv_.notify_all();
  std::deque<CallPtr> calls;
  calls.swap(inflight_);
  for (CallPtr& c : unsent_) calls.push_back(std::move(c));
  unsent_.clear();
  publish_load_locked();
  // A call never written may be tried once more on a fresh connection, within
  // its deadline, unless this one was given up because the server did not
  // answer in time: a new connection to it would not answer sooner.
  bool timed_out = false;
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    timed_out = e.code() == ErrorCode::kTimeout;
  } catch (...) {
  }
  const Clock::time_point now = Clock::now();
  for (CallPtr& c : calls) {
    if (c->done) continue;
    c->error = for_call(error, c->sent);
    c->may_resend = !c->sent && !timed_out && now < c->deadline;
    complete_locked(c);
  }
}

void Mux::run_callbacks(std::unique_lock<std::mutex>& lock) {
  if (callbacks_.empty()) return;
  std::vector<CallPtr> ready;
  ready.swap(callbacks_);
  lock.unlock();
  for (CallPtr& c : ready) {
    auto fn = std::move(c->on_done);
    c->on_done = nullptr;
    fn(*c);
  }
  ready.clear();
  lock.lock();
  if (callbacks_.empty()) callbacks_.swap(ready);  // its capacity again: no allocation per call
}

void Mux::hand_off_locked() {
  leader_ = false;
  if (broken_) return;
  CallPtr next;
  for (const CallPtr& c : inflight_)
    if (!c->abandoned) {
      next = c;
      break;
    }
  if (!next && !unsent_.empty()) next = unsent_.front();
  if (!next) return;  // only abandoned calls: the next caller reads their replies
  if (next->on_done && next->has_reactor()) {
    // A synchronous caller waiting behind it drives instead: its deadline
    // must not depend on how soon the reactor's thread comes round.
    auto sync = [](const CallPtr& c) { return !c->on_done && !c->abandoned && !c->done; };
    auto it = std::find_if(inflight_.begin(), inflight_.end(), sync);
    if (it != inflight_.end()) {
      next = *it;
    } else {
      auto queued = std::find_if(unsent_.begin(), unsent_.end(), sync);
      if (queued != unsent_.end()) next = *queued;
    }
  }
  leader_ = true;
  if (next->on_done && next->has_reactor() && conn_->fd() >= 0) {
    // Nobody drives: the threads polling the reactors of the calls in flight
    // read the replies when they are in (the first to come drives; one
    // stalled poller does not hold up another's calls), and the I/O thread
    // wakes only if the oldest deadline comes first.
    leader_ = false;
    if (arm_reactors_locked()) {
      if (io_armed_)
        kick_io_locked();  // it waits on the socket, not on deadlines: back to its guard
      else if (std::min(unguarded_deadline_locked(), Clock::now() + guard_tick()) < io_wait_until_)
        io_cv_.notify_one();  // its wait ends later than its guard must look
      return;
    }
    leader_ = true;  // the kernel refused: the I/O thread reads them
  }
  if (next->on_done) {
    io_lead_ = true;
    // An armed I/O thread is woken by the reply of the oldest call in flight
    // (the one whose deadline it watches): wake it only when that is not
    // enough, with queued calls to write or a deadline before its wait ends.
    if (!io_armed_)
      io_cv_.notify_one();
    else if (inflight_.empty() || worth_flushing_locked() || inflight_.front()->deadline < io_armed_until_)
      kick_io_locked();
  } else {
    next->lead = true;
    next->signal.store(kLead, std::memory_order_release);
    wake_one(next->signal);
  }
}

bool Mux::flush_locked(std::unique_lock<std::mutex>& lock) {
  if (inflight_.empty()) {
    // Idle until now: bytes or EOF that arrived meanwhile belong to nobody;
    // the connection is not used again (nothing of ours was sent). The poll()
    // that looks is left out when the connection carried a reply or a write
    // less than kProbeAfter ago (see there).
    bool stale;
    if (since_active() < kProbeAfter) {
      stale = conn_->unusable();
    } else {
      lock.unlock();
      stale = conn_->stale();
      lock.lock();
    }
    if (broken_) return false;
    if (stale) {
      fail_all_locked(std::make_exception_ptr(
          Error(ErrorCode::kUnavailable, "the connection to " + conn_->where() + " was closed while idle")));
      return false;
    }
  }
  out_.clear();
  Clock::time_point deadline = unsent_.front()->deadline;
  while (!unsent_.empty()) {
    CallPtr c = std::move(unsent_.front());
    unsent_.pop_front();
    out_ += c->bytes;
    c->sent = true;
    deadline = std::max(deadline, c->deadline);
    inflight_.push_back(std::move(c));
  }
  lock.unlock();
  std::exception_ptr failed;
  try {
    conn_->write(out_, deadline);
  } catch (...) {
    failed = std::current_exception();
  }
  lock.lock();
  // A write that went through has just read the clock (no second read).
  const Clock::time_point written = failed ? Clock::now() : conn_->last_used();
  last_active_.store(written.time_since_epoch().count(), std::memory_order_relaxed);
  if (broken_) return false;  // shut down meanwhile
  if (failed) {
    fail_all_locked(failed);
    return false;
  }
  return true;
}

bool Mux::worth_flushing_locked() const {
  // A small batch sent behind a large one would reach a TLS server as a
  // record of its own, which it decrypts, runs and answers in a pass of its
  // own (a plain server reads both at once): small batches would then beget
  // small replies and stay small.
  return !unsent_.empty() && unsent_.size() * 2 >= inflight_.size();
}

void Mux::lead(std::unique_lock<std::mutex>& lock, Call* self, bool once) {
  auto finished = [&] { return self != nullptr ? self->done || self->abandoned : async_outstanding_ == 0; };
  // Whoever reads may leave bytes the reactors' edge-triggered registrations
  // will not announce again: unless this read drains the socket with no
  // drive event lost meanwhile (drive_ready), they are re-armed at the
  // hand-off (arm_reactors_locked).
  synced_ = false;
  const uint64_t missed = missed_drives_;
  while (!broken_ && !finished()) {
    if (worth_flushing_locked()) {
      if (!flush_locked(lock)) break;
      continue;  // more may have been queued meanwhile
    }
    if (inflight_.empty()) break;  // (self was failed or is queued elsewhere)

    Clock::time_point until = inflight_.front()->deadline;
    if (self != nullptr && self->deadline < until) until = self->deadline;
    if (once) until = Clock::time_point();  // what is in, without a wait (Connection::next_reply)
    parked_ = !once;
    lock.unlock();
    // The first reply (waiting for it), then every reply that came with it.
    bool woken = false;
    std::exception_ptr failed;
    try {
      if (ReplyPtr first = conn_->next_reply(until, wake_fd_, woken)) {
        batch_.push_back(std::move(first));
        while (ReplyPtr more = conn_->buffered_reply()) batch_.push_back(std::move(more));
      }
    } catch (...) {
      failed = std::current_exception();
    }
    lock.lock();
    parked_ = false;
    if (broken_) {  // shut down meanwhile: every call has failed
      batch_.clear();
      break;
    }
    const bool got = !batch_.empty();
    if (got) {
      last_active_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed);
      if (!dispatch_locked(batch_, wake_)) {
        wake_all(wake_);
        break;
      }
    }
    if (failed) {
      wake_all(wake_);
      fail_all_locked(failed);
      break;
    }
    if (!wake_.empty()) {
      // Calls queued while we waited go out before their callers are woken:
      // the server works on them meanwhile.
      const bool ok = !worth_flushing_locked() || flush_locked(lock);
      lock.unlock();
      wake_all(wake_);
      lock.lock();
      if (!ok) break;
    } else if (!got && !woken) {
      const Clock::time_point now = Clock::now();
      if (now >= inflight_.front()->deadline) {
        fail_all_locked(std::make_exception_ptr(
            Error(ErrorCode::kTimeout, "reply from " + conn_->where() + ": timed out after " +
                                           std::to_string(conn_->command_timeout_ms()) + " ms")));
        break;
      }
      if (self != nullptr && now >= self->deadline) {
        if (self->sent) {
          self->abandoned = true;  // an older call is still in time; ours is read and dropped later
        } else {                   // still queued behind the calls in flight: it never runs
          auto it = std::find_if(unsent_.begin(), unsent_.end(), [&](const CallPtr& c) { return c.get() == self; });
          if (it != unsent_.end()) {
            CallPtr mine = std::move(*it);
            unsent_.erase(it);
            if (mine->holds) --holding_;
            publish_load_locked();
            mine->error = std::make_exception_ptr(queued_timeout());
            complete_locked(mine);
          }
        }
        break;
      }
    }
    if (!callbacks_.empty() && self == nullptr) run_callbacks(lock);
    if (once) {
      // One read of what is in, to the end of it: the registrations announce
      // only bytes that arrive later.
      if (!broken_ && !conn_->drained() && !finished()) continue;
      synced_ = !broken_ && conn_->drained() && missed == missed_drives_;
      // Calls queued meanwhile (by the callbacks, too) go out before the
      // connection is left undriven.
      if (!broken_ && !unsent_.empty()) flush_locked(lock);
      break;
    }
  }
  hand_off_locked();
  run_callbacks(lock);
}

Error Mux::queued_timeout() const {
  return Error(ErrorCode::kTimeout, "no reply from " + conn_->where() + " within " +
                                        std::to_string(conn_->command_timeout_ms()) +
                                        " ms: the call waited in the queue (not sent)");
}

void Mux::run(const CallPtr& call, std::chrono::milliseconds room_wait) {
  std::unique_lock<std::mutex> lock(mu_);
  enqueue_locked(call, &lock, room_wait);
  while (!call->done && !call->abandoned) {
    if (call->lead || !leader_) {
      call->lead = false;
      call->signal.store(kWaiting, std::memory_order_relaxed);
      leader_ = true;
      lead(lock, call.get());
      continue;
    }
    lock.unlock();
    const bool in_time = wait_signal(call->signal, call->deadline);
    if (call->signal.load(std::memory_order_acquire) == kDone) break;  // without the lock: nothing left to do
    lock.lock();
    if (!in_time && !call->done && !call->lead) {
      if (!call->sent) {
        unsent_.erase(std::find(unsent_.begin(), unsent_.end(), call));
        if (call->holds) --holding_;
        publish_load_locked();
        throw queued_timeout();
      }
      call->abandoned = true;
    }
  }
  if (lock.owns_lock()) lock.unlock();
  if (call->error) std::rethrow_exception(call->error);
  if (!call->done) {
    Error e(ErrorCode::kTimeout, "reply from " + conn_->where() + ": timed out after " +
                                     std::to_string(conn_->command_timeout_ms()) + " ms");
    e.set_outcome_unknown(true);
    throw e;
  }
}

void Mux::submit(const CallPtr& call) {
  std::unique_lock<std::mutex> lock(mu_);
  call->reactor = Reactor::current();
  if (const auto* also = Reactor::also())
    for (const std::shared_ptr<Reactor>& r : *also)
      if (r != call->reactor) call->also_reactors.push_back(r);  // distinct, none null (AlsoScope)
  enqueue_locked(call);
  ++async_outstanding_;
  if (call->reactor) count_reactor_locked(call->reactor, +1);
  for (const std::shared_ptr<Reactor>& r : call->also_reactors) count_reactor_locked(r, +1);
  ensure_io_thread_locked();
  if (!leader_) {
    // Write it from this thread now; the reactor's thread (or the I/O
    // thread) reads the reply. Under a reactor, with calls in flight, it
    // waits for the drive their replies bring, which writes it with the
    // others (fewer, larger writes: less work for the server per call),
    // unless it is worth a write now. A drive that does not come (a busy
    // event loop) is covered by the I/O thread: it writes calls left
    // waiting for a quarter of the command timeout.
    leader_ = true;
    if (!call->has_reactor() || worth_flushing_locked()) {
      flush_locked(lock);
    } else if (unsent_.size() == 1) {
      left_since_ = Clock::now();
    }
    hand_off_locked();
  }
  run_callbacks(lock);
}

bool Mux::arm_reactors_locked() {
  bool armed = false;
  // Bytes left by a reader that did not drain the socket (or whose
  // announcement a drive missed) are announced by arming again: the kernel
  // looks at the socket then. Every registration is armed, not only those of
  // reactors with calls here: any poller may read for the others.
  if (!synced_) {
    for (auto it = armed_in_.begin(); it != armed_in_.end();) {
      std::shared_ptr<Reactor> r = it->lock();
      if (r && r->arm(conn_->fd(), weak_from_this())) {
        ++it;
      } else {
        it = armed_in_.erase(it);
      }
    }
  }
  for (const auto& [reactor, calls] : reactors_) {
    (void)calls;
    bool in = false;  // registered there (edge-triggered): announces what arrives
    for (const std::weak_ptr<Reactor>& w : armed_in_) in = in || w.lock() == reactor;
    if (!in && reactor->arm(conn_->fd(), weak_from_this())) {
      armed_in_.push_back(reactor);
      in = true;
    }
    armed = armed || in;
  }
  synced_ = true;
  return armed;
}

void Mux::count_reactor_locked(const std::shared_ptr<Reactor>& reactor, int delta) {
  auto it = std::find_if(reactors_.begin(), reactors_.end(), [&](const auto& r) { return r.first == reactor; });
  if (it == reactors_.end()) {
    if (delta > 0) reactors_.emplace_back(reactor, static_cast<size_t>(delta));
    return;
  }
  it->second = static_cast<size_t>(static_cast<long>(it->second) + delta);
  if (it->second == 0) reactors_.erase(it);
}

void Mux::forget_reactors_locked(const Reactor* reactor) {
  for (auto it = armed_in_.begin(); it != armed_in_.end();) {
    std::shared_ptr<Reactor> r = it->lock();
    if (!r || reactor == nullptr || r.get() == reactor) {
      if (r) r->forget(conn_->fd());
      it = armed_in_.erase(it);
    } else {
      ++it;
    }
  }
}

void Mux::drive_ready(const Reactor* from) {
  std::unique_lock<std::mutex> lock(mu_);
  if (leader_ || broken_) {
    // Whoever drives reads it; this announcement is spent, so the hand-off
    // arms the reactors again. With no non-blocking call left here, the
    // reactor is taken out: another reader's bytes (a blocking caller's
    // replies) would keep waking it for nothing; it is registered again
    // with its next call. (While any is left it stays: it may have to read
    // for a call that carries another poller's queue.)
    ++missed_drives_;
    synced_ = false;
    if (async_outstanding_ == 0) forget_reactors_locked(from);
    return;
  }
  // Nobody drives: read for every call in flight, whichever poller's it is.
  leader_ = true;
  lead(lock, nullptr, true);
}

bool Mux::try_drive() {
  std::unique_lock<std::mutex> lock(mu_);
  if (leader_ || broken_) return false;
  leader_ = true;
  lead(lock, nullptr, true);
  return true;
}

Mux::Clock::duration Mux::guard_tick() const {
  return std::chrono::milliseconds(std::max(1, conn_->command_timeout_ms() / 4));
}

Mux::Clock::time_point Mux::unguarded_deadline_locked() const {
  if (leader_) return Clock::time_point::max();
  Clock::time_point due = Clock::time_point::max();
  if (!inflight_.empty()) due = inflight_.front()->deadline;
  if (!unsent_.empty()) due = std::min(due, unsent_.front()->deadline);
  return due;
}

void Mux::ensure_io_thread_locked() {
  if (io_.joinable() || io_stop_) return;
  std::weak_ptr<Mux> weak = weak_from_this();
  io_ = std::thread([weak] {
    for (;;) {
      std::shared_ptr<Mux> self = weak.lock();
      if (!self || !self->io_step()) return;
    }
  });
}

void Mux::kick_io_locked() {
  const uint64_t one = 1;
  while (::write(io_wake_fd_, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

void Mux::armed_wait(Clock::time_point until) {
  pollfd fds[2] = {{conn_->fd(), POLLIN, 0}, {io_wake_fd_, POLLIN, 0}};
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count() + 1;
  if (::poll(fds, 2, static_cast<int>(std::max<long long>(0, left))) > 0 && (fds[1].revents & POLLIN) != 0) {
    uint64_t value;
    while (::read(io_wake_fd_, &value, sizeof value) < 0 && errno == EINTR) {
    }
  }
}

// One wait for work on the I/O thread; false when it should stop.
bool Mux::io_step() {
  std::unique_lock<std::mutex> lock(mu_);
  // Bounded waits: the thread's reference is dropped now and then, so a Mux
  // nobody else holds is destroyed.
  const auto bound = std::chrono::milliseconds(200);
  if (io_rearm_ && !io_lead_ && !io_stop_ && !broken_ && conn_->fd() >= 0) {
    io_armed_ = true;
    io_armed_until_ = Clock::now() + bound;
    const Clock::time_point until = io_armed_until_;
    lock.unlock();
    armed_wait(until);
    lock.lock();
    io_armed_ = false;
    // Readable without a hand-off: a synchronous caller reads the socket
    // (or the server closed it); waiting on it again would spin. An idle
    // wait that timed out stays armed.
    io_rearm_ = io_lead_ || Clock::now() >= until;
  } else {
    // Calls read by a reactor's thread: wake at the oldest one's deadline
    // (a new, earlier one notifies), and lead if nobody has read it by then.
    // While calls wait undriven it also looks every quarter of the command
    // timeout for calls left unwritten (a submit under a reactor leaves them
    // for the next drive).
    const Clock::duration tick = guard_tick();
    const Clock::time_point due = unguarded_deadline_locked();
    io_wait_until_ = std::min(Clock::now() + bound, due);
    if (due != Clock::time_point::max()) io_wait_until_ = std::min(io_wait_until_, Clock::now() + tick);
    io_cv_.wait_until(lock, io_wait_until_,
                      [this] { return io_lead_ || io_stop_ || unguarded_deadline_locked() < io_wait_until_; });
    io_wait_until_ = Clock::time_point::max();
    const Clock::time_point now = Clock::now();
    const bool left_unwritten = !unsent_.empty() && now >= left_since_ + tick;
    if (!io_lead_ && !io_stop_ && !leader_ && !broken_ && (now >= unguarded_deadline_locked() || left_unwritten)) {
      // One read of what is in (or the timeout), then the connection goes
      // back to the reactors: leading on would keep every later call on
      // this thread for as long as calls keep coming.
      leader_ = true;
      lead(lock, nullptr, /*once=*/true);
    }
  }
  if (io_lead_) {
    io_lead_ = false;
    lead(lock, nullptr);
    io_rearm_ = true;
  }
  run_callbacks(lock);
  return !io_stop_;
}

void Mux::shut_down(std::exception_ptr error) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!broken_)
    fail_all_locked(error ? error : std::make_exception_ptr(Error(ErrorCode::kClosed, "the client is closed")));
  io_stop_ = true;
  io_cv_.notify_all();
  if (io_armed_) kick_io_locked();
  run_callbacks(lock);
  lock.unlock();
  conn_->shut_down();  // a leader waiting in poll() returns
}

}  // namespace polylimit
