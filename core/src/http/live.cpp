// live.cpp - LivePolicy (http_policy.h): a policy swapped whole on reload,
// optionally from a watched file, and the plan resolver's answer cache.
#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <list>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <utility>

#include "polylimit/errors.h"
#include "polylimit/http_policy.h"

namespace polylimit {
namespace http {
namespace {

using Clock = std::chrono::steady_clock;

// What tells a changed file: its inode (an editor's rename), size and
// modification time to the nanosecond.
struct FileStamp {
  bool exists = false;
  ino_t inode = 0;
  off_t size = 0;
  int64_t mtime_ns = 0;

  bool operator==(const FileStamp& o) const {
    return exists == o.exists && inode == o.inode && size == o.size && mtime_ns == o.mtime_ns;
  }
};

FileStamp stamp_of(const std::string& path) {
  FileStamp s;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return s;
  s.exists = true;
  s.inode = st.st_ino;
  s.size = st.st_size;
  s.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  return s;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw_invalid("policy file " + path + ": " + std::strerror(errno));
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) throw_invalid("policy file " + path + ": cannot be read");
  return out.str();
}

}  // namespace

struct LivePolicy::State {
  PolicySources sources;
  std::string path;  // "" unless opened from a file

  mutable std::mutex mutex;  // guards current, generation, last_error, the counts
  std::shared_ptr<const Policy> current;
  uint64_t generation = 0;
  std::string last_error;
  uint64_t accepted = 0, refused = 0;

  std::mutex reload_mutex;               // one reload at a time: each builds on the one before
  std::atomic<bool> has_resolver{true};  // set_has_resolver(); until then, no check

  // The watcher.
  std::thread watcher;
  std::mutex watch_mutex;
  std::condition_variable wake;
  bool stopping = false;
  FileStamp stamp;

  // The plan cache: tenant -> (plan, expiry), least recently used last.
  struct Cached {
    std::string plan;
    Clock::time_point expires;
    std::list<std::string>::iterator order;
  };
  mutable std::mutex cache_mutex;
  // Keys view the tenant ids held by `order` (list nodes do not move).
  mutable std::unordered_map<std::string_view, Cached> plans;
  mutable std::list<std::string> order;  // most recently used first

  void install(std::string_view document) {
    std::lock_guard<std::mutex> serial(reload_mutex);
    std::shared_ptr<const Policy> previous;
    {
      std::lock_guard<std::mutex> lock(mutex);
      previous = current;
    }
    std::shared_ptr<const Policy> next;
    try {
      next = Policy::load(document, sources, previous.get());
      if (next->resolver().enabled && !has_resolver.load())
        throw_invalid(
            "policy: the document has a \"resolver\" table (the application places tenants it does not name) "
            "but this service gave no plan resolver");
    } catch (const Error& e) {
      std::lock_guard<std::mutex> lock(mutex);
      last_error = e.what();
      ++refused;
      throw;
    }
    std::lock_guard<std::mutex> lock(mutex);
    current = std::move(next);
    ++generation;
    ++accepted;
    last_error.clear();
  }

  void watch(int interval_ms) {
    std::unique_lock<std::mutex> lock(watch_mutex);
    while (!wake.wait_for(lock, std::chrono::milliseconds(interval_ms), [&] { return stopping; })) {
      FileStamp now = stamp_of(path);
      if (now == stamp) continue;
      stamp = now;
      lock.unlock();
      std::string text;
      bool read = false;
      try {
        text = read_file(path);
        read = true;
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> l(mutex);  // a file gone or unreadable: the old policy stays
        last_error = e.what();
        ++refused;
      }
      try {
        if (read) install(text);
      } catch (const std::exception&) {
        // install() remembered why; the old policy stays.
      }
      lock.lock();
    }
  }
};

LivePolicy::LivePolicy() : state_(std::make_unique<State>()) {}

LivePolicy::LivePolicy(std::string_view document, PolicySources sources) : LivePolicy() {
  state_->sources = std::move(sources);
  state_->install(document);
}

std::unique_ptr<LivePolicy> LivePolicy::open(const std::string& path, PolicySources sources, int watch_interval_ms) {
  if (watch_interval_ms < 0 || watch_interval_ms > 3600000)
    throw_invalid("watch interval = " + std::to_string(watch_interval_ms) + " ms; use 0 (no watching) to 3600000");
  std::unique_ptr<LivePolicy> live(new LivePolicy());
  State& s = *live->state_;
  s.sources = std::move(sources);
  s.path = path;
  s.stamp = stamp_of(path);
  s.install(read_file(path));
  if (watch_interval_ms > 0) s.watcher = std::thread([&s, watch_interval_ms] { s.watch(watch_interval_ms); });
  return live;
}

LivePolicy::~LivePolicy() {
  if (state_->watcher.joinable()) {
    {
      std::lock_guard<std::mutex> lock(state_->watch_mutex);
      state_->stopping = true;
    }
    state_->wake.notify_all();
    state_->watcher.join();
  }
}

void LivePolicy::set_has_resolver(bool has) {
  std::lock_guard<std::mutex> serial(state_->reload_mutex);
  if (!has && current()->resolver().enabled)
    throw_invalid(
        "policy: the document has a \"resolver\" table (the application places tenants it does not name) "
        "but this service gave no plan resolver");
  state_->has_resolver = has;
}

std::shared_ptr<const Policy> LivePolicy::current() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->current;
}

void LivePolicy::reload(std::string_view document) { state_->install(document); }

void LivePolicy::reload_file() {
  if (state_->path.empty()) throw_invalid("this policy was not opened from a file: reload it with a document");
  {
    std::lock_guard<std::mutex> lock(state_->watch_mutex);
    state_->stamp = stamp_of(state_->path);
  }
  state_->install(read_file(state_->path));
}

uint64_t LivePolicy::generation() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->generation;
}

std::string LivePolicy::last_error() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->last_error;
}

std::optional<std::string> LivePolicy::cached_plan(std::string_view tenant) const {
  std::lock_guard<std::mutex> lock(state_->cache_mutex);
  auto it = state_->plans.find(tenant);
  if (it == state_->plans.end()) return std::nullopt;
  if (Clock::now() >= it->second.expires) {
    auto node = it->second.order;
    state_->plans.erase(it);
    state_->order.erase(node);
    return std::nullopt;
  }
  state_->order.splice(state_->order.begin(), state_->order, it->second.order);
  return it->second.plan;
}

void LivePolicy::cache_plan(std::string_view tenant, std::string_view plan) {
  const ResolverSettings settings = current()->resolver();
  if (settings.cache_ttl_ms <= 0) return;
  std::lock_guard<std::mutex> lock(state_->cache_mutex);
  auto& s = *state_;
  const Clock::time_point expires = Clock::now() + std::chrono::milliseconds(settings.cache_ttl_ms);
  auto it = s.plans.find(tenant);
  if (it != s.plans.end()) {
    it->second.plan.assign(plan.data(), plan.size());
    it->second.expires = expires;
    s.order.splice(s.order.begin(), s.order, it->second.order);
    return;
  }
  while (!s.plans.empty() && s.plans.size() >= settings.cache_size) {
    s.plans.erase(std::string_view(s.order.back()));
    s.order.pop_back();
  }
  s.order.emplace_front(tenant);
  s.plans.emplace(std::string_view(s.order.front()), State::Cached{std::string(plan), expires, s.order.begin()});
}

std::string LivePolicy::metrics_prometheus() const {
  std::string out = current()->metrics_prometheus();
  uint64_t accepted, refused;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    accepted = state_->accepted;
    refused = state_->refused;
  }
  out +=
      "# HELP polylimit_http_policy_reloads_total Policy documents loaded, accepted or refused.\n"
      "# TYPE polylimit_http_policy_reloads_total counter\n"
      "polylimit_http_policy_reloads_total{result=\"accepted\"} " +
      std::to_string(accepted) +
      "\n"
      "polylimit_http_policy_reloads_total{result=\"refused\"} " +
      std::to_string(refused) + "\n";
  return out;
}

}  // namespace http
}  // namespace polylimit
