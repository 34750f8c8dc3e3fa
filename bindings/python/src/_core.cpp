// _core.cpp - redlimit._core: pybind11 over the C ABI (redlimit.h).
//
// The module binds the C ABI rather than the C++ core so that Python goes
// through the same surface as Go, Java and C. The pure-Python package
// (redlimit/) adds the friendly API on top; this layer stays thin.
//
// GIL rules (pybind11 never releases it for us):
//  - arguments become C++ values (std::string, int64_t) while the GIL is held;
//  - the GIL is released only around rl_* calls that can touch the network;
//  - no Python object is created, copied or destroyed while it is released.
#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "redlimit.h"

namespace py = pybind11;

namespace {

// redlimit._errors classes. Leaked on purpose: calls made while the
// interpreter shuts down must still find them.
py::dict* g_error_classes = nullptr;  // status (int) -> class
py::object* g_base_error = nullptr;   // redlimit.Error

// Raises the redlimit exception for `status`. Needs the GIL.
[[noreturn]] void raise_status(int status, const char* message, int sys_errno) {
  py::object cls = *g_base_error;
  py::int_ key(status);
  if (g_error_classes->contains(key)) cls = (*g_error_classes)[key];
  // The message is bytes from C; a cut multi-byte sequence must not turn into
  // a UnicodeDecodeError that hides the real one.
  py::object text = py::reinterpret_steal<py::object>(
      PyUnicode_DecodeUTF8(message, static_cast<Py_ssize_t>(std::strlen(message)), "replace"));
  if (!text) throw py::error_already_set();
  py::object exc = cls(text);
  exc.attr("code") = py::str(rl_status_name(status));
  exc.attr("status") = py::int_(status);
  exc.attr("sys_errno") = py::int_(sys_errno);
  PyErr_SetObject(cls.ptr(), exc.ptr());
  throw py::error_already_set();
}

[[noreturn]] void raise_error(int status, const rl_error& err) {
  raise_status(status, err.message[0] ? err.message : rl_status_name(status), err.sys_errno);
}

[[noreturn]] void raise_invalid(const std::string& message) { raise_status(RL_EINVALID, message.c_str(), 0); }

std::string type_name(py::handle obj) { return Py_TYPE(obj.ptr())->tp_name; }

// A key as bytes: str is encoded as UTF-8, bytes pass through (NUL allowed).
// Copied, so the bytes stay valid with the GIL released whatever other
// threads do to the objects.
std::string key_bytes(py::handle key, const char* what = "key") {
  PyObject* o = key.ptr();
  if (PyBytes_Check(o)) return std::string(PyBytes_AS_STRING(o), static_cast<size_t>(PyBytes_GET_SIZE(o)));
  if (PyUnicode_Check(o)) {
    Py_ssize_t n = 0;
    const char* p = PyUnicode_AsUTF8AndSize(o, &n);
    if (p == nullptr) throw py::error_already_set();  // e.g. a lone surrogate
    return std::string(p, static_cast<size_t>(n));
  }
  throw py::type_error(std::string(what) + " must be str or bytes, not " + type_name(key));
}

// An integer argument: int or anything with __index__, but not bool (a bool
// cost or time is always a mistake).
int64_t to_int64(py::handle value, const char* name) {
  PyObject* o = value.ptr();
  if (PyBool_Check(o) || !PyIndex_Check(o))
    throw py::type_error(std::string(name) + " must be an int, not " + type_name(value));
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(o));
  if (!index) throw py::error_already_set();
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  if (overflow != 0) raise_invalid(std::string(name) + " = " + py::str(index).cast<std::string>() + " is out of range");
  return static_cast<int64_t>(v);
}

// A decision as Python sees it; times are also offered in float seconds.
struct Decision {
  rl_decision d{};
};

std::string decision_repr(const Decision& self) {
  const rl_decision& d = self.d;
  std::string s = "Decision(allowed=";
  s += d.allowed ? "True" : "False";
  s += ", limit=" + std::to_string(d.limit) + ", remaining=" + std::to_string(d.remaining);
  s += ", retry_after=" + py::repr(py::float_(d.retry_after_ms / 1000.0)).cast<std::string>();
  s += ", reset_after=" + py::repr(py::float_(d.reset_after_ms / 1000.0)).cast<std::string>();
  if (d.cached) s += ", cached=True";
  if (d.degraded) s += ", degraded=True";
  return s + ")";
}

bool decision_equal(const Decision& a, const Decision& b) {
  return a.d.allowed == b.d.allowed && a.d.cached == b.d.cached && a.d.degraded == b.d.degraded &&
         a.d.limit == b.d.limit && a.d.remaining == b.d.remaining && a.d.retry_after_ms == b.d.retry_after_ms &&
         a.d.reset_after_ms == b.d.reset_after_ms;
}

class Client {
 public:
  Client(const std::string& url, const rl_client_options& options) {
    if (url.find('\0') != std::string::npos) raise_invalid("url contains a NUL character");
    rl_client* raw = nullptr;
    rl_error err;
    // rl_client_open only parses and allocates: connections are lazy, so the
    // GIL can stay held.
    int st = rl_client_open(url.c_str(), &options, &raw, &err);
    if (st != RL_OK) raise_error(st, err);
    handle_.reset(raw, rl_client_close);
  }

  // Only touched with the GIL held, so no lock is needed.
  rl_client* get() const {
    if (!handle_) raise_status(RL_ECLOSED, "client is closed", 0);
    return handle_.get();
  }
  void close() { handle_.reset(); }
  bool closed() const { return !handle_; }

 private:
  std::shared_ptr<rl_client> handle_;
};

class Limiter {
 public:
  Limiter(Client& client, int64_t limit, int64_t window_ms, int algorithm, const std::string& prefix, int clock)
      : limit_(limit), window_ms_(window_ms), algorithm_(algorithm), clock_(clock), prefix_(prefix) {
    if (prefix.find('\0') != std::string::npos) raise_invalid("prefix contains a NUL character");
    rl_limiter_options opts;
    rl_limiter_options_init(&opts, RL_LIMITER_OPTIONS_VERSION);
    opts.algorithm = algorithm;
    opts.limit = limit;
    opts.window_ms = window_ms;
    opts.prefix = prefix.c_str();
    opts.clock = clock;
    rl_limiter* raw = nullptr;
    rl_error err;
    int st = rl_limiter_new(client.get(), &opts, &raw, &err);  // validates; no I/O
    if (st != RL_OK) raise_error(st, err);
    handle_.reset(raw, rl_limiter_free);
  }

  Decision check(py::handle key, py::handle cost) {
    auto h = handle();
    std::string k = key_bytes(key);
    int64_t c = to_int64(cost, "cost");
    Decision out;
    rl_error err;
    int st;
    {
      py::gil_scoped_release nogil;
      st = rl_check(h.get(), k.data(), k.size(), c, &out.d, &err);
    }
    if (st != RL_OK) raise_error(st, err);
    return out;
  }

  Decision check_at(py::handle key, py::handle cost, py::handle now_us) {
    auto h = handle();
    std::string k = key_bytes(key);
    int64_t c = to_int64(cost, "cost");
    int64_t now = to_int64(now_us, "now_us");
    Decision out;
    rl_error err;
    int st;
    {
      py::gil_scoped_release nogil;
      st = rl_check_at(h.get(), k.data(), k.size(), c, now, &out.d, &err);
    }
    if (st != RL_OK) raise_error(st, err);
    return out;
  }

  Decision peek(py::handle key) {
    auto h = handle();
    std::string k = key_bytes(key);
    Decision out;
    rl_error err;
    int st;
    {
      py::gil_scoped_release nogil;
      st = rl_peek(h.get(), k.data(), k.size(), &out.d, &err);
    }
    if (st != RL_OK) raise_error(st, err);
    return out;
  }

  void reset(py::handle key) {
    auto h = handle();
    std::string k = key_bytes(key);
    rl_error err;
    int st;
    {
      py::gil_scoped_release nogil;
      st = rl_reset(h.get(), k.data(), k.size(), &err);
    }
    if (st != RL_OK) raise_error(st, err);
  }

  // One rl_check per key, all with the GIL released. Stops at the first error
  // (keys already checked stay consumed) and names the failing index.
  py::list check_many(py::handle keys, py::handle cost) {
    auto h = handle();
    if (PyUnicode_Check(keys.ptr()) || PyBytes_Check(keys.ptr()))
      throw py::type_error("keys must be an iterable of keys, not a single " + type_name(keys));
    int64_t c = to_int64(cost, "cost");
    std::vector<std::string> ks;
    for (py::handle k : py::iter(keys)) ks.push_back(key_bytes(k, "every key"));
    std::vector<rl_decision> ds(ks.size());
    rl_error err;
    int st = RL_OK;
    size_t failed = 0;
    {
      py::gil_scoped_release nogil;
      for (; failed < ks.size(); ++failed) {
        st = rl_check(h.get(), ks[failed].data(), ks[failed].size(), c, &ds[failed], &err);
        if (st != RL_OK) break;
      }
    }
    if (st != RL_OK) {
      std::string msg = "keys[" + std::to_string(failed) + "]: " + err.message;
      raise_status(st, msg.c_str(), err.sys_errno);
    }
    py::list out(ks.size());
    for (size_t i = 0; i < ds.size(); ++i) out[i] = py::cast(Decision{ds[i]});
    return out;
  }

  void close() { handle_.reset(); }
  bool closed() const { return !handle_; }
  int64_t limit() const { return limit_; }
  int64_t window_ms() const { return window_ms_; }
  int algorithm() const { return algorithm_; }
  int clock() const { return clock_; }
  const std::string& prefix() const { return prefix_; }

 private:
  // A copy for the call: close() from another thread only drops the member,
  // and the handle is freed when the last in-flight call returns.
  std::shared_ptr<rl_limiter> handle() const {
    if (!handle_) raise_status(RL_ECLOSED, "limiter is closed (its client was closed)", 0);
    return handle_;
  }

  std::shared_ptr<rl_limiter> handle_;
  int64_t limit_, window_ms_;
  int algorithm_, clock_;
  std::string prefix_;
};

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "redlimit's extension module: the C ABI bound with pybind11. Use the redlimit package instead.";

  // A module built against a newer header than the library it runs with
  // would call functions that do not exist there.
  if (rl_version_number() < RL_VERSION_NUMBER)
    throw py::import_error(std::string("redlimit._core was built for redlimit ") + RL_VERSION_STRING +
                           " but the library is " + rl_version_string());

  py::module_ errors = py::module_::import("redlimit._errors");
  g_error_classes = new py::dict(errors.attr("BY_STATUS"));
  g_base_error = new py::object(errors.attr("Error"));

  m.attr("VERSION_STRING") = RL_VERSION_STRING;  // compiled-in header version
  m.attr("VERSION_NUMBER") = RL_VERSION_NUMBER;
  m.def("version_string", [] { return std::string(rl_version_string()); }, "Run-time library version string.");
  m.def("version_number", [] { return rl_version_number(); }, "Run-time library version number.");
  m.def("status_name", [](int code) { return std::string(rl_status_name(code)); }, py::arg("code"));
  m.attr("MAX_LIMIT") = RL_MAX_LIMIT;
  m.attr("MAX_WINDOW_MS") = RL_MAX_WINDOW_MS;
  m.attr("MAX_PREFIX_LEN") = RL_MAX_PREFIX_LEN;
  // Names the Python API accepts, mapped to the C enums: the one table to
  // extend when the core gains algorithms.
  py::dict algorithms;
  algorithms["sliding_log"] = static_cast<int>(RL_ALG_SLIDING_LOG);
  m.attr("ALGORITHMS") = algorithms;
  py::dict clocks;
  clocks["server"] = static_cast<int>(RL_CLOCK_SERVER);
  clocks["client"] = static_cast<int>(RL_CLOCK_CLIENT);
  m.attr("CLOCKS") = clocks;

  py::class_<Decision>(m, "Decision", "The answer to one check; bool(decision) is decision.allowed.")
      .def_property_readonly("allowed", [](const Decision& s) { return s.d.allowed != 0; })
      .def_property_readonly("limit", [](const Decision& s) { return s.d.limit; })
      .def_property_readonly("remaining", [](const Decision& s) { return s.d.remaining; })
      .def_property_readonly("retry_after", [](const Decision& s) { return s.d.retry_after_ms / 1000.0; },
                             "Seconds until this cost would be admitted; 0.0 when allowed.")
      .def_property_readonly("reset_after", [](const Decision& s) { return s.d.reset_after_ms / 1000.0; },
                             "Seconds until the key is back to full capacity.")
      .def_property_readonly("retry_after_ms", [](const Decision& s) { return s.d.retry_after_ms; })
      .def_property_readonly("reset_after_ms", [](const Decision& s) { return s.d.reset_after_ms; })
      .def_property_readonly("cached", [](const Decision& s) { return s.d.cached != 0; })
      .def_property_readonly("degraded", [](const Decision& s) { return s.d.degraded != 0; })
      .def("__bool__", [](const Decision& s) { return s.d.allowed != 0; })
      .def("__repr__", &decision_repr)
      .def("__eq__", [](const Decision& a, py::handle b) -> py::object {
        if (!py::isinstance<Decision>(b)) return py::reinterpret_borrow<py::object>(Py_NotImplemented);
        return py::bool_(decision_equal(a, b.cast<const Decision&>()));
      })
      .attr("__hash__") = py::none();

  py::class_<Client>(m, "Client")
      .def(py::init([](const std::string& url, int pool_size, int connect_timeout_ms, int command_timeout_ms,
                       int acquire_timeout_ms, int keepalive_s, bool disable_keepalive, int idle_check_ms) {
             rl_client_options o;
             rl_client_options_init(&o, RL_CLIENT_OPTIONS_VERSION);
             o.pool_size = pool_size;
             o.connect_timeout_ms = connect_timeout_ms;
             o.command_timeout_ms = command_timeout_ms;
             o.acquire_timeout_ms = acquire_timeout_ms;
             o.keepalive_s = keepalive_s;
             o.disable_keepalive = disable_keepalive ? 1 : 0;
             o.idle_check_ms = idle_check_ms;
             return std::make_unique<Client>(url, o);
           }),
           py::arg("url"), py::arg("pool_size") = 0, py::arg("connect_timeout_ms") = 0,
           py::arg("command_timeout_ms") = 0, py::arg("acquire_timeout_ms") = 0, py::arg("keepalive_s") = 0,
           py::arg("disable_keepalive") = false, py::arg("idle_check_ms") = 0)
      .def("close", &Client::close)
      .def_property_readonly("closed", &Client::closed);

  py::class_<Limiter>(m, "Limiter")
      .def(py::init<Client&, int64_t, int64_t, int, const std::string&, int>(), py::arg("client"),
           py::arg("limit"), py::arg("window_ms"), py::arg("algorithm") = static_cast<int>(RL_ALG_SLIDING_LOG),
           py::arg("prefix") = "rl", py::arg("clock") = static_cast<int>(RL_CLOCK_SERVER))
      .def("check", &Limiter::check, py::arg("key"), py::arg("cost") = 1)
      .def("check_at", &Limiter::check_at, py::arg("key"), py::arg("cost"), py::arg("now_us"))
      .def("peek", &Limiter::peek, py::arg("key"))
      .def("reset", &Limiter::reset, py::arg("key"))
      .def("check_many", &Limiter::check_many, py::arg("keys"), py::arg("cost") = 1)
      .def("close", &Limiter::close)
      .def_property_readonly("closed", &Limiter::closed)
      .def_property_readonly("limit", &Limiter::limit)
      .def_property_readonly("window_ms", &Limiter::window_ms)
      .def_property_readonly("algorithm", &Limiter::algorithm)
      .def_property_readonly("clock", &Limiter::clock)
      .def_property_readonly("prefix", &Limiter::prefix);
}
