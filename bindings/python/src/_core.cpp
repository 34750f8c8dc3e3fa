// _core.cpp - polylimit._core: pybind11 over the C ABI (polylimit.h).
//
// The module binds the C ABI rather than the C++ core so that Python goes
// through the same surface as Go, Java and C. The pure-Python package
// (polylimit/) adds the friendly API on top; this layer stays thin.
//
// GIL rules (pybind11 never releases it for us):
//  - arguments become C++ values (std::string, int64_t) while the GIL is held;
//  - the GIL is released only around polylimit_* calls that can touch the network;
//  - no Python object is created, copied or destroyed while it is released.
#include <pybind11/pybind11.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <unistd.h>

#include "polylimit.h"

namespace py = pybind11;

namespace {

// From the pure-Python package, read once at import. Leaked on purpose: calls
// made while the interpreter shuts down must still find them.
py::dict* g_error_classes = nullptr;  // polylimit._errors.BY_STATUS: status (int) -> class
py::object* g_base_error = nullptr;   // polylimit.Error
py::dict* g_bounds = nullptr;         // polylimit._vocabulary.BOUNDS: name -> (min, max)

// The polylimit exception object for `status` (not raised). Needs the GIL.
// outcome_unknown: the call failed after its command was sent (it may have
// consumed units).
py::object make_error(int status, const char* message, int sys_errno, bool outcome_unknown = false) {
  py::object cls = *g_base_error;
  py::int_ key(status);
  if (g_error_classes->contains(key)) cls = (*g_error_classes)[key];
  // The message is bytes from C; a cut multi-byte sequence must not turn into
  // a UnicodeDecodeError that hides the real one.
  py::object text = py::reinterpret_steal<py::object>(
      PyUnicode_DecodeUTF8(message, static_cast<Py_ssize_t>(std::strlen(message)), "replace"));
  if (!text) throw py::error_already_set();
  py::object exc = cls(text);
  exc.attr("code") = py::str(polylimit_status_name(status));
  exc.attr("status") = py::int_(status);
  exc.attr("sys_errno") = py::int_(sys_errno);
  exc.attr("outcome_unknown") = py::bool_(outcome_unknown);
  return exc;
}

// Raises the polylimit exception for `status`. Needs the GIL.
[[noreturn]] void raise_status(int status, const char* message, int sys_errno, bool outcome_unknown = false) {
  py::object exc = make_error(status, message, sys_errno, outcome_unknown);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
  throw py::error_already_set();
}

// The exception object for a failed call's (status, err), as raise_error
// raises it: the one mapping for the blocking and the non-blocking calls.
py::object error_object(int status, const polylimit_error& err) {
  return make_error(status, err.message[0] ? err.message : polylimit_status_name(status), err.sys_errno,
                    err.outcome_unknown != 0);
}

[[noreturn]] void raise_error(int status, const polylimit_error& err) {
  py::object exc = error_object(status, err);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
  throw py::error_already_set();
}

[[noreturn]] void raise_invalid(const std::string& message) { raise_status(POLYLIMIT_EINVALID, message.c_str(), 0); }

std::string type_name(py::handle obj) { return Py_TYPE(obj.ptr())->tp_name; }

// A key as bytes: str is encoded as UTF-8, bytes pass through (NUL allowed).
// Copied, so the bytes stay valid with the GIL released whatever other
// threads do to the objects.
// A str that UTF-8 cannot encode (a lone surrogate, "\ud800") is the
// library's InvalidArgument naming the key (`name`: "key", "keys[3]"), not
// Python's UnicodeEncodeError.
std::string key_bytes(py::handle key, const char* what = "key", const std::string& name = "key") {
  PyObject* o = key.ptr();
  if (PyBytes_Check(o)) return std::string(PyBytes_AS_STRING(o), static_cast<size_t>(PyBytes_GET_SIZE(o)));
  if (PyUnicode_Check(o)) {
    Py_ssize_t n = 0;
    const char* p = PyUnicode_AsUTF8AndSize(o, &n);
    if (p == nullptr) {
      if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) throw py::error_already_set();
      std::string where;
      PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
      PyErr_Fetch(&type, &value, &tb);
      Py_ssize_t start = -1;
      if (value != nullptr && PyUnicodeEncodeError_GetStart(value, &start) == 0)
        where = " at index " + std::to_string(start);
      PyErr_Clear();
      Py_XDECREF(type);
      Py_XDECREF(value);
      Py_XDECREF(tb);
      raise_invalid(name + " is a str that UTF-8 cannot encode (a lone surrogate" + where + ")");
    }
    return std::string(p, static_cast<size_t>(n));
  }
  throw py::type_error(std::string(what) + " must be str or bytes, not " + type_name(key));
}

// A value that does not fit the C type never reaches the core, so the binding
// reports it, in the core's words: "<name> = <value> is out of range <min>..<max>"
// with the bounds of the generated table (just "is out of range" for a name
// without a bound, such as cost).
[[noreturn]] void raise_out_of_range(const char* name, const std::string& value) {
  std::string message = std::string(name) + " = " + value + " is out of range";
  py::str key(name);
  if (g_bounds != nullptr && g_bounds->contains(key)) {
    py::tuple bound = (*g_bounds)[key];
    message += " " + py::str(bound[0]).cast<std::string>() + ".." + py::str(bound[1]).cast<std::string>();
  }
  raise_invalid(message);
}

// An integer argument: int or anything with __index__, but not bool (a bool
// cost or time is always a mistake). `name` is the core's name for it.
int64_t to_int64(py::handle value, const char* name) {
  PyObject* o = value.ptr();
  if (PyBool_Check(o) || !PyIndex_Check(o))
    throw py::type_error(std::string(name) + " must be an int, not " + type_name(value));
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(o));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  if (overflow != 0) raise_out_of_range(name, py::str(index).cast<std::string>());
  return static_cast<int64_t>(v);
}

// The same for the C `int` fields of the options structs.
int to_int(py::handle value, const char* name) {
  int64_t v = to_int64(value, name);
  if (v < INT_MIN || v > INT_MAX) raise_out_of_range(name, std::to_string(v));
  return static_cast<int>(v);
}

// Runs `f` without the GIL when this thread holds it (and the interpreter is
// not finalizing, when releasing it is not safe): closing a client and
// freeing a limiter give the leases' unused units back to Redis, a round
// trip no other Python thread should wait for.
template <class F>
void without_gil(F&& f) {
#if PY_VERSION_HEX >= 0x030D0000
  const bool finalizing = Py_IsFinalizing();
#else
  const bool finalizing = _Py_IsFinalizing();
#endif
  if (PyGILState_Check() && !finalizing) {
    py::gil_scoped_release nogil;
    f();
  } else {
    f();
  }
}

// The limiter handle, shared by the Limiter and every Decision it made, so
// that decision.headers() can ask the core for the limiter's headers even
// after the Python Limiter is gone (polylimit_limiter_free runs with the last
// owner, without the GIL).
struct FreeLimiter {
  void operator()(polylimit_limiter* l) const {
    without_gil([l] { polylimit_limiter_free(l); });
  }
};
using LimiterHandle = std::shared_ptr<polylimit_limiter>;

// polylimit_limiter_headers: the "Name: value\n" lines, as the core formats them.
// Needs the GIL (raises); the call does no I/O.
std::string limiter_headers(const polylimit_limiter* limiter, const polylimit_decision& d) {
  char* text = nullptr;
  size_t len = 0;
  polylimit_error err;
  int st = polylimit_limiter_headers(limiter, &d, &text, &len, &err);
  if (st != POLYLIMIT_OK) raise_error(st, err);
  std::unique_ptr<char, void (*)(void*)> owned(text, polylimit_free);
  return std::string(text, len);
}

// The same as a dict {name: value}, in the core's order (dicts keep it).
// Only splits the core's lines ("Name: value\n"); formats nothing itself.
py::dict limiter_headers_dict(const polylimit_limiter* limiter, const polylimit_decision& d) {
  std::string text = limiter_headers(limiter, d);
  py::dict out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    size_t colon = text.find(": ", pos);
    if (colon == std::string::npos || colon > end)
      raise_status(POLYLIMIT_ERROR, "malformed header line from the core", 0);
    out[py::str(text.substr(pos, colon - pos))] = py::str(text.substr(colon + 2, end - colon - 2));
    pos = end + 1;
  }
  return out;
}

// A decision as Python sees it; times are also offered in float seconds.
struct Decision {
  polylimit_decision d{};
  LimiterHandle limiter;  // the limiter that decided (for headers()); not part of equality
};

std::string decision_repr(const Decision& self) {
  const polylimit_decision& d = self.d;
  std::string s = "Decision(allowed=";
  s += d.allowed ? "True" : "False";
  s += ", limit=" + std::to_string(d.limit) + ", remaining=" + std::to_string(d.remaining);
  s += ", retry_after=" + py::repr(py::float_(d.retry_after_ms / 1000.0)).cast<std::string>();
  s += ", reset_after=" + py::repr(py::float_(d.reset_after_ms / 1000.0)).cast<std::string>();
  s += ", granted=" + std::to_string(d.granted);
  if (d.cached) s += ", cached=True";
  if (d.degraded) s += ", degraded=True";
  if (d.shadowed) s += ", shadowed=True";
  return s + ")";
}

bool decision_equal(const Decision& a, const Decision& b) {
  bool same = true;
#define POLYLIMIT_SAME(name) same = same && a.d.name == b.d.name;
  POLYLIMIT_DECISION_FIELDS(POLYLIMIT_SAME)
#undef POLYLIMIT_SAME
  return same;
}

// An optional string option of polylimit_client_options: None is NULL (unset).
// `storage` keeps the bytes alive for the call.
const char* optional_string(py::handle value, const char* name, std::string& storage) {
  if (value.is_none()) return nullptr;
  if (!PyUnicode_Check(value.ptr()))
    throw py::type_error(std::string(name) + " must be a str or None, not " + type_name(value));
  storage = key_bytes(value, name, name);  // a lone surrogate: InvalidArgument naming the option
  if (storage.find('\0') != std::string::npos) raise_invalid(std::string(name) + " contains a NUL character");
  return storage.c_str();
}

class Client {
 public:
  // url None: NULL, so the core reads $POLYLIMIT_URL (or refuses: there is no
  // silent default).
  Client(py::handle url, const polylimit_client_options& options) {
    std::string url_storage;
    const char* u = optional_string(url, "url", url_storage);
    polylimit_client* raw = nullptr;
    polylimit_error err;
    // polylimit_client_open only parses and allocates: connections are lazy, so the
    // GIL can stay held.
    int st = polylimit_client_open(u, &options, &raw, &err);
    if (st != POLYLIMIT_OK) raise_error(st, err);
    handle_.reset(raw, polylimit_client_close);
  }

  // Only touched with the GIL held, so no lock is needed. After close() the C
  // handle is gone (polylimit_client_close frees it), so the binding answers
  // for it, with the core's status and words.
  polylimit_client* get() const {
    if (!handle_) raise_status(POLYLIMIT_ECLOSED, "the client is closed", 0);
    return handle_.get();
  }
  // polylimit_client_close: the core closes every limiter made from this
  // client; their later calls fail with POLYLIMIT_ECLOSED, from the core.
  // The handle is taken first (with the GIL): no call starts on it after.
  void close() {
    if (!handle_) return;
    std::shared_ptr<polylimit_client> h = std::move(handle_);
    without_gil([&h] { h.reset(); });
  }
  ~Client() { close(); }
  bool closed() const { return !handle_; }

  // Counters only: no I/O, so the GIL stays held.
  py::dict stats() const {
    polylimit_stats s = POLYLIMIT_STATS_INIT;
    polylimit_error err;
    int st = polylimit_client_stats(get(), &s, &err);
    if (st != POLYLIMIT_OK) raise_error(st, err);
    py::dict out;
#define POLYLIMIT_COUNTER(name) out[#name] = s.name;
    POLYLIMIT_STATS_COUNTERS(POLYLIMIT_COUNTER)
#undef POLYLIMIT_COUNTER
    py::list buckets;
    for (int i = 0; i < POLYLIMIT_STATS_LATENCY_BUCKETS; ++i) {
      py::object le = s.latency_le_us[i] == UINT64_MAX ? py::object(py::float_(INFINITY))
                                                       : py::object(py::int_(s.latency_le_us[i]));
      buckets.append(py::make_tuple(le, s.latency_buckets[i]));
    }
    out["latency_buckets"] = buckets;
    return out;
  }

  std::string stats_prometheus() const {
    char* text = nullptr;
    size_t len = 0;
    polylimit_error err;
    int st = polylimit_client_stats_prometheus(get(), &text, &len, &err);
    if (st != POLYLIMIT_OK) raise_error(st, err);
    std::unique_ptr<char, void (*)(void*)> owned(text, polylimit_free);
    return std::string(text, len);
  }

 private:
  std::shared_ptr<polylimit_client> handle_;
};

// polylimit_clients_stats_prometheus: several clients on one page.
std::string clients_stats_prometheus(py::handle clients) {
  std::vector<polylimit_client*> handles;
  for (py::handle c : py::iter(clients)) {
    if (!py::isinstance<Client>(c)) throw py::type_error("clients must be polylimit clients, not " + type_name(c));
    handles.push_back(c.cast<const Client&>().get());
  }
  polylimit_client* none = nullptr;  // no clients: the core answers (n out of range)
  char* text = nullptr;
  size_t len = 0;
  polylimit_error err;
  int st =
      polylimit_clients_stats_prometheus(handles.empty() ? &none : handles.data(), handles.size(), &text, &len, &err);
  if (st != POLYLIMIT_OK) raise_error(st, err);
  std::unique_ptr<char, void (*)(void*)> owned(text, polylimit_free);
  return std::string(text, len);
}

// A polylimit_queue: completions of the non-blocking checks (submit_check).
// Every method runs with the GIL held and none blocks (poll never waits; it
// reads the replies that are in with the GIL released), so the GIL is what
// serialises the Python-side state. The handle is shared with submit calls in
// progress (they run without the GIL), so close() during one frees the queue
// only when that call is done.
class Queue {
 public:
  Queue() : pid_(::getpid()) {
    polylimit_queue* raw = nullptr;
    polylimit_error err;
    int st = polylimit_queue_new(&raw, &err);
    if (st != POLYLIMIT_OK) raise_error(st, err);
    handle_.reset(raw, polylimit_queue_free);
  }
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;
  ~Queue() { close(); }

  std::shared_ptr<polylimit_queue> handle() const {
    if (!handle_) raise_status(POLYLIMIT_ECLOSED, "the queue is closed", 0);
    return handle_;
  }
  int fd() const { return handle_ ? polylimit_queue_fd(handle_.get()) : -1; }
  size_t outstanding() const { return handle_ ? polylimit_queue_outstanding(handle_.get()) : 0; }
  void wake() {
    if (handle_) polylimit_queue_wake(handle_.get());
  }
  bool closed() const { return !handle_; }

  // Checks still in flight complete into the queue's memory and are dropped
  // (polylimit_queue_free). In a forked child the parent's queue is left
  // alone: its lock may be held by a thread that does not exist here.
  void close() {
    if (handle_ && ::getpid() != pid_) new std::shared_ptr<polylimit_queue>(std::move(handle_));  // leaked on purpose
    handle_.reset();
    limiters_.clear();
  }

  // Up to `max` waiting completions, oldest first, without waiting: a list of
  // (token, 0, Decision) or (token, status, Error), the error as the blocking
  // check raises it for the same failure.
  py::list poll(py::handle max) {
    int64_t n = to_int64(max, "max");
    if (n < 1 || n > kMaxPoll)
      raise_invalid("max = " + std::to_string(n) + " is out of range 1.." + std::to_string(kMaxPoll));
    py::list out;
    if (!handle_) return out;  // closed: nothing will arrive
    if (buffer_.size() < static_cast<size_t>(n)) buffer_.resize(static_cast<size_t>(n));
    // Another thread's poll has the buffer: it takes what is there (the fd
    // stays readable while completions wait).
    if (polling_) return out;
    size_t got;
    {
      // The poll reads the replies that are in and writes the calls queued
      // meanwhile (it never waits for the server): not under the GIL.
      std::shared_ptr<polylimit_queue> q = handle_;
      polylimit_completion* buffer = buffer_.data();
      polling_ = true;
      py::gil_scoped_release nogil;
      got = polylimit_queue_poll(q.get(), buffer, static_cast<size_t>(n), 0);
    }
    polling_ = false;
    for (size_t i = 0; i < got; ++i) {
      const polylimit_completion& c = buffer_[i];
      LimiterHandle limiter;
      auto it = limiters_.find(c.token);
      if (it != limiters_.end()) {
        limiter = std::move(it->second);
        limiters_.erase(it);
      }
      py::object result = c.status == POLYLIMIT_OK ? py::cast(Decision{c.decision, std::move(limiter)})
                                                   : error_object(c.status, c.error);
      out.append(py::make_tuple(c.token, c.status, std::move(result)));
    }
    return out;
  }

  // The limiter a token's Decision belongs to (for decision.headers()),
  // recorded before the submit; forgotten if the submit fails.
  void track(uint64_t token, const LimiterHandle& limiter) {
    if (!limiters_.emplace(token, limiter).second) raise_invalid("token " + std::to_string(token) + " is in flight");
  }
  void untrack(uint64_t token) { limiters_.erase(token); }

  static constexpr int64_t kMaxPoll = 1024;

 private:
  std::shared_ptr<polylimit_queue> handle_;
  pid_t pid_;
  std::unordered_map<uint64_t, LimiterHandle> limiters_;
  std::vector<polylimit_completion> buffer_;
  bool polling_ = false;  // a poll runs without the GIL (written with it held)
};

class Limiter {
 public:
  // spec: a rate spec (polylimit_limiter_new_spec), or None for limit/window_ms/burst
  // (polylimit_limiter_new). Everything is validated by the core, before any I/O;
  // the binding only converts types.
  Limiter(Client& client, py::object spec, py::handle limit, py::handle window_ms, py::handle burst,
          py::handle algorithm, const std::string& prefix, py::handle clock, py::handle deny_cache_size,
          py::handle failure_policy, py::handle breaker_failures, py::handle breaker_cooldown_ms, bool shadow,
          py::handle block_ms, py::handle durable_replicas, py::handle durable_timeout_ms, bool durable_aof,
          py::handle lease_units, py::handle lease_ms)
      : prefix_(prefix) {
    if (prefix.find('\0') != std::string::npos) raise_invalid("prefix contains a NUL character");
    polylimit_limiter_options opts;
    polylimit_limiter_options_init(&opts, POLYLIMIT_LIMITER_OPTIONS_VERSION);
    algorithm_ = opts.algorithm = to_int(algorithm, "algorithm");
    opts.prefix = prefix.c_str();
    clock_ = opts.clock = to_int(clock, "clock");
    opts.deny_cache_size = to_int(deny_cache_size, "deny_cache_size");
    opts.failure_policy = to_int(failure_policy, "failure_policy");
    opts.breaker_failures = to_int(breaker_failures, "breaker_failures");
    opts.breaker_cooldown_ms = to_int(breaker_cooldown_ms, "breaker_cooldown_ms");
    opts.shadow = shadow ? 1 : 0;
    opts.block_ms = to_int64(block_ms, "block_ms");
    opts.durable_replicas = to_int(durable_replicas, "durable_replicas");
    opts.durable_timeout_ms = to_int(durable_timeout_ms, "durable_timeout_ms");
    opts.durable_aof = durable_aof ? 1 : 0;
    opts.lease_units = to_int64(lease_units, "lease_units");
    opts.lease_ms = to_int64(lease_ms, "lease_ms");
    polylimit_limiter* raw = nullptr;
    polylimit_error err;
    int st;
    if (!spec.is_none()) {
      if (!PyUnicode_Check(spec.ptr())) throw py::type_error("rate spec must be a str, not " + type_name(spec));
      spec_ = spec.cast<std::string>();
      if (spec_.find('\0') != std::string::npos) raise_invalid("rate spec contains a NUL character");
      st = polylimit_limiter_new_spec(client.get(), spec_.c_str(), &opts, &raw, &err);
    } else {
      limit_ = opts.limit = to_int64(limit, "limit");
      window_ms_ = opts.window_ms = to_int64(window_ms, "window_ms");
      burst_ = opts.burst = to_int64(burst, "burst");
      st = polylimit_limiter_new(client.get(), &opts, &raw, &err);
    }
    if (st != POLYLIMIT_OK) raise_error(st, err);
    handle_.reset(raw, FreeLimiter());
  }

  // Every call below: arguments converted with the GIL held, the polylimit_* call
  // made without it, the Decision (or the error) built with it again. The
  // handle lives as long as this object, which the caller holds during the
  // call; after the client is closed the core answers POLYLIMIT_ECLOSED.
  template <class Call>
  Decision decide(Call&& call) {
    polylimit_limiter* h = handle_.get();
    Decision out;
    out.limiter = handle_;
    polylimit_error err;
    int st;
    {
      py::gil_scoped_release nogil;
      st = call(h, &out.d, &err);
    }
    if (st != POLYLIMIT_OK) raise_error(st, err);
    return out;
  }

  Decision check(py::handle key, py::handle cost) {
    std::string k = key_bytes(key);
    int64_t c = to_int64(cost, "cost");
    return decide([&](polylimit_limiter* l, polylimit_decision* d, polylimit_error* e) {
      return polylimit_limiter_check(l, k.data(), k.size(), c, d, e);
    });
  }

  Decision check_at(py::handle key, py::handle cost, py::handle now_us) {
    std::string k = key_bytes(key);
    int64_t c = to_int64(cost, "cost");
    int64_t now = to_int64(now_us, "now_us");
    return decide([&](polylimit_limiter* l, polylimit_decision* d, polylimit_error* e) {
      return polylimit_limiter_check_at(l, k.data(), k.size(), c, now, d, e);
    });
  }

  Decision peek(py::handle key) {
    std::string k = key_bytes(key);
    return decide([&](polylimit_limiter* l, polylimit_decision* d, polylimit_error* e) {
      return polylimit_limiter_peek(l, k.data(), k.size(), d, e);
    });
  }

  Decision check_at_most(py::handle key, py::handle max_cost) {
    std::string k = key_bytes(key);
    int64_t c = to_int64(max_cost, "max_cost");
    return decide([&](polylimit_limiter* l, polylimit_decision* d, polylimit_error* e) {
      return polylimit_limiter_check_at_most(l, k.data(), k.size(), c, d, e);
    });
  }

  Decision acquire(py::handle key, py::handle cost, py::handle timeout_ms) {
    std::string k = key_bytes(key);
    int64_t c = to_int64(cost, "cost");
    int64_t t = to_int64(timeout_ms, "timeout_ms");
    return decide([&](polylimit_limiter* l, polylimit_decision* d, polylimit_error* e) {
      return polylimit_limiter_acquire(l, k.data(), k.size(), c, t, d, e);
    });
  }

  Decision check_limit(py::handle key, py::handle cost, py::handle limit, py::handle window_ms) {
    std::string k = key_bytes(key);
    int64_t c = to_int64(cost, "cost");
    int64_t n = to_int64(limit, "limit");
    int64_t w = to_int64(window_ms, "window_ms");
    return decide([&](polylimit_limiter* l, polylimit_decision* d, polylimit_error* e) {
      return polylimit_limiter_check_limit(l, k.data(), k.size(), c, n, w, d, e);
    });
  }

  Decision refund(py::handle key, py::handle units) {
    std::string k = key_bytes(key);
    int64_t u = to_int64(units, "units");
    return decide([&](polylimit_limiter* l, polylimit_decision* d, polylimit_error* e) {
      return polylimit_limiter_refund(l, k.data(), k.size(), u, d, e);
    });
  }

  void reset(py::handle key) {
    std::string k = key_bytes(key);
    polylimit_limiter* h = handle_.get();
    polylimit_error err;
    int st;
    {
      py::gil_scoped_release nogil;
      st = polylimit_limiter_reset(h, k.data(), k.size(), &err);
    }
    if (st != POLYLIMIT_OK) raise_error(st, err);
  }

  // A batch's keys as bytes and its cost, converted as check_many does (a
  // single str or bytes is refused; a bad key names its index).
  static std::vector<std::string> batch_keys(py::handle keys, py::handle cost, int64_t& c) {
    if (PyUnicode_Check(keys.ptr()) || PyBytes_Check(keys.ptr()))
      throw py::type_error("keys must be an iterable of keys, not a single " + type_name(keys));
    c = to_int64(cost, "cost");
    std::vector<std::string> ks;
    for (py::handle k : py::iter(keys))
      ks.push_back(key_bytes(k, "every key", "keys[" + std::to_string(ks.size()) + "]"));
    return ks;
  }

  // polylimit_limiter_check_many: one pipelined round trip for every key, the
  // GIL released around it. Every key comes back with its own status and
  // message (statuses[i], key_errors[i]): the binding reads them, it never
  // parses a message or guesses which key failed.
  //  - The call rejected before any key (statuses untouched, e.g. too many
  //    keys): raised, whatever return_exceptions says.
  //  - return_exceptions: a list with a Decision or an Error (.index = i) per key.
  //  - otherwise, if a key failed: the call's error (err, "keys[i]: ..." as the
  //    core words it) is raised, with .index (the first key that failed) and
  //    .results (what return_exceptions would have returned: the other keys
  //    were decided, and consumed, all the same).
  py::list check_many(py::handle keys, py::handle cost, bool return_exceptions) {
    int64_t c = 0;
    std::vector<std::string> ks = batch_keys(keys, cost, c);
    const size_t n = ks.size();
    std::vector<const void*> ptrs(n);
    std::vector<size_t> lens(n);
    for (size_t i = 0; i < n; ++i) {
      ptrs[i] = ks[i].data();
      lens[i] = ks[i].size();
    }
    constexpr int kUntouched = 1;  // no POLYLIMIT_* status is positive
    std::vector<polylimit_decision> ds(n);
    std::vector<int> statuses(n, kUntouched);
    std::vector<polylimit_error> key_errors(n);
    polylimit_error err;
    polylimit_error_clear(&err);
    polylimit_limiter* h = handle_.get();
    int st;
    {
      py::gil_scoped_release nogil;
      st = polylimit_limiter_check_many(h, ptrs.data(), lens.data(), n, c, ds.data(), statuses.data(),
                                        key_errors.data(), &err);
    }
    if (st != POLYLIMIT_OK && (n == 0 || statuses[0] == kUntouched)) raise_error(st, err);
    py::list out(n);
    size_t first_failed = n;
    for (size_t i = 0; i < n; ++i) {
      if (statuses[i] == POLYLIMIT_OK) {
        out[i] = py::cast(Decision{ds[i], handle_});
        continue;
      }
      const polylimit_error& ke = key_errors[i];
      py::object e = make_error(statuses[i], ke.message[0] ? ke.message : polylimit_status_name(statuses[i]),
                                ke.sys_errno, ke.outcome_unknown != 0);
      e.attr("index") = py::int_(i);
      out[i] = e;
      if (first_failed == n) first_failed = i;
    }
    if (return_exceptions || st == POLYLIMIT_OK) return out;
    if (first_failed == n) raise_error(st, err);  // not a key's failure (the ABI says it cannot happen)
    py::object exc = make_error(st, err.message[0] ? err.message : polylimit_status_name(st),
                                key_errors[first_failed].sys_errno, err.outcome_unknown != 0);
    exc.attr("index") = py::int_(first_failed);
    exc.attr("results") = out;
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
    throw py::error_already_set();
  }

  // polylimit_limiter_submit_check: check(key, cost) whose result arrives in
  // `queue` as (token, ...). The GIL is released around the call: the first
  // check of a client may connect. A refused submit raises what check would.
  void submit_check(py::handle key, py::handle cost, Queue& queue, uint64_t token) {
    std::string k = key_bytes(key);
    int64_t c = to_int64(cost, "cost");
    std::shared_ptr<polylimit_queue> q = queue.handle();
    queue.track(token, handle_);
    polylimit_limiter* h = handle_.get();
    polylimit_error err;
    int st;
    {
      py::gil_scoped_release nogil;
      st = polylimit_limiter_submit_check(h, k.data(), k.size(), c, q.get(), token, &err);
    }
    if (st != POLYLIMIT_OK) {
      queue.untrack(token);
      raise_error(st, err);
    }
  }

  // The other non-blocking calls, as submit_check: their result arrives in
  // `queue` as (token, ...); reset's Decision is empty.
  void submit_peek(py::handle key, Queue& queue, uint64_t token) {
    std::string k = key_bytes(key);
    submit_op(queue, token, [&](polylimit_limiter* h, polylimit_queue* q, polylimit_error* e) {
      return polylimit_limiter_submit_peek(h, k.data(), k.size(), q, token, e);
    });
  }
  void submit_reset(py::handle key, Queue& queue, uint64_t token) {
    std::string k = key_bytes(key);
    submit_op(queue, token, [&](polylimit_limiter* h, polylimit_queue* q, polylimit_error* e) {
      return polylimit_limiter_submit_reset(h, k.data(), k.size(), q, token, e);
    });
  }
  void submit_check_at_most(py::handle key, py::handle max_cost, Queue& queue, uint64_t token) {
    std::string k = key_bytes(key);
    int64_t m = to_int64(max_cost, "max_cost");
    submit_op(queue, token, [&](polylimit_limiter* h, polylimit_queue* q, polylimit_error* e) {
      return polylimit_limiter_submit_check_at_most(h, k.data(), k.size(), m, q, token, e);
    });
  }
  void submit_check_limit(py::handle key, py::handle cost, py::handle limit, py::handle window_ms, Queue& queue,
                          uint64_t token) {
    std::string k = key_bytes(key);
    int64_t c = to_int64(cost, "cost"), l = to_int64(limit, "limit"), w = to_int64(window_ms, "window_ms");
    submit_op(queue, token, [&](polylimit_limiter* h, polylimit_queue* q, polylimit_error* e) {
      return polylimit_limiter_submit_check_limit(h, k.data(), k.size(), c, l, w, q, token, e);
    });
  }
  void submit_refund(py::handle key, py::handle units, Queue& queue, uint64_t token) {
    std::string k = key_bytes(key);
    int64_t u = to_int64(units, "units");
    submit_op(queue, token, [&](polylimit_limiter* h, polylimit_queue* q, polylimit_error* e) {
      return polylimit_limiter_submit_refund(h, k.data(), k.size(), u, q, token, e);
    });
  }

  // submit_check for every key (tokens first_token, first_token + 1, ...),
  // with one GIL release. Keys are converted first, as check_many does (a bad
  // key refuses the whole call before any is submitted). Returns a list with
  // None for each key submitted and the Error (.index = i) for each refused.
  py::list submit_check_many(py::handle keys, py::handle cost, Queue& queue, uint64_t first_token) {
    int64_t c = 0;
    std::vector<std::string> ks = batch_keys(keys, cost, c);
    const size_t n = ks.size();
    std::shared_ptr<polylimit_queue> q = queue.handle();
    for (size_t i = 0; i < n; ++i) {
      try {
        queue.track(first_token + i, handle_);
      } catch (...) {
        for (size_t j = 0; j < i; ++j) queue.untrack(first_token + j);
        throw;
      }
    }
    std::vector<std::pair<size_t, polylimit_error>> refused;  // only these need an error struct
    polylimit_limiter* h = handle_.get();
    {
      py::gil_scoped_release nogil;
      polylimit_error err;
      for (size_t i = 0; i < n; ++i) {
        int st = polylimit_limiter_submit_check(h, ks[i].data(), ks[i].size(), c, q.get(), first_token + i, &err);
        if (st != POLYLIMIT_OK) {
          err.code = st;
          refused.emplace_back(i, err);
        }
      }
    }
    py::list out(n);
    for (size_t i = 0; i < n; ++i) out[i] = py::none();
    for (const auto& r : refused) {
      queue.untrack(first_token + r.first);
      py::object e = error_object(r.second.code, r.second);
      e.attr("index") = py::int_(r.first);
      out[r.first] = e;
    }
    return out;
  }

  // Runs submit(limiter, queue, &err) without the GIL (a first call may
  // connect), the arguments converted before; a refused submit raises.
  template <typename Submit>
  void submit_op(Queue& queue, uint64_t token, Submit&& submit) {
    std::shared_ptr<polylimit_queue> q = queue.handle();
    queue.track(token, handle_);
    polylimit_limiter* h = handle_.get();
    polylimit_error err;
    int st;
    {
      py::gil_scoped_release nogil;
      st = submit(h, q.get(), &err);
    }
    if (st != POLYLIMIT_OK) {
      queue.untrack(token);
      raise_error(st, err);
    }
  }

  // The headers for a decision; the one of any limiter is accepted (the core
  // formats it with this limiter's policy).
  py::dict headers(const Decision& decision) const { return limiter_headers_dict(handle_.get(), decision.d); }

  py::object spec() const { return spec_.empty() ? py::object(py::none()) : py::object(py::str(spec_)); }
  int64_t limit() const { return limit_; }
  int64_t window_ms() const { return window_ms_; }
  int64_t burst() const { return burst_; }
  int algorithm() const { return algorithm_; }
  int clock() const { return clock_; }
  const std::string& prefix() const { return prefix_; }
  polylimit_limiter* raw() const { return handle_.get(); }

  // A limiter the core made (polylimit_http_policy_limiter: a new handle,
  // freed with this object). Its rate is the policy document's: spec None,
  // limit and window 0, prefix "".
  static std::unique_ptr<Limiter> adopt(polylimit_limiter* raw) {
    std::unique_ptr<Limiter> out(new Limiter());
    out->handle_.reset(raw, FreeLimiter());
    return out;
  }

 private:
  Limiter() = default;
  LimiterHandle handle_;
  int64_t limit_ = 0, window_ms_ = 0, burst_ = 0;  // 0 for a spec limiter
  int algorithm_ = 0, clock_ = 0;
  std::string prefix_, spec_;
};

// ---- the HTTP request policy (polylimit_http_*) ------------------------------
//
// The one per-request logic of every language's middleware
// (docs/integrations/contract.md), bound as the C ABI offers it. prepare,
// answer and refund_due are pure computations of microseconds (no I/O), so
// they run with the GIL held; the check itself runs on the Limiter's own
// blocking or asyncio path, in Python.

// A polylimit_str from an optional str/bytes argument; `storage` keeps the
// bytes alive for the call. None: absent (ptr NULL).
polylimit_str optional_str(py::handle value, const char* name, std::string& storage) {
  if (value.is_none()) return polylimit_str{nullptr, 0};
  storage = key_bytes(value, name, name);
  return polylimit_str{storage.data(), storage.size()};
}

// One step of a request (polylimit_http_step), as prepare() returned it.
struct HttpStep {
  polylimit_http_step s{};
};

// The C handle of a policy; a live policy's current() gives a new reference.
using HttpPolicyHandle = std::shared_ptr<polylimit_http_policy>;

// The key as str when it is UTF-8 (always, unless the application's key is
// bytes that are not), else bytes; either is accepted by Limiter.check.
py::object step_key(const HttpStep& step) {
  PyObject* text = PyUnicode_DecodeUTF8(step.s.key, static_cast<Py_ssize_t>(step.s.key_len), "strict");
  if (text != nullptr) return py::reinterpret_steal<py::object>(text);
  PyErr_Clear();
  return py::bytes(step.s.key, step.s.key_len);
}

// (status, body, [(name, value), ...]) of a polylimit_http_response: the
// core's lines split at ": ", in the core's order; nothing formatted here.
py::tuple response_tuple(const polylimit_http_response& r) {
  py::list headers;
  std::string text(r.headers, r.headers_len);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    size_t colon = text.find(": ", pos);
    if (colon == std::string::npos || colon > end)
      raise_status(POLYLIMIT_ERROR, "malformed header line from the core", 0);
    headers.append(
        py::make_tuple(py::str(text.substr(pos, colon - pos)), py::str(text.substr(colon + 2, end - colon - 2))));
    pos = end + 1;
  }
  return py::make_tuple(r.status, py::str(std::string(r.body, r.body_len)), headers);
}

struct FreeHttpPolicy {
  void operator()(polylimit_http_policy* p) const {
    // The policy may hold the last reference to its limiters, whose freeing
    // gives leased units back to Redis: not under the GIL.
    without_gil([p] { polylimit_http_policy_free(p); });
  }
};

// A policy document as bytes (str only: the document is text).
std::string document_bytes(py::handle document) {
  if (!PyUnicode_Check(document.ptr())) throw py::type_error("document must be a str, not " + type_name(document));
  return key_bytes(document, "document", "document");
}

// The C handles of the application's limiters (borrowed for the call).
std::vector<polylimit_limiter*> limiter_handles(py::handle limiters) {
  std::vector<polylimit_limiter*> handles;
  for (py::handle l : py::iter(limiters)) {
    if (!py::isinstance<Limiter>(l)) throw py::type_error("limiters must be polylimit limiters, not " + type_name(l));
    handles.push_back(l.cast<const Limiter&>().raw());
  }
  return handles;
}

class HttpPolicy {
 public:
  HttpPolicy(py::handle document, py::handle limiters) {
    std::string doc = document_bytes(document);
    std::vector<polylimit_limiter*> handles = limiter_handles(limiters);
    polylimit_http_policy* raw = nullptr;
    polylimit_error err;
    int st = polylimit_http_policy_new(doc.data(), doc.size(), handles.empty() ? nullptr : handles.data(),
                                       handles.size(), &raw, &err);
    if (st != POLYLIMIT_OK) raise_error(st, err);
    handle_.reset(raw, FreeHttpPolicy());
  }
  explicit HttpPolicy(HttpPolicyHandle handle) : handle_(std::move(handle)) {}

  // polylimit_http_policy_load: a document (JSON or TOML) whose limits the
  // core makes on `client`. Parsing only: the limiters connect lazily.
  static std::unique_ptr<HttpPolicy> load(Client& client, py::handle document, py::handle limiters) {
    std::string doc = document_bytes(document);
    std::vector<polylimit_limiter*> handles = limiter_handles(limiters);
    polylimit_http_policy* raw = nullptr;
    polylimit_error err;
    int st = polylimit_http_policy_load(client.get(), doc.data(), doc.size(),
                                        handles.empty() ? nullptr : handles.data(), handles.size(), &raw, &err);
    if (st != POLYLIMIT_OK) raise_error(st, err);
    return std::make_unique<HttpPolicy>(HttpPolicyHandle(raw, FreeHttpPolicy()));
  }

  uint64_t id() const { return polylimit_http_policy_id(handle_.get()); }
  size_t limiter_count() const { return polylimit_http_policy_limiter_count(handle_.get()); }
  int64_t resolver_timeout_ms() const { return polylimit_http_policy_resolver_timeout_ms(handle_.get()); }
  // Limiter `index` (a step's limiter) as a Limiter of its own handle.
  std::unique_ptr<Limiter> limiter(size_t index) const {
    polylimit_limiter* raw = nullptr;
    polylimit_error err;
    int st = polylimit_http_policy_limiter(handle_.get(), index, &raw, &err);
    if (st != POLYLIMIT_OK) raise_error(st, err);
    return Limiter::adopt(raw);
  }

  py::list header_names() const {
    py::list out;
    for (size_t i = 0; i < polylimit_http_policy_header_count(handle_.get()); ++i)
      out.append(py::str(polylimit_http_policy_header_name(handle_.get(), i)));
    return out;
  }
  size_t rule_count() const { return polylimit_http_policy_rule_count(handle_.get()); }
  std::string rule_name(size_t rule) const {
    const char* n = polylimit_http_policy_rule_name(handle_.get(), rule);
    if (n == nullptr) throw py::index_error("rule " + std::to_string(rule) + " is out of range");
    return n;
  }
  int rule_limiter(size_t rule) const {
    if (rule >= rule_count()) throw py::index_error("rule " + std::to_string(rule) + " is out of range");
    return polylimit_http_policy_rule_limiter(handle_.get(), rule);
  }

  HttpStep prepare(py::handle method, py::handle path, py::handle route, py::handle peer, py::handle headers,
                   py::handle user, py::handle tenant, py::handle app_key, py::handle cost, py::handle plan) const {
    std::string s_method, s_path, s_route, s_peer, s_user, s_tenant, s_app, s_plan;
    polylimit_http_request req{};
    req.version = POLYLIMIT_HTTP_REQUEST_VERSION;
    req.method = optional_str(method, "method", s_method);
    req.path = optional_str(path, "path", s_path);
    req.route = optional_str(route, "route", s_route);
    req.peer = optional_str(peer, "peer", s_peer);
    req.user = optional_str(user, "user", s_user);
    req.tenant = optional_str(tenant, "tenant", s_tenant);
    req.app_key = optional_str(app_key, "app_key", s_app);
    req.plan = optional_str(plan, "plan", s_plan);
    req.cost = cost.is_none() ? 0 : to_int64(cost, "cost");
    std::vector<std::string> values;
    std::vector<polylimit_str> strs;
    if (!headers.is_none()) {
      py::sequence seq = py::reinterpret_borrow<py::sequence>(headers);
      values.resize(seq.size());
      for (size_t i = 0; i < values.size(); ++i) strs.push_back(optional_str(seq[i], "header value", values[i]));
    }
    req.headers = strs.empty() ? nullptr : strs.data();
    req.header_count = strs.size();
    HttpStep step;
    polylimit_error err;
    int st = polylimit_http_prepare(handle_.get(), &req, &step.s, &err);
    if (st != POLYLIMIT_OK) raise_error(st, err);
    return step;
  }

  // The response for a step: RESPOND (decision None), or CHECK with the
  // check's decision (None: the check failed).
  py::tuple answer(const HttpStep& step, py::handle decision) const {
    const polylimit_decision* d = nullptr;
    if (!decision.is_none()) d = &decision.cast<const Decision&>().d;
    auto r = std::make_unique<polylimit_http_response>();
    polylimit_error err;
    int st = polylimit_http_answer(handle_.get(), &step.s, d, r.get(), &err);
    if (st != POLYLIMIT_OK) raise_error(st, err);
    return response_tuple(*r);
  }

  bool refund_due(const HttpStep& step, const Decision& decision, int status) const {
    return polylimit_http_refund_due(handle_.get(), &step.s, &decision.d, status) == 1;
  }

  // count_when: whether a response with `status` of rule `rule` keeps its units.
  bool counts(size_t rule, int status) const {
    if (rule >= rule_count()) throw py::index_error("rule " + std::to_string(rule) + " is out of range");
    polylimit_http_step s{};
    s.action = POLYLIMIT_HTTP_CHECK;
    s.rule = static_cast<int>(rule);
    s.cost = 1;
    polylimit_decision admitted{};
    admitted.allowed = 1;
    return polylimit_http_refund_due(handle_.get(), &s, &admitted, status) == 0;
  }

  std::string metrics_prometheus() const {
    char* text = nullptr;
    size_t len = 0;
    polylimit_error err;
    int st = polylimit_http_policy_metrics_prometheus(handle_.get(), &text, &len, &err);
    if (st != POLYLIMIT_OK) raise_error(st, err);
    std::unique_ptr<char, void (*)(void*)> owned(text, polylimit_free);
    return std::string(text, len);
  }

 private:
  std::shared_ptr<polylimit_http_policy> handle_;
};

// polylimit_http_live: a policy replaced while requests run. Per request the
// package takes current() (a reference the request keeps until it is
// settled). Loading, reloading and freeing run without the GIL: they read
// files, make limiters, and freeing joins the watching thread and may free
// the last limiters of the old policy.
class HttpLive {
 public:
  HttpLive(Client& client, py::handle document, py::handle limiters) {
    std::string doc = document_bytes(document);
    std::vector<polylimit_limiter*> handles = limiter_handles(limiters);
    polylimit_client* c = client.get();
    polylimit_http_live* raw = nullptr;
    polylimit_error err;
    int st;
    {
      py::gil_scoped_release nogil;
      st = polylimit_http_live_new(c, doc.data(), doc.size(), handles.empty() ? nullptr : handles.data(),
                                   handles.size(), &raw, &err);
    }
    if (st != POLYLIMIT_OK) raise_error(st, err);
    live_.reset(raw, FreeLive());
  }
  HttpLive(Client& client, const std::string& path, py::handle limiters, int watch_ms) {
    if (path.find('\0') != std::string::npos) raise_invalid("path contains a NUL character");
    std::vector<polylimit_limiter*> handles = limiter_handles(limiters);
    polylimit_client* c = client.get();
    polylimit_http_live* raw = nullptr;
    polylimit_error err;
    int st;
    {
      py::gil_scoped_release nogil;
      st = polylimit_http_live_open(c, path.c_str(), handles.empty() ? nullptr : handles.data(), handles.size(),
                                    watch_ms, &raw, &err);
    }
    if (st != POLYLIMIT_OK) raise_error(st, err);
    live_.reset(raw, FreeLive());
  }
  HttpLive(const HttpLive&) = delete;
  HttpLive& operator=(const HttpLive&) = delete;
  ~HttpLive() { close(); }

  // Stops the watching thread and drops the live policy; requests that took
  // a policy keep it. Idempotent.
  // A reload in progress in another thread keeps it until it is done.
  void close() {
    std::shared_ptr<polylimit_http_live> l = std::move(live_);
    without_gil([&l] { l.reset(); });
  }
  bool closed() const { return !live_; }

  // Taken with the GIL held; the copy keeps the handle for a call made without it.
  std::shared_ptr<polylimit_http_live> handle() const {
    if (!live_) raise_status(POLYLIMIT_ECLOSED, "the live policy is closed", 0);
    return live_;
  }
  polylimit_http_live* get() const { return handle().get(); }

  std::unique_ptr<HttpPolicy> current() const {
    polylimit_http_policy* p = polylimit_http_live_current(get());
    if (p == nullptr) raise_status(POLYLIMIT_ENOMEM, "out of memory", 0);
    return std::make_unique<HttpPolicy>(HttpPolicyHandle(p, FreeHttpPolicy()));
  }
  uint64_t current_id() const {
    HttpPolicyHandle p(polylimit_http_live_current(get()), FreeHttpPolicy());
    if (!p) raise_status(POLYLIMIT_ENOMEM, "out of memory", 0);
    return polylimit_http_policy_id(p.get());
  }

  void reload(py::handle document) {
    std::string doc = document_bytes(document);
    std::shared_ptr<polylimit_http_live> l = handle();
    polylimit_error err;
    int st;
    {
      py::gil_scoped_release nogil;
      st = polylimit_http_live_reload(l.get(), doc.data(), doc.size(), &err);
    }
    if (st != POLYLIMIT_OK) raise_error(st, err);
  }
  void reload_file() {
    std::shared_ptr<polylimit_http_live> l = handle();
    polylimit_error err;
    int st;
    {
      py::gil_scoped_release nogil;
      st = polylimit_http_live_reload_file(l.get(), &err);
    }
    if (st != POLYLIMIT_OK) raise_error(st, err);
  }
  uint64_t generation() const { return polylimit_http_live_generation(get()); }
  std::string last_error() const { return text_of(polylimit_http_live_last_error); }
  std::string metrics_prometheus() const { return text_of(polylimit_http_live_metrics_prometheus); }

  py::object cached_plan(py::handle tenant) const {
    std::string t = key_bytes(tenant, "tenant", "tenant");
    char plan[256];
    if (polylimit_http_live_cached_plan(get(), t.data(), t.size(), plan, sizeof plan) != 1) return py::none();
    return py::str(plan);
  }
  void cache_plan(py::handle tenant, py::handle plan) {
    std::string t = key_bytes(tenant, "tenant", "tenant");
    std::string p = key_bytes(plan, "plan", "plan");
    polylimit_error err;
    int st = polylimit_http_live_cache_plan(get(), t.data(), t.size(), p.data(), p.size(), &err);
    if (st != POLYLIMIT_OK) raise_error(st, err);
  }

 private:
  template <class F>
  std::string text_of(F f) const {
    char* text = nullptr;
    size_t len = 0;
    polylimit_error err;
    int st = f(get(), &text, &len, &err);
    if (st != POLYLIMIT_OK) raise_error(st, err);
    std::unique_ptr<char, void (*)(void*)> owned(text, polylimit_free);
    return std::string(text, len);
  }

  struct FreeLive {
    void operator()(polylimit_http_live* l) const {
      without_gil([l] { polylimit_http_live_free(l); });
    }
  };
  std::shared_ptr<polylimit_http_live> live_;
};

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "polylimit's extension module: the C ABI bound with pybind11. Use the polylimit package instead.";

  // A module built against a newer header than the library it runs with
  // would call functions that do not exist there.
  if (polylimit_version_number() < POLYLIMIT_VERSION_NUMBER)
    throw py::import_error(std::string("polylimit._core was built for polylimit ") + POLYLIMIT_VERSION_STRING +
                           " but the library is " + polylimit_version_string());

  py::module_ errors = py::module_::import("polylimit._errors");
  g_error_classes = new py::dict(errors.attr("BY_STATUS"));
  g_base_error = new py::object(errors.attr("Error"));
  g_bounds = new py::dict(py::module_::import("polylimit._vocabulary").attr("BOUNDS"));

  m.attr("VERSION_STRING") = POLYLIMIT_VERSION_STRING;  // compiled-in header version
  m.attr("VERSION_NUMBER") = POLYLIMIT_VERSION_NUMBER;
  m.def(
      "version_string", [] { return std::string(polylimit_version_string()); }, "Run-time library version string.");
  m.def(
      "version_number", [] { return polylimit_version_number(); }, "Run-time library version number.");
  m.def(
      "status_name", [](int code) { return std::string(polylimit_status_name(code)); }, py::arg("code"));
  // The core's redaction (polylimit_redact_url): every repr and message of
  // the package that shows a URL goes through it.
  m.def(
      "redact_url",
      [](py::handle url) {
        if (!PyUnicode_Check(url.ptr())) throw py::type_error("url must be a str, not " + type_name(url));
        // Never echoed: a str UTF-8 cannot encode is InvalidArgument naming
        // "url"; a NUL would end the C string early, so the redaction sees
        // all of the text.
        std::string text = key_bytes(url, "url", "url");
        std::replace(text.begin(), text.end(), '\0', ' ');
        char* out = nullptr;
        size_t len = 0;
        polylimit_error err;
        int st = polylimit_redact_url(text.c_str(), &out, &len, &err);
        if (st != POLYLIMIT_OK) raise_error(st, err);
        std::string shown(out, len);
        polylimit_free(out);
        return shown;
      },
      py::arg("url"), "The URL with every password replaced by ***.");
  // Status codes, enum names and bounds: polylimit._vocabulary, generated
  // from the same table as polylimit.h.

  py::class_<Decision>(m, "Decision", "The answer to one check; bool(decision) is decision.allowed.")
      // A decision made by hand (tests, an HTTP answer for given numbers); it
      // has no limiter, so headers() refuses.
      .def(py::init([](bool allowed, py::handle limit, py::handle remaining, py::handle retry_after_ms,
                       py::handle reset_after_ms, bool shadowed, bool degraded, bool cached, py::handle granted) {
             Decision out;
             out.d.allowed = allowed ? 1 : 0;
             out.d.shadowed = shadowed ? 1 : 0;
             out.d.degraded = degraded ? 1 : 0;
             out.d.cached = cached ? 1 : 0;
             out.d.limit = to_int64(limit, "limit");
             out.d.remaining = to_int64(remaining, "remaining");
             out.d.retry_after_ms = to_int64(retry_after_ms, "retry_after_ms");
             out.d.reset_after_ms = to_int64(reset_after_ms, "reset_after_ms");
             out.d.granted = granted.is_none() ? (allowed ? 1 : 0) : to_int64(granted, "granted");
             return out;
           }),
           py::kw_only(), py::arg("allowed"), py::arg("limit") = 0, py::arg("remaining") = 0,
           py::arg("retry_after_ms") = 0, py::arg("reset_after_ms") = 0, py::arg("shadowed") = false,
           py::arg("degraded") = false, py::arg("cached") = false, py::arg("granted") = py::none())
      .def_property_readonly("allowed", [](const Decision& s) { return s.d.allowed != 0; })
      .def_property_readonly("limit", [](const Decision& s) { return s.d.limit; })
      .def_property_readonly("remaining", [](const Decision& s) { return s.d.remaining; })
      .def_property_readonly(
          "retry_after", [](const Decision& s) { return s.d.retry_after_ms / 1000.0; },
          "Seconds until this cost would be admitted; 0.0 when allowed.")
      .def_property_readonly(
          "reset_after", [](const Decision& s) { return s.d.reset_after_ms / 1000.0; },
          "Seconds until the key is back to full capacity.")
      .def_property_readonly("retry_after_ms", [](const Decision& s) { return s.d.retry_after_ms; })
      .def_property_readonly("reset_after_ms", [](const Decision& s) { return s.d.reset_after_ms; })
      .def_property_readonly(
          "cached", [](const Decision& s) { return s.d.cached != 0; },
          "Denied by the local deny cache, without a round trip.")
      .def_property_readonly(
          "degraded", [](const Decision& s) { return s.d.degraded != 0; },
          "Answered by the failure policy (Redis did not answer).")
      .def_property_readonly(
          "shadowed", [](const Decision& s) { return s.d.shadowed != 0; },
          "Would have been denied; admitted because the limiter is in shadow mode.")
      .def_property_readonly(
          "granted", [](const Decision& s) { return s.d.granted; },
          "Units admitted: the cost or 0; check_at_most: how many.")
      .def(
          "headers",
          [](const Decision& s) {
            if (!s.limiter) raise_invalid("this decision has no limiter");  // not made by a check
            return limiter_headers_dict(s.limiter.get(), s.d);
          },
          "The HTTP rate-limit headers for this decision, as the limiter that made it formats them "
          "(polylimit_limiter_headers): {name: value}, in order.")
      .def("__bool__", [](const Decision& s) { return s.d.allowed != 0; })
      .def("__repr__", &decision_repr)
      .def("__eq__",
           [](const Decision& a, py::handle b) -> py::object {
             if (!py::isinstance<Decision>(b)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
             return py::bool_(decision_equal(a, b.cast<const Decision&>()));
           })
      .attr("__hash__") = py::none();

  py::class_<Client>(m, "Client")
      // Options as the C struct has them: 0 selects the library's default.
      .def(py::init([](py::handle url, py::handle pool_size, py::handle connect_timeout_ms,
                       py::handle command_timeout_ms, py::handle acquire_timeout_ms, py::handle keepalive_s,
                       bool disable_keepalive, py::handle idle_check_ms, py::handle name, py::handle tls_ca_file,
                       py::handle tls_ca_dir, py::handle tls_cert_file, py::handle tls_key_file,
                       py::handle tls_server_name, bool tls_insecure, bool coalesce) {
             polylimit_client_options o;
             polylimit_client_options_init(&o, POLYLIMIT_CLIENT_OPTIONS_VERSION);
             // The strings live until polylimit_client_open has copied them.
             std::string s_name, s_ca_file, s_ca_dir, s_cert, s_key, s_server;
             o.name = optional_string(name, "name", s_name);
             o.tls_ca_file = optional_string(tls_ca_file, "tls_ca_file", s_ca_file);
             o.tls_ca_dir = optional_string(tls_ca_dir, "tls_ca_dir", s_ca_dir);
             o.tls_cert_file = optional_string(tls_cert_file, "tls_cert_file", s_cert);
             o.tls_key_file = optional_string(tls_key_file, "tls_key_file", s_key);
             o.tls_server_name = optional_string(tls_server_name, "tls_server_name", s_server);
             o.tls_insecure = tls_insecure ? 1 : 0;
             o.pool_size = to_int(pool_size, "pool_size");
             o.connect_timeout_ms = to_int(connect_timeout_ms, "connect_timeout_ms");
             o.command_timeout_ms = to_int(command_timeout_ms, "command_timeout_ms");
             o.acquire_timeout_ms = to_int(acquire_timeout_ms, "acquire_timeout_ms");
             o.keepalive_s = to_int(keepalive_s, "keepalive_s");
             o.disable_keepalive = disable_keepalive ? 1 : 0;
             o.idle_check_ms = to_int(idle_check_ms, "idle_check_ms");
             o.no_coalescing = coalesce ? 0 : 1;
             return std::make_unique<Client>(url, o);
           }),
           py::arg("url") = py::none(), py::arg("pool_size") = 0, py::arg("connect_timeout_ms") = 0,
           py::arg("command_timeout_ms") = 0, py::arg("acquire_timeout_ms") = 0, py::arg("keepalive_s") = 0,
           py::arg("disable_keepalive") = false, py::arg("idle_check_ms") = 0, py::arg("name") = py::none(),
           py::arg("tls_ca_file") = py::none(), py::arg("tls_ca_dir") = py::none(),
           py::arg("tls_cert_file") = py::none(), py::arg("tls_key_file") = py::none(),
           py::arg("tls_server_name") = py::none(), py::arg("tls_insecure") = false, py::arg("coalesce") = true)
      .def("close", &Client::close)
      .def("stats", &Client::stats)
      .def("stats_prometheus", &Client::stats_prometheus)
      .def_property_readonly("closed", &Client::closed);

  m.def("clients_stats_prometheus", &clients_stats_prometheus, py::arg("clients"),
        "polylimit_clients_stats_prometheus: the clients' counters on one Prometheus page.");

  py::class_<Queue>(m, "Queue", "polylimit_queue: completions of Limiter.submit_check, with an eventfd to watch.")
      .def(py::init<>())
      .def("fd", &Queue::fd, "The eventfd, readable while completions wait (do not read or close it); -1 once closed.")
      .def("poll", &Queue::poll, py::arg("max") = 256,
           "Up to max completions, oldest first, without waiting: [(token, status, Decision or Error)].")
      .def("wake", &Queue::wake)
      .def("outstanding", &Queue::outstanding, "Checks submitted and not yet completed.")
      .def("close", &Queue::close, "Frees the queue; completions still in flight are dropped. Idempotent.")
      .def_property_readonly("closed", &Queue::closed);

  py::class_<Limiter>(m, "Limiter")
      // Options as the C struct has them (polylimit_limiter_options_init's defaults).
      .def(py::init<Client&, py::object, py::handle, py::handle, py::handle, py::handle, const std::string&, py::handle,
                    py::handle, py::handle, py::handle, py::handle, bool, py::handle, py::handle, py::handle, bool,
                    py::handle, py::handle>(),
           py::arg("client"), py::kw_only(), py::arg("spec") = py::none(), py::arg("limit") = 0,
           py::arg("window_ms") = 0, py::arg("burst") = 0,
           py::arg("algorithm") = static_cast<int>(POLYLIMIT_ALG_SLIDING_LOG), py::arg("prefix") = "pl",
           py::arg("clock") = static_cast<int>(POLYLIMIT_CLOCK_SERVER), py::arg("deny_cache_size") = 0,
           py::arg("failure_policy") = static_cast<int>(POLYLIMIT_FAIL_ERROR), py::arg("breaker_failures") = 0,
           py::arg("breaker_cooldown_ms") = 0, py::arg("shadow") = false, py::arg("block_ms") = 0,
           py::arg("durable_replicas") = 0, py::arg("durable_timeout_ms") = 0, py::arg("durable_aof") = false,
           py::arg("lease_units") = 0, py::arg("lease_ms") = 0)
      .def("check", &Limiter::check, py::arg("key"), py::arg("cost") = 1)
      .def("check_at", &Limiter::check_at, py::arg("key"), py::arg("cost"), py::arg("now_us"))
      .def("peek", &Limiter::peek, py::arg("key"))
      .def("reset", &Limiter::reset, py::arg("key"))
      .def("check_many", &Limiter::check_many, py::arg("keys"), py::arg("cost") = 1,
           py::arg("return_exceptions") = false)
      .def("check_at_most", &Limiter::check_at_most, py::arg("key"), py::arg("max_cost"))
      .def("acquire", &Limiter::acquire, py::arg("key"), py::arg("cost"), py::arg("timeout_ms"))
      .def("check_limit", &Limiter::check_limit, py::arg("key"), py::arg("cost"), py::arg("limit"),
           py::arg("window_ms"))
      .def("refund", &Limiter::refund, py::arg("key"), py::arg("units"))
      .def("headers", &Limiter::headers, py::arg("decision"))
      .def("submit_check", &Limiter::submit_check, py::arg("key"), py::arg("cost"), py::arg("queue"), py::arg("token"))
      .def("submit_peek", &Limiter::submit_peek, py::arg("key"), py::arg("queue"), py::arg("token"))
      .def("submit_reset", &Limiter::submit_reset, py::arg("key"), py::arg("queue"), py::arg("token"))
      .def("submit_check_at_most", &Limiter::submit_check_at_most, py::arg("key"), py::arg("max_cost"),
           py::arg("queue"), py::arg("token"))
      .def("submit_check_limit", &Limiter::submit_check_limit, py::arg("key"), py::arg("cost"), py::arg("limit"),
           py::arg("window_ms"), py::arg("queue"), py::arg("token"))
      .def("submit_refund", &Limiter::submit_refund, py::arg("key"), py::arg("units"), py::arg("queue"),
           py::arg("token"))
      .def("submit_check_many", &Limiter::submit_check_many, py::arg("keys"), py::arg("cost"), py::arg("queue"),
           py::arg("first_token"))
      .def_property_readonly("spec", &Limiter::spec)
      .def_property_readonly("limit", &Limiter::limit)
      .def_property_readonly("window_ms", &Limiter::window_ms)
      .def_property_readonly("burst", &Limiter::burst)
      .def_property_readonly("algorithm", &Limiter::algorithm)
      .def_property_readonly("clock", &Limiter::clock)
      .def_property_readonly("prefix", &Limiter::prefix);

  // dynamic_attr: the package notes on a step the policy that made it (a
  // live policy's request settles on that one).
  py::class_<HttpStep>(m, "HttpStep", "What to do with one request (polylimit_http_step).", py::dynamic_attr())
      .def_property_readonly("action", [](const HttpStep& s) { return s.s.action; })
      .def_property_readonly("status", [](const HttpStep& s) { return s.s.status; })
      .def_property_readonly("rule", [](const HttpStep& s) { return s.s.rule; })
      .def_property_readonly("cost", [](const HttpStep& s) { return s.s.cost; })
      .def_property_readonly("limiter", [](const HttpStep& s) { return s.s.limiter; })
      .def_property_readonly("key", &step_key)
      .def("__repr__", [](const HttpStep& s) {
        return "HttpStep(action=" + std::to_string(s.s.action) + ", status=" + std::to_string(s.s.status) +
               ", rule=" + std::to_string(s.s.rule) + ", cost=" + std::to_string(s.s.cost) + ")";
      });
  m.attr("HTTP_PROCEED") = static_cast<int>(POLYLIMIT_HTTP_PROCEED);
  m.attr("HTTP_CHECK") = static_cast<int>(POLYLIMIT_HTTP_CHECK);
  m.attr("HTTP_RESPOND") = static_cast<int>(POLYLIMIT_HTTP_RESPOND);
  m.attr("HTTP_NEED_APP_KEY") = static_cast<int>(POLYLIMIT_HTTP_NEED_APP_KEY);
  m.attr("HTTP_NEED_PLAN") = static_cast<int>(POLYLIMIT_HTTP_NEED_PLAN);

  py::class_<HttpPolicy>(m, "HttpPolicy", "polylimit_http_policy: the HTTP request policy of a JSON document.")
      .def(py::init<py::handle, py::handle>(), py::arg("document"), py::arg("limiters"))
      .def_static("load", &HttpPolicy::load, py::arg("client"), py::arg("document"), py::arg("limiters"),
                  "polylimit_http_policy_load: a JSON or TOML document whose limits are made on client.")
      .def("id", &HttpPolicy::id)
      .def("limiter_count", &HttpPolicy::limiter_count)
      .def("limiter", &HttpPolicy::limiter, py::arg("index"),
           "A new handle on limiter index (a step's limiter), as a Limiter.")
      .def("resolver_timeout_ms", &HttpPolicy::resolver_timeout_ms)
      .def("header_names", &HttpPolicy::header_names)
      .def("rule_count", &HttpPolicy::rule_count)
      .def("rule_name", &HttpPolicy::rule_name, py::arg("rule"))
      .def("rule_limiter", &HttpPolicy::rule_limiter, py::arg("rule"))
      .def("prepare", &HttpPolicy::prepare, py::arg("method"), py::arg("path"), py::arg("route") = py::none(),
           py::arg("peer") = py::none(), py::arg("headers") = py::none(), py::arg("user") = py::none(),
           py::arg("tenant") = py::none(), py::arg("app_key") = py::none(), py::arg("cost") = py::none(),
           py::arg("plan") = py::none())
      .def("answer", &HttpPolicy::answer, py::arg("step"), py::arg("decision") = py::none())
      .def("refund_due", &HttpPolicy::refund_due, py::arg("step"), py::arg("decision"), py::arg("status"))
      .def("counts", &HttpPolicy::counts, py::arg("rule"), py::arg("status"))
      .def("metrics_prometheus", &HttpPolicy::metrics_prometheus);

  py::class_<HttpLive>(m, "HttpLive", "polylimit_http_live: a policy replaced while requests run.")
      .def(py::init<Client&, py::handle, py::handle>(), py::arg("client"), py::arg("document"), py::arg("limiters"))
      .def(py::init<Client&, const std::string&, py::handle, int>(), py::arg("client"), py::kw_only(), py::arg("path"),
           py::arg("limiters"), py::arg("watch_ms"))
      .def("close", &HttpLive::close)
      .def_property_readonly("closed", &HttpLive::closed)
      .def("current", &HttpLive::current, "The current policy (a reference for one request).")
      .def("current_id", &HttpLive::current_id)
      .def("reload", &HttpLive::reload, py::arg("document"))
      .def("reload_file", &HttpLive::reload_file)
      .def("generation", &HttpLive::generation)
      .def("last_error", &HttpLive::last_error)
      .def("metrics_prometheus", &HttpLive::metrics_prometheus)
      .def("cached_plan", &HttpLive::cached_plan, py::arg("tenant"))
      .def("cache_plan", &HttpLive::cache_plan, py::arg("tenant"), py::arg("plan"));
}
