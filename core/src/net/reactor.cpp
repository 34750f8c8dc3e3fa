// reactor.cpp - Reactor: an epoll set of the sockets whose replies the
// waiting thread reads itself (see polylimit/reactor.h).
#include "polylimit/reactor.h"

#include <poll.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>

#include "net/mux.h"
#include "polylimit/errors.h"

namespace polylimit {

namespace {

thread_local const std::shared_ptr<Reactor>* t_current = nullptr;
thread_local bool t_driving = false;
thread_local const std::vector<std::shared_ptr<Reactor>>* t_also = nullptr;

// epoll data: the socket + 1, or 0 for an fd drive() skips.
constexpr uint64_t kSignal = 0;

}  // namespace

std::shared_ptr<Reactor> Reactor::make() {
  std::shared_ptr<Reactor> r(new Reactor);
  r->ep_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (r->ep_ < 0) throw Error(ErrorCode::kInternal, "epoll_create1: cannot make an epoll set", errno);
  return r;
}

Reactor::~Reactor() {
  if (ep_ >= 0) ::close(ep_);
}

void Reactor::add_signal(int fd) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kSignal;
  if (::epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev) != 0)
    throw Error(ErrorCode::kInternal, "epoll_ctl: cannot watch the queue's eventfd", errno);
}

bool Reactor::arm(int fd, const std::weak_ptr<Mux>& mux) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    armed_[fd] = mux;  // a socket number reused by another connection is re-pointed here
  }
  // Edge-triggered: one announcement per arrival, so a registration can stay
  // while calls come and go. MOD (or ADD) also looks at the socket at once:
  // bytes already there are announced.
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLET;
  ev.data.u64 = static_cast<uint64_t>(fd) + 1;
  if (::epoll_ctl(ep_, EPOLL_CTL_MOD, fd, &ev) == 0) return true;
  // Not in the set yet, or added meanwhile.
  if (errno == ENOENT && ::epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev) == 0) return true;
  return errno == EEXIST && ::epoll_ctl(ep_, EPOLL_CTL_MOD, fd, &ev) == 0;
}

void Reactor::forget(int fd) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    armed_.erase(fd);
  }
  ::epoll_ctl(ep_, EPOLL_CTL_DEL, fd, nullptr);  // ENOENT: not (or no longer) there
}

void Reactor::drive(int timeout_ms) {
  std::shared_ptr<Reactor> self = shared_from_this();
  drives_.fetch_add(1, std::memory_order_relaxed);
  if (driver_.load(std::memory_order_relaxed) != std::this_thread::get_id())
    driver_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  if (timeout_ms == 0) {
    // A look at a set of one socket: a read of it costs what the epoll_wait
    // that would name it does, and saves that call whenever bytes are in
    // (an event loop polls because they are). Its event stays in the set,
    // unharvested; bytes that arrive later wake the set's pollers all the
    // same (the kernel wakes them on every arrival, listed or not). When
    // somebody else drives the connection, the epoll_wait below takes the
    // event, as drive_ready() expects of a drive that found it.
    std::shared_ptr<Mux> only;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (armed_.empty()) return;  // the queue's eventfd alone: nothing to read
      if (armed_.size() == 1) only = armed_.begin()->second.lock();
    }
    if (only) {
      Scope scope(self, true);
      if (only->try_drive()) return;
    }
  }
  epoll_event events[32];
  const int n = ::epoll_wait(ep_, events, 32, timeout_ms);
  if (n <= 0) return;  // nothing, or EINTR: the caller looks again
  Scope scope(self, true);
  for (int i = 0; i < n; ++i) {
    if (events[i].data.u64 == kSignal) continue;
    const int fd = static_cast<int>(events[i].data.u64 - 1);
    std::shared_ptr<Mux> mux;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = armed_.find(fd);
      if (it != armed_.end()) mux = it->second.lock();
    }
    if (mux) mux->drive_ready(this);
  }
}

Reactor::Scope::Scope(const std::shared_ptr<Reactor>& reactor, bool driving)
    : previous_(t_current), previous_driving_(t_driving) {
  t_current = &reactor;
  t_driving = driving;
}

Reactor::Scope::~Scope() {
  t_current = previous_;
  t_driving = previous_driving_;
}

Reactor::AlsoScope::AlsoScope(const std::vector<std::shared_ptr<Reactor>>& reactors) : previous_(t_also) {
  t_also = &reactors;
}

Reactor::AlsoScope::~AlsoScope() { t_also = previous_; }

const std::vector<std::shared_ptr<Reactor>>* Reactor::also() { return t_also; }

std::shared_ptr<Reactor> Reactor::current() { return t_current != nullptr ? *t_current : nullptr; }

bool Reactor::driving(const Reactor* reactor) {
  return t_driving && t_current != nullptr && t_current->get() == reactor;
}

bool Reactor::replies_unread_here() {
  if (t_current == nullptr || t_driving || *t_current == nullptr) return false;
  Reactor& r = **t_current;
  if (r.driver_.load(std::memory_order_relaxed) != std::this_thread::get_id()) return false;
  const uint64_t drives = r.drives_.load(std::memory_order_relaxed);
  if (r.unread_at_.load(std::memory_order_relaxed) == drives) return true;  // still unread: nobody drove since
  // Nothing was in at the last look of this turn: the next few checks wait
  // in their lanes without a look of their own (a turn that submits many
  // checks made one poll() per check); a later look sends them along.
  if (r.none_at_.load(std::memory_order_relaxed) == drives) {
    const uint32_t skipped = r.none_skipped_.load(std::memory_order_relaxed) + 1;
    r.none_skipped_.store(skipped, std::memory_order_relaxed);
    if (skipped < kLookEvery) return false;
  }
  pollfd fds[8];
  nfds_t n = 0;
  {
    std::lock_guard<std::mutex> lock(r.mu_);
    for (const auto& armed : r.armed_) {
      if (n == 8) break;
      fds[n++] = pollfd{armed.first, POLLIN, 0};
    }
  }
  // A socket closed meanwhile (its number maybe reused) only misleads this
  // look, which decides whether checks wait, not what they decide.
  if (n == 0 || ::poll(fds, n, 0) <= 0) {
    r.none_skipped_.store(0, std::memory_order_relaxed);
    r.none_at_.store(drives, std::memory_order_relaxed);
    return false;
  }
  r.unread_at_.store(drives, std::memory_order_relaxed);
  return true;
}

}  // namespace polylimit
