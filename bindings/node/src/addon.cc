// addon.cc - the polylimit Node-API addon: thin wrappers over polylimit.h.
//
// Arguments arrive already checked by lib/index.js (types); the library checks
// every range. Each call is submitted without waiting and its promise is
// settled from the client's completion queue: one uv_poll_t watches the
// queue's eventfd while calls are pending, so no thread waits per call and an
// idle client does not keep the event loop alive. No state is static: every
// client belongs to the environment (main thread or worker) that made it.
#include <napi.h>
#include <uv.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "polylimit.h"

namespace {

// A library error as a JS Error carrying the C status; lib/index.js turns it
// into the PolylimitError subclass of that status.
Napi::Error library_error(Napi::Env env, const polylimit_error& err) {
  Napi::Error e = Napi::Error::New(env, err.message[0] ? err.message : polylimit_status_name(err.code));
  e.Set("status", Napi::Number::New(env, err.code));
  e.Set("outcomeUnknown", Napi::Boolean::New(env, err.outcome_unknown != 0));
  return e;
}

// What a call on a closed client gets, as the library words it.
Napi::Error closed_error(Napi::Env env) {
  polylimit_error err{};
  err.code = POLYLIMIT_ECLOSED;
  snprintf(err.message, sizeof err.message, "the client is closed");
  return library_error(env, err);
}

// What a promise settles with: the Decision (its limiter: `owner`) and the
// PolylimitError lib/index.js makes from the fields (setFactories), so that
// no second promise per call is needed to shape them. Its objects are built
// by JIT code; setting named properties from C costs several times more
// (each interns its name and moves the object to a new map).
Napi::Value decision_value(Napi::Env env, const polylimit_decision& d, Napi::Value owner);
Napi::Value error_value(Napi::Env env, const polylimit_error& err);

// Numbers from JS are doubles; lib/index.js passes only safe integers.
int64_t to_int64(const Napi::Value& v) { return v.IsNumber() ? v.As<Napi::Number>().Int64Value() : 0; }
int to_int(const Napi::Object& o, const char* name) {
  Napi::Value v = o.Get(name);
  return v.IsNumber() ? v.As<Napi::Number>().Int32Value() : 0;
}

// A key: a string (its UTF-8 bytes) or a Buffer / Uint8Array (its bytes). The
// library copies the key before a submit returns.
struct Key {
  std::string text;
  const void* data = nullptr;
  size_t size = 0;
  explicit Key(const Napi::Value& v) {
    if (v.IsTypedArray()) {
      Napi::TypedArray a = v.As<Napi::TypedArray>();
      Napi::ArrayBuffer buffer = a.ArrayBuffer();
      data = static_cast<const uint8_t*>(buffer.Data()) + a.ByteOffset();
      size = a.ByteLength();
    } else {
      text = v.ToString().Utf8Value();
      data = text.data();
      size = text.size();
    }
  }
};

// Where a batch's per-key results land: the library writes these arrays just
// before the batch's completion is queued, and never after the queue is freed
// (polylimit_limiter_submit_check_many), so they live with the pending call.
struct Batch {
  explicit Batch(size_t n) : out(n), statuses(n), errors(n) {}
  std::vector<polylimit_decision> out;
  std::vector<int> statuses;
  std::vector<polylimit_error> errors;
};

// What may block on the network is done on libuv's thread pool, never on the
// event loop: closing a client and freeing a limiter with leases both give
// the leases' unused units back to Redis (one round trip; up to the command
// timeout when the server does not answer). The C ABI forbids closing a
// client while one of its limiters is being freed: both hold `mu`.
struct Closing {
  std::mutex mu;
  bool ended = false;  // the environment is ending: the client is closed (event loop thread only)
};

// A job for libuv's thread pool, as Node-API async work (Node waits for it
// before an environment, such as a worker, ends). Its callbacks throw
// nothing: when the environment is ending, Node-API calls fail and the
// failure is ignored (node-addon-api's AsyncWorker would throw out of them,
// which aborts the process).
class PoolJob {
 public:
  virtual ~PoolJob() = default;
  // Queues the job, which deletes itself when done. If it cannot be queued
  // (not expected: the environment is ending), it runs here and now.
  static void Run(napi_env env, PoolJob* job) {
    napi_value name;
    if (napi_create_string_utf8(env, "polylimit", NAPI_AUTO_LENGTH, &name) == napi_ok &&
        napi_create_async_work(
            env, nullptr, name, [](napi_env, void* data) { static_cast<PoolJob*>(data)->Execute(); },
            [](napi_env env, napi_status status, void* data) {
              PoolJob* job = static_cast<PoolJob*>(data);
              if (status == napi_ok) job->Complete(env);
              napi_delete_async_work(env, job->work_);
              delete job;
            },
            job, &job->work_) == napi_ok) {
      if (napi_queue_async_work(env, job->work_) == napi_ok) return;
      napi_delete_async_work(env, job->work_);
    }
    job->Execute();
    job->Complete(env);
    delete job;
  }

 protected:
  virtual void Execute() = 0;         // on the thread pool
  virtual void Complete(napi_env) {}  // on the loop, after Execute

 private:
  napi_async_work work_ = nullptr;
};

// A limiter freed on the thread pool (the GC collected it while it holds
// leases, or while its client is closing).
class FreeJob : public PoolJob {
 public:
  FreeJob(std::shared_ptr<Closing> closing, polylimit_limiter* limiter)
      : closing_(std::move(closing)), limiter_(limiter) {}

 protected:
  void Execute() override {
    std::lock_guard<std::mutex> lock(closing_->mu);
    polylimit_limiter_free(limiter_);
  }

 private:
  std::shared_ptr<Closing> closing_;
  polylimit_limiter* limiter_;
};

// A client closed on the thread pool; `deferred` (may be null) is resolved
// on the loop once the connections are released.
class CloseJob : public PoolJob {
 public:
  CloseJob(std::shared_ptr<Closing> closing, polylimit_client* client, napi_deferred deferred)
      : closing_(std::move(closing)), client_(client), deferred_(deferred) {}

 protected:
  void Execute() override {
    std::lock_guard<std::mutex> lock(closing_->mu);
    polylimit_client_close(client_);
  }
  void Complete(napi_env env) override {
    napi_value undefined;
    if (deferred_ != nullptr && napi_get_undefined(env, &undefined) == napi_ok)
      napi_resolve_deferred(env, deferred_, undefined);
  }

 private:
  std::shared_ptr<Closing> closing_;
  polylimit_client* client_;
  napi_deferred deferred_;
};

// One call in flight: its promise, its limiter's JS object (held strongly
// while the call is pending), and for a batch the arrays it fills.
struct Call {
  Napi::Promise::Deferred deferred;
  Napi::ObjectReference* owner;
  std::unique_ptr<Batch> batch;
};

class Client : public Napi::ObjectWrap<Client> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "NativeClient",
                       {InstanceMethod("close", &Client::Close), InstanceMethod("pending", &Client::Pending),
                        InstanceMethod("stats", &Client::Stats), InstanceMethod("prometheus", &Client::Prometheus),
                        StaticMethod("prometheusAll", &Client::PrometheusAll)});
  }

  // new NativeClient(url: string | undefined, options: {poolSize, ...})
  explicit Client(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Client>(info) {
    Napi::Env env = info.Env();
    std::string url = info[0].IsString() ? info[0].As<Napi::String>().Utf8Value() : std::string();
    polylimit_client_options co = POLYLIMIT_CLIENT_OPTIONS_INIT;
    // The strings live until polylimit_client_open has copied them.
    std::string name, ca_file, ca_dir, cert_file, key_file, server_name;
    auto text = [](const Napi::Object& o, const char* field, std::string& out) -> const char* {
      Napi::Value v = o.Get(field);
      if (!v.IsString()) return nullptr;
      out = v.As<Napi::String>().Utf8Value();
      return out.c_str();
    };
    if (info[1].IsObject()) {
      Napi::Object o = info[1].As<Napi::Object>();
      co.pool_size = to_int(o, "poolSize");
      co.connect_timeout_ms = to_int(o, "connectTimeoutMs");
      co.command_timeout_ms = to_int(o, "commandTimeoutMs");
      co.acquire_timeout_ms = to_int(o, "acquireTimeoutMs");
      co.name = text(o, "name", name);
      // lib/index.js passes a boolean or nothing; absent: coalescing on.
      if (o.Get("coalesce").IsBoolean() && !o.Get("coalesce").As<Napi::Boolean>().Value()) co.no_coalescing = 1;
      if (o.Get("tls").IsObject()) {
        Napi::Object t = o.Get("tls").As<Napi::Object>();
        co.tls_ca_file = text(t, "caFile", ca_file);
        co.tls_ca_dir = text(t, "caDir", ca_dir);
        co.tls_cert_file = text(t, "certFile", cert_file);
        co.tls_key_file = text(t, "keyFile", key_file);
        co.tls_server_name = text(t, "serverName", server_name);
        co.tls_insecure = t.Get("insecure").ToBoolean() ? 1 : 0;
      }
    }
    polylimit_error err;
    // No URL: the library reads POLYLIMIT_URL, else names memory:// in its error.
    if (polylimit_client_open(url.empty() ? nullptr : url.c_str(), &co, &client_, &err) != POLYLIMIT_OK)
      throw library_error(env, err);
    if (polylimit_queue_new(&queue_, &err) != POLYLIMIT_OK) {
      polylimit_client_close(client_);
      client_ = nullptr;
      throw library_error(env, err);
    }
    loop_ = nullptr;
    napi_get_uv_event_loop(env, &loop_);
    async_context_ = std::make_unique<Napi::AsyncContext>(env, "polylimit");
    napi_add_env_cleanup_hook(env, &Client::Cleanup, this);
  }

  // The GC collected the client (and so every limiter of it) without close():
  // closed on the thread pool, as close() does.
  ~Client() override {
    if (!cleaned_) {
      napi_remove_env_cleanup_hook(Env(), &Client::Cleanup, this);
      if (client_ != nullptr) PoolJob::Run(Env(), new CloseJob(closing_, client_, nullptr));
      client_ = nullptr;
      Cleanup(this);
    }
  }

  polylimit_client* handle() const { return client_; }
  const std::shared_ptr<Closing>& closing() const { return closing_; }

  // Submits with a fresh token; `submit` returns the library's status.
  // `owner`: the limiter's (weak) reference to its JS object, which the
  // decision carries. `batch`: check_many's result arrays, kept until the
  // completion.
  template <typename Submit>
  Napi::Value Start(Napi::Env env, Napi::ObjectReference* owner, Submit&& submit,
                    std::unique_ptr<Batch> batch = nullptr) {
    const uint64_t token = next_token_++;
    // Closed: the library would say so too, but a close may be under way on
    // the thread pool, and no call may race it.
    if (queue_ == nullptr || client_ == nullptr) throw closed_error(env);
    polylimit_error err;
    if (submit(queue_, token, &err) != POLYLIMIT_OK) throw library_error(env, err);
    Napi::Promise::Deferred deferred = Napi::Promise::Deferred::New(env);
    owner->Ref();
    pending_.emplace(token, Call{deferred, owner, std::move(batch)});
    if (pending_.size() == 1) Watch();
    return deferred.Promise();
  }

 private:
  // While calls are pending: the watch keeps the loop alive and this object
  // is held, so that a client nobody references still settles its promises.
  // Once started, the watch stays on and is only unreferenced when nothing
  // is pending: stopping and restarting it for every lone call would cost
  // two epoll_ctl calls per call (the fd is readable only while completions
  // wait, so an idle watch never fires).
  void Watch() {
    if (poll_ == nullptr) {
      poll_ = new uv_poll_t;
      poll_->data = this;
      uv_poll_init(loop_, poll_, polylimit_queue_fd(queue_));
    }
    if (!uv_is_active(reinterpret_cast<uv_handle_t*>(poll_))) uv_poll_start(poll_, UV_READABLE, &Client::OnReadable);
    uv_ref(reinterpret_cast<uv_handle_t*>(poll_));
    if (!held_) {
      held_ = true;
      Ref();
    }
  }

  void Unwatch() {
    uv_unref(reinterpret_cast<uv_handle_t*>(poll_));
    if (held_) {
      held_ = false;
      Unref();
    }
  }

  // A libuv callback: nothing may propagate out of it. Node-API calls fail
  // (node-addon-api throws) when the environment can no longer run JS, as
  // while a worker terminates; its cleanup hook then releases everything.
  static void OnReadable(uv_poll_t* handle, int status, int events) noexcept {
    (void)status, (void)events;
    Client* self = static_cast<Client*>(handle->data);
    try {
      self->Drain();
    } catch (...) {
      if (self->poll_ != nullptr) uv_poll_stop(self->poll_);
    }
  }

  // Settles the promises of every waiting completion; microtasks run when the
  // callback scope closes, as after any I/O callback.
  void Drain() {
    Napi::Env env = Env();
    Napi::HandleScope scope(env);
    Napi::CallbackScope callback_scope(env, *async_context_);
    polylimit_completion batch[64];
    size_t n;
    do {
      n = polylimit_queue_poll(queue_, batch, 64, 0);
      for (size_t i = 0; i < n; ++i) {
        const polylimit_completion& c = batch[i];
        auto it = pending_.find(c.token);
        if (it == pending_.end()) continue;
        Call call = std::move(it->second);
        pending_.erase(it);
        Napi::Value owner = call.owner->Value();
        call.owner->Unref();
        if (call.batch) {
          // Every key's decision or error, whatever the batch's status.
          const Batch& b = *call.batch;
          Napi::Array results = Napi::Array::New(env, b.out.size());
          for (size_t k = 0; k < b.out.size(); ++k)
            results.Set(static_cast<uint32_t>(k), b.statuses[k] == POLYLIMIT_OK ? decision_value(env, b.out[k], owner)
                                                                                : error_value(env, b.errors[k]));
          call.deferred.Resolve(results);
        } else if (c.status == POLYLIMIT_OK) {
          call.deferred.Resolve(decision_value(env, c.decision, owner));
        } else {
          call.deferred.Reject(error_value(env, c.error));
        }
      }
    } while (n == 64);
    if (pending_.empty() && poll_ != nullptr && held_) Unwatch();
  }

  // close() -> Promise<undefined>: calls in flight complete with
  // POLYLIMIT_ECLOSED through the queue, so their promises settle on the
  // next turns of the loop; later calls throw at once. The close itself
  // (leases given back, connections released) runs on the thread pool.
  Napi::Value Close(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (client_ == nullptr) {  // closed already
      Napi::Promise::Deferred done = Napi::Promise::Deferred::New(env);
      done.Resolve(env.Undefined());
      return done.Promise();
    }
    napi_deferred deferred;
    napi_value promise;
    if (napi_create_promise(env, &deferred, &promise) != napi_ok) throw Napi::Error::New(env);
    PoolJob::Run(env, new CloseJob(closing_, client_, deferred));
    client_ = nullptr;
    return Napi::Value(env, promise);
  }

  // The client's counters, named as in polylimit_stats (snake_case).
  Napi::Value Stats(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    polylimit_stats st = POLYLIMIT_STATS_INIT;
    polylimit_error err;
    if (client_ == nullptr) throw closed_error(env);
    if (polylimit_client_stats(client_, &st, &err) != POLYLIMIT_OK) throw library_error(env, err);
    Napi::Object o = Napi::Object::New(env);
#define POLYLIMIT_NODE_STAT(name) o.Set(#name, Napi::Number::New(env, static_cast<double>(st.name)));
    POLYLIMIT_STATS_COUNTERS(POLYLIMIT_NODE_STAT)
#undef POLYLIMIT_NODE_STAT
    return o;
  }

  // The counters in the Prometheus text format (polylimit_client_stats_prometheus).
  Napi::Value Prometheus(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    if (client_ == nullptr) throw closed_error(env);
    char* text = nullptr;
    size_t len = 0;
    polylimit_error err;
    if (polylimit_client_stats_prometheus(client_, &text, &len, &err) != POLYLIMIT_OK) throw library_error(env, err);
    Napi::String s = Napi::String::New(env, text, len);
    polylimit_free(text);
    return s;
  }

  // prometheusAll([NativeClient...]): one page for several named clients.
  static Napi::Value PrometheusAll(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Napi::Array array = info[0].As<Napi::Array>();
    std::vector<polylimit_client*> clients;
    for (uint32_t i = 0; i < array.Length(); ++i) {
      Client* c = Unwrap(array.Get(i).As<Napi::Object>());
      if (c->client_ == nullptr) throw closed_error(env);
      clients.push_back(c->client_);
    }
    char* text = nullptr;
    size_t len = 0;
    polylimit_error err;
    if (polylimit_clients_stats_prometheus(clients.data(), clients.size(), &text, &len, &err) != POLYLIMIT_OK)
      throw library_error(env, err);
    Napi::String s = Napi::String::New(env, text, len);
    polylimit_free(text);
    return s;
  }

  Napi::Value Pending(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(pending_.size()));
  }

  // The environment ends (process exit, a worker stops) or the object is
  // collected: close the client, release the handle, drop the queue.
  static void Cleanup(void* arg) {
    Client* self = static_cast<Client*>(arg);
    if (self->cleaned_) return;
    self->cleaned_ = true;
    self->closing_->ended = true;
    if (self->client_ != nullptr) {
      std::lock_guard<std::mutex> lock(self->closing_->mu);  // waits for a limiter being freed
      polylimit_client_close(self->client_);
      self->client_ = nullptr;
    }
    if (self->poll_ != nullptr) {
      uv_poll_stop(self->poll_);
      uv_close(reinterpret_cast<uv_handle_t*>(self->poll_),
               [](uv_handle_t* h) { delete reinterpret_cast<uv_poll_t*>(h); });
      self->poll_ = nullptr;
    }
    polylimit_queue_free(self->queue_);  // completions still in flight are dropped
    self->queue_ = nullptr;
    self->pending_.clear();
  }

  polylimit_client* client_ = nullptr;  // null once close() has begun
  std::shared_ptr<Closing> closing_ = std::make_shared<Closing>();
  polylimit_queue* queue_ = nullptr;
  uv_loop_t* loop_ = nullptr;
  uv_poll_t* poll_ = nullptr;
  std::unique_ptr<Napi::AsyncContext> async_context_;
  std::unordered_map<uint64_t, Call> pending_;
  uint64_t next_token_ = 1;
  bool cleaned_ = false;
  bool held_ = false;  // Ref() taken while calls are pending
};

class Limiter : public Napi::ObjectWrap<Limiter> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(
        env, "NativeLimiter",
        {InstanceMethod("check", &Limiter::Check), InstanceMethod("peek", &Limiter::Peek),
         InstanceMethod("refund", &Limiter::Refund), InstanceMethod("reset", &Limiter::Reset),
         InstanceMethod("acquire", &Limiter::Acquire), InstanceMethod("checkAtMost", &Limiter::CheckAtMost),
         InstanceMethod("checkLimit", &Limiter::CheckLimit), InstanceMethod("checkMany", &Limiter::CheckMany),
         InstanceMethod("headers", &Limiter::Headers)});
  }

  // new NativeLimiter(client: NativeClient, spec: string, options: {...})
  explicit Limiter(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Limiter>(info) {
    Napi::Env env = info.Env();
    client_ = Client::Unwrap(info[0].As<Napi::Object>());
    client_ref_ = Napi::Persistent(info[0].As<Napi::Object>());  // the client outlives its limiters
    closing_ = client_->closing();
    // The JS Limiter that owns this one (it holds us): weak, but strong while calls are pending.
    if (info[3].IsObject())
      owner_ = Napi::Weak(info[3].As<Napi::Object>());
    else
      owner_ = Napi::Weak(info.This().As<Napi::Object>());
    if (info[1].IsExternal()) {  // a handle on a policy's limiter (Policy::LimiterAt)
      limiter_ = info[1].As<Napi::External<polylimit_limiter>>().Data();
      if (client_->handle() == nullptr) {
        polylimit_limiter_free(limiter_);
        limiter_ = nullptr;
        throw closed_error(env);
      }
      return;
    }
    std::string spec = info[1].As<Napi::String>().Utf8Value();
    polylimit_limiter_options lo = POLYLIMIT_LIMITER_OPTIONS_INIT;
    std::string prefix;
    if (info[2].IsObject()) {
      Napi::Object o = info[2].As<Napi::Object>();
      lo.algorithm = to_int(o, "algorithm");
      if (o.Get("prefix").IsString()) {
        prefix = o.Get("prefix").As<Napi::String>().Utf8Value();
        lo.prefix = prefix.c_str();
      }
      lo.clock = to_int(o, "clock");
      lo.deny_cache_size = to_int(o, "denyCacheSize");
      lo.failure_policy = to_int(o, "failurePolicy");
      lo.breaker_failures = to_int(o, "breakerFailures");
      lo.breaker_cooldown_ms = to_int(o, "breakerCooldownMs");
      lo.shadow = o.Get("shadow").ToBoolean() ? 1 : 0;
      lo.block_ms = to_int64(o.Get("blockMs"));
      lo.durable_replicas = to_int(o, "durableReplicas");
      lo.durable_timeout_ms = to_int(o, "durableTimeoutMs");
      lo.durable_aof = o.Get("durableAof").ToBoolean() ? 1 : 0;
      lo.lease_units = to_int64(o.Get("leaseUnits"));
      leases_ = lo.lease_units > 0;
      lo.lease_ms = to_int64(o.Get("leaseMs"));
    }
    if (client_->handle() == nullptr) throw closed_error(env);
    polylimit_error err;
    if (polylimit_limiter_new_spec(client_->handle(), spec.c_str(), &lo, &limiter_, &err) != POLYLIMIT_OK)
      throw library_error(env, err);
  }

  // Allowed with calls in flight: they hold the core's limiter. (The GC
  // runs this.) With leases, freeing gives units back over the network, and
  // while the client is closing it must wait for the close: either way it
  // is done on the thread pool. When the environment ends the client is
  // already closed (its cleanup hook runs first), so the free is quick and
  // done here.
  polylimit_limiter* handle() const { return limiter_; }
  const std::shared_ptr<Closing>& closing() const { return closing_; }
  bool leases() const { return leases_; }

  ~Limiter() override {
    if (limiter_ == nullptr) return;
    if (closing_->ended) {
      std::lock_guard<std::mutex> lock(closing_->mu);
      polylimit_limiter_free(limiter_);
      return;
    }
    if (!leases_) {
      std::unique_lock<std::mutex> lock(closing_->mu, std::try_to_lock);
      if (lock.owns_lock()) {
        polylimit_limiter_free(limiter_);
        return;
      }
    }
    PoolJob::Run(Env(), new FreeJob(closing_, limiter_));
  }

 private:
  Napi::Value Check(const Napi::CallbackInfo& info) {
    Key key(info[0]);
    const int64_t cost = to_int64(info[1]);
    return client_->Start(info.Env(), &owner_, [&](polylimit_queue* q, uint64_t token, polylimit_error* err) {
      return polylimit_limiter_submit_check(limiter_, key.data, key.size, cost, q, token, err);
    });
  }

  Napi::Value Peek(const Napi::CallbackInfo& info) {
    Key key(info[0]);
    return client_->Start(info.Env(), &owner_, [&](polylimit_queue* q, uint64_t token, polylimit_error* err) {
      return polylimit_limiter_submit_peek(limiter_, key.data, key.size, q, token, err);
    });
  }

  Napi::Value Refund(const Napi::CallbackInfo& info) {
    Key key(info[0]);
    const int64_t units = to_int64(info[1]);
    return client_->Start(info.Env(), &owner_, [&](polylimit_queue* q, uint64_t token, polylimit_error* err) {
      return polylimit_limiter_submit_refund(limiter_, key.data, key.size, units, q, token, err);
    });
  }

  Napi::Value Reset(const Napi::CallbackInfo& info) {
    Key key(info[0]);
    return client_->Start(info.Env(), &owner_, [&](polylimit_queue* q, uint64_t token, polylimit_error* err) {
      return polylimit_limiter_submit_reset(limiter_, key.data, key.size, q, token, err);
    });
  }

  Napi::Value Acquire(const Napi::CallbackInfo& info) {
    Key key(info[0]);
    const int64_t cost = to_int64(info[1]);
    const int64_t timeout_ms = to_int64(info[2]);
    return client_->Start(info.Env(), &owner_, [&](polylimit_queue* q, uint64_t token, polylimit_error* err) {
      return polylimit_limiter_submit_acquire(limiter_, key.data, key.size, cost, timeout_ms, q, token, err);
    });
  }

  Napi::Value CheckAtMost(const Napi::CallbackInfo& info) {
    Key key(info[0]);
    const int64_t max_cost = to_int64(info[1]);
    return client_->Start(info.Env(), &owner_, [&](polylimit_queue* q, uint64_t token, polylimit_error* err) {
      return polylimit_limiter_submit_check_at_most(limiter_, key.data, key.size, max_cost, q, token, err);
    });
  }

  Napi::Value CheckLimit(const Napi::CallbackInfo& info) {
    Key key(info[0]);
    const int64_t cost = to_int64(info[1]), limit = to_int64(info[2]), window_ms = to_int64(info[3]);
    return client_->Start(info.Env(), &owner_, [&](polylimit_queue* q, uint64_t token, polylimit_error* err) {
      return polylimit_limiter_submit_check_limit(limiter_, key.data, key.size, cost, limit, window_ms, q, token, err);
    });
  }

  // checkMany(keys: Array, cost) -> Promise<Array<decision | Error>>
  Napi::Value CheckMany(const Napi::CallbackInfo& info) {
    Napi::Array array = info[0].As<Napi::Array>();
    const int64_t cost = to_int64(info[1]);
    const size_t n = array.Length();
    std::vector<Key> keys;
    keys.reserve(n);
    std::vector<const void*> pointers(n);
    std::vector<size_t> lengths(n);
    for (size_t i = 0; i < n; ++i) {
      keys.emplace_back(array.Get(static_cast<uint32_t>(i)));
      pointers[i] = keys.back().data;
      lengths[i] = keys.back().size;
    }
    auto batch = std::make_unique<Batch>(n);
    Batch* b = batch.get();
    return client_->Start(
        info.Env(), &owner_,
        [&](polylimit_queue* q, uint64_t token, polylimit_error* err) {
          return polylimit_limiter_submit_check_many(limiter_, pointers.data(), lengths.data(), n, cost, b->out.data(),
                                                     b->statuses.data(), b->errors.data(), q, token, err);
        },
        std::move(batch));
  }

  // headers(allowed, limit, remaining, retryAfterMs, resetAfterMs) -> "Name: value\n..."
  // (It reads only the limiter's fixed options, so a close under way on the
  // thread pool does not matter to it.)
  Napi::Value Headers(const Napi::CallbackInfo& info) {
    polylimit_decision d{};
    d.allowed = info[0].ToBoolean() ? 1 : 0;
    d.limit = to_int64(info[1]);
    d.remaining = to_int64(info[2]);
    d.retry_after_ms = to_int64(info[3]);
    d.reset_after_ms = to_int64(info[4]);
    char* text = nullptr;
    size_t len = 0;
    polylimit_error err;
    if (polylimit_limiter_headers(limiter_, &d, &text, &len, &err) != POLYLIMIT_OK)
      throw library_error(info.Env(), err);
    Napi::String s = Napi::String::New(info.Env(), text, len);
    polylimit_free(text);
    return s;
  }

  Client* client_ = nullptr;
  Napi::ObjectReference client_ref_;
  Napi::ObjectReference owner_;
  polylimit_limiter* limiter_ = nullptr;
  std::shared_ptr<Closing> closing_;
  bool leases_ = false;  // freeing gives units back over the network
};

// A policy freed on the thread pool: it may hold the last reference to a
// limiter with leases, whose free gives units back over the network. It
// holds the closing locks of the limiters' clients, as a limiter's free does.
// (A live policy, polylimit_http_live, likewise.)
class PolicyFreeJob : public PoolJob {
 public:
  using Free = void (*)(void*);
  PolicyFreeJob(std::vector<std::shared_ptr<Closing>> closings, void* handle, Free free)
      : closings_(std::move(closings)), handle_(handle), free_(free) {}

 protected:
  void Execute() override { FreeLocked(closings_, handle_, free_); }

 public:
  static void FreeLocked(const std::vector<std::shared_ptr<Closing>>& closings, void* handle, Free free) {
    std::vector<std::unique_lock<std::mutex>> locks;
    for (const auto& c : closings) locks.emplace_back(c->mu);  // distinct, in address order
    free(handle);
  }

  // Frees `handle` here when no client is closing (and `quick`), else on the thread pool.
  static void Release(napi_env env, const std::vector<std::shared_ptr<Closing>>& closings, bool quick, void* handle,
                      Free free) {
    bool ended = false;
    for (const auto& c : closings) ended = ended || c->ended;
    if (ended) {  // the environment ends: the clients are closed already
      FreeLocked(closings, handle, free);
      return;
    }
    if (quick) {  // unless a client is closing on the thread pool
      std::vector<std::unique_lock<std::mutex>> locks;
      for (const auto& c : closings) {
        locks.emplace_back(c->mu, std::try_to_lock);
        if (!locks.back().owns_lock()) break;
      }
      if (locks.size() == closings.size() && (locks.empty() || locks.back().owns_lock())) {
        free(handle);
        return;
      }
    }
    PoolJob::Run(env, new PolicyFreeJob(closings, handle, free));
  }

  static void FreePolicy(void* p) { polylimit_http_policy_free(static_cast<polylimit_http_policy*>(p)); }
  static void FreeLive(void* p) { polylimit_http_live_free(static_cast<polylimit_http_live*>(p)); }

 private:
  std::vector<std::shared_ptr<Closing>> closings_;
  void* handle_;
  Free free_;
};

// The closings of a client (may be undefined) and of limiters, distinct, in
// address order; `leases`: whether a limiter gives units back when freed.
std::vector<std::shared_ptr<Closing>> closings_of(const Napi::Value& client, const Napi::Value& limiters,
                                                  std::vector<polylimit_limiter*>* handles, bool* leases);

// The HTTP request policy (polylimit_http_*): made from a JSON document and
// the limiters its rules name by index. Everything here is synchronous and
// does no I/O (microseconds): the check a step asks for runs on the
// limiter's own asynchronous path (Limiter.check), in lib/http.js.
//
// A step crosses to JS as { code (the action), status, ruleIndex, cost, key }
// (lib/index.js adds the action's and the rule's names) and comes back as
// those fields (answer, refundDue), from which the C step is rebuilt.
class Policy : public Napi::ObjectWrap<Policy> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(
        env, "NativePolicy",
        {InstanceMethod("headerNames", &Policy::HeaderNames), InstanceMethod("rules", &Policy::Rules),
         InstanceMethod("prepare", &Policy::Prepare), InstanceMethod("answer", &Policy::Answer),
         InstanceMethod("refundDue", &Policy::RefundDue), InstanceMethod("metrics", &Policy::Metrics),
         InstanceMethod("limiterCount", &Policy::LimiterCount), InstanceMethod("limiterAt", &Policy::LimiterAt),
         InstanceMethod("resolverTimeoutMs", &Policy::ResolverTimeoutMs), InstanceMethod("id", &Policy::Id)});
  }

  // new NativePolicy(document: string, limiters: NativeLimiter[], client?: NativeClient)
  //   without a client: polylimit_http_policy_new (the limiters are all);
  //   with one: polylimit_http_policy_load (the document's own limits too).
  // new NativePolicy(External<policy>, limiters, client): a live policy's
  //   current one (a reference this object owns).
  explicit Policy(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Policy>(info) {
    Napi::Env env = info.Env();
    std::vector<polylimit_limiter*> limiters;
    closings_ = closings_of(info[2], info[1], &limiters, &leases_);
    if (info[2].IsObject()) client_ref_ = Napi::Persistent(info[2].As<Napi::Object>());
    if (info[0].IsExternal()) {
      policy_ = info[0].As<Napi::External<polylimit_http_policy>>().Data();
      return;
    }
    std::string document = info[0].As<Napi::String>().Utf8Value();
    polylimit_error err;
    int rc;
    if (info[2].IsObject()) {
      polylimit_client* client = Client::Unwrap(info[2].As<Napi::Object>())->handle();
      if (client == nullptr) throw closed_error(env);
      rc = polylimit_http_policy_load(client, document.data(), document.size(), limiters.data(), limiters.size(),
                                      &policy_, &err);
    } else {
      rc =
          polylimit_http_policy_new(document.data(), document.size(), limiters.data(), limiters.size(), &policy_, &err);
    }
    if (rc != POLYLIMIT_OK) throw library_error(env, err);
  }

  // The GC collected it: a policy that may hold the last reference to a
  // limiter with leases is freed on the thread pool (see PolicyFreeJob).
  ~Policy() override {
    if (policy_ == nullptr) return;
    PolicyFreeJob::Release(Env(), closings_, !leases_, policy_, &PolicyFreeJob::FreePolicy);
  }

 private:
  // The request headers the policy reads, lower case, in the order prepare() takes their values.
  Napi::Value HeaderNames(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const size_t n = polylimit_http_policy_header_count(policy_);
    Napi::Array out = Napi::Array::New(env, n);
    for (size_t i = 0; i < n; ++i)
      out.Set(static_cast<uint32_t>(i), Napi::String::New(env, polylimit_http_policy_header_name(policy_, i)));
    return out;
  }

  // [{ name, limiter }] per rule (limiter: the index, or -1 when the rule exempts).
  Napi::Value Rules(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    const size_t n = polylimit_http_policy_rule_count(policy_);
    Napi::Array out = Napi::Array::New(env, n);
    for (size_t i = 0; i < n; ++i) {
      Napi::Object r = Napi::Object::New(env);
      r.Set("name", Napi::String::New(env, polylimit_http_policy_rule_name(policy_, i)));
      r.Set("limiter", Napi::Number::New(env, polylimit_http_policy_rule_limiter(policy_, i)));
      out.Set(static_cast<uint32_t>(i), r);
    }
    return out;
  }

  // How many limiters steps name (the application's first, then the document's).
  Napi::Value LimiterCount(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(polylimit_http_policy_limiter_count(policy_)));
  }

  // limiterAt(i) -> a new handle on limiter i, for new NativeLimiter(client, handle).
  Napi::Value LimiterAt(const Napi::CallbackInfo& info) {
    polylimit_limiter* l = nullptr;
    polylimit_error err;
    if (polylimit_http_policy_limiter(policy_, static_cast<size_t>(to_int64(info[0])), &l, &err) != POLYLIMIT_OK)
      throw library_error(info.Env(), err);
    return Napi::External<polylimit_limiter>::New(info.Env(), l);
  }

  // The plan resolver's deadline (0: the document has no resolver).
  Napi::Value ResolverTimeoutMs(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(polylimit_http_policy_resolver_timeout_ms(policy_)));
  }

  Napi::Value Id(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(polylimit_http_policy_id(policy_)));
  }

  // A string, Buffer or Uint8Array; undefined or null: absent.
  struct Text {
    std::string text;
    polylimit_str str{nullptr, 0};
    bool bytes = false;
    explicit Text(const Napi::Value& v) {
      if (v.IsTypedArray()) {
        Napi::TypedArray a = v.As<Napi::TypedArray>();
        Napi::ArrayBuffer buffer = a.ArrayBuffer();
        text.assign(static_cast<const char*>(buffer.Data()) + a.ByteOffset(), a.ByteLength());
        bytes = true;
      } else if (v.IsString()) {
        text = v.As<Napi::String>().Utf8Value();
      } else {
        return;
      }
      str.ptr = text.data();
      str.len = text.size();
    }
  };

  // prepare(method, path, route, peer, headerValues[], user, tenant, appKey, cost, plan) -> step
  // (plan: undefined = not resolved; '' = the tenants table or the default plan)
  // The key comes back as a Buffer when the application's key was bytes.
  Napi::Value Prepare(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    Text method(info[0]), path(info[1]), route(info[2]), peer(info[3]), user(info[5]), tenant(info[6]),
        app_key(info[7]), plan(info[9]);
    std::vector<Text> values;
    std::vector<polylimit_str> headers;
    if (info[4].IsArray()) {
      Napi::Array a = info[4].As<Napi::Array>();
      const uint32_t n = a.Length();
      values.reserve(n);
      headers.reserve(n);
      for (uint32_t i = 0; i < n; ++i) {
        values.emplace_back(a.Get(i));
        headers.push_back(values.back().str);
      }
    }
    polylimit_http_request req{};
    req.version = POLYLIMIT_HTTP_REQUEST_VERSION;
    req.method = method.str;
    req.path = path.str;
    req.route = route.str;
    req.peer = peer.str;
    req.headers = headers.data();
    req.header_count = headers.size();
    req.user = user.str;
    req.tenant = tenant.str;
    req.app_key = app_key.str;
    req.cost = to_int64(info[8]);
    req.plan = plan.str;
    polylimit_http_step step;
    polylimit_error err;
    if (polylimit_http_prepare(policy_, &req, &step, &err) != POLYLIMIT_OK) throw library_error(env, err);
    Napi::Object out = Napi::Object::New(env);
    out.Set("code", Napi::Number::New(env, step.action));
    out.Set("status", Napi::Number::New(env, step.status));
    out.Set("ruleIndex", Napi::Number::New(env, step.rule));
    out.Set("limiterIndex", Napi::Number::New(env, step.limiter));
    out.Set("cost", Napi::Number::New(env, static_cast<double>(step.cost)));
    if (step.action == POLYLIMIT_HTTP_CHECK) {
      if (app_key.bytes)
        out.Set("key", Napi::Buffer<char>::Copy(env, step.key, step.key_len));
      else
        out.Set("key", Napi::String::New(env, step.key, step.key_len));
    } else {
      out.Set("key", Napi::String::New(env, ""));
    }
    return out;
  }

  // The C step again, from the fields prepare() gave.
  static polylimit_http_step step_of(const Napi::Value& v) {
    polylimit_http_step step{};
    if (!v.IsObject()) return step;
    Napi::Object o = v.As<Napi::Object>();
    step.action = to_int(o, "code");
    step.status = to_int(o, "status");
    step.rule = o.Get("ruleIndex").IsNumber() ? o.Get("ruleIndex").As<Napi::Number>().Int32Value() : -1;
    step.limiter = o.Get("limiterIndex").IsNumber() ? o.Get("limiterIndex").As<Napi::Number>().Int32Value() : -1;
    step.cost = to_int64(o.Get("cost"));
    Key key(o.Get("key"));
    step.key_len = key.size < sizeof step.key ? key.size : sizeof step.key;
    if (step.key_len > 0) memcpy(step.key, key.data, step.key_len);
    return step;
  }

  // A Decision (or any object with its fields) as the C struct.
  static polylimit_decision decision_of(const Napi::Object& o) {
    polylimit_decision d{};
    d.allowed = o.Get("allowed").ToBoolean() ? 1 : 0;
    d.cached = o.Get("cached").ToBoolean() ? 1 : 0;
    d.degraded = o.Get("degraded").ToBoolean() ? 1 : 0;
    d.shadowed = o.Get("shadowed").ToBoolean() ? 1 : 0;
    d.limit = to_int64(o.Get("limit"));
    d.remaining = to_int64(o.Get("remaining"));
    d.retry_after_ms = to_int64(o.Get("retryAfterMs"));
    d.reset_after_ms = to_int64(o.Get("resetAfterMs"));
    Napi::Value granted = o.Get("granted");
    d.granted = granted.IsNumber() ? to_int64(granted) : d.allowed;
    return d;
  }

  // answer(step, decision | null) -> { status, body, headers: "Name: value\n..." }
  Napi::Value Answer(const Napi::CallbackInfo& info) {
    Napi::Env env = info.Env();
    polylimit_http_step step = step_of(info[0]);
    polylimit_decision d{};
    const bool has = info[1].IsObject();
    if (has) d = decision_of(info[1].As<Napi::Object>());
    polylimit_http_response response;
    polylimit_error err;
    if (polylimit_http_answer(policy_, &step, has ? &d : nullptr, &response, &err) != POLYLIMIT_OK)
      throw library_error(env, err);
    Napi::Object out = Napi::Object::New(env);
    out.Set("status", Napi::Number::New(env, response.status));
    out.Set("body", Napi::String::New(env, response.body, response.body_len));
    out.Set("headers", Napi::String::New(env, response.headers, response.headers_len));
    return out;
  }

  // refundDue(step, decision, status) -> boolean
  Napi::Value RefundDue(const Napi::CallbackInfo& info) {
    polylimit_http_step step = step_of(info[0]);
    polylimit_decision d{};
    if (info[1].IsObject()) d = decision_of(info[1].As<Napi::Object>());
    const int status = info[2].IsNumber() ? info[2].As<Napi::Number>().Int32Value() : 0;
    return Napi::Boolean::New(info.Env(), polylimit_http_refund_due(policy_, &step, &d, status) == 1);
  }

  // Requests decided per rule and outcome, Prometheus text.
  Napi::Value Metrics(const Napi::CallbackInfo& info) {
    char* text = nullptr;
    size_t len = 0;
    polylimit_error err;
    if (polylimit_http_policy_metrics_prometheus(policy_, &text, &len, &err) != POLYLIMIT_OK)
      throw library_error(info.Env(), err);
    Napi::String s = Napi::String::New(info.Env(), text, len);
    polylimit_free(text);
    return s;
  }

  polylimit_http_policy* policy_ = nullptr;
  Napi::ObjectReference client_ref_;                // the client the document's limits are made on
  std::vector<std::shared_ptr<Closing>> closings_;  // of the limiters' clients, in address order
  bool leases_ = false;                             // a limiter gives units back when freed
};

std::vector<std::shared_ptr<Closing>> closings_of(const Napi::Value& client, const Napi::Value& limiters,
                                                  std::vector<polylimit_limiter*>* handles, bool* leases) {
  std::vector<std::shared_ptr<Closing>> closings;
  if (client.IsObject()) closings.push_back(Client::Unwrap(client.As<Napi::Object>())->closing());
  if (limiters.IsArray()) {
    Napi::Array array = limiters.As<Napi::Array>();
    for (uint32_t i = 0; i < array.Length(); ++i) {
      Limiter* l = Limiter::Unwrap(array.Get(i).As<Napi::Object>());
      handles->push_back(l->handle());
      *leases = *leases || l->leases();
      if (std::find(closings.begin(), closings.end(), l->closing()) == closings.end()) closings.push_back(l->closing());
    }
  }
  std::sort(closings.begin(), closings.end());
  return closings;
}

// A live policy (polylimit_http_live): the current policy per request
// (current() -> a reference, wrapped by a NativePolicy), reloads, the plan
// resolver's cache. Everything is synchronous: reload() parses a document
// (CPU, well under a millisecond); open() reads the file once, at start-up.
class Live : public Napi::ObjectWrap<Live> {
 public:
  static Napi::Function Define(Napi::Env env) {
    return DefineClass(env, "NativeLive",
                       {InstanceMethod("current", &Live::Current), InstanceMethod("generation", &Live::Generation),
                        InstanceMethod("lastError", &Live::LastError), InstanceMethod("reload", &Live::Reload),
                        InstanceMethod("reloadFile", &Live::ReloadFile),
                        InstanceMethod("cachedPlan", &Live::CachedPlan), InstanceMethod("cachePlan", &Live::CachePlan),
                        InstanceMethod("metrics", &Live::Metrics), InstanceMethod("close", &Live::Close)});
  }

  // new NativeLive(client, document | undefined, path | undefined, limiters[], watchMs)
  explicit Live(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Live>(info) {
    Napi::Env env = info.Env();
    std::vector<polylimit_limiter*> limiters;
    closings_ = closings_of(info[0], info[3], &limiters, &leases_);
    client_ref_ = Napi::Persistent(info[0].As<Napi::Object>());
    polylimit_client* client = Client::Unwrap(info[0].As<Napi::Object>())->handle();
    if (client == nullptr) throw closed_error(env);
    polylimit_error err;
    int rc;
    if (info[1].IsString()) {
      std::string document = info[1].As<Napi::String>().Utf8Value();
      rc = polylimit_http_live_new(client, document.data(), document.size(), limiters.data(), limiters.size(), &live_,
                                   &err);
    } else {
      std::string path = info[2].As<Napi::String>().Utf8Value();
      rc = polylimit_http_live_open(client, path.c_str(), limiters.data(), limiters.size(),
                                    static_cast<int>(to_int64(info[4])), &live_, &err);
    }
    if (rc != POLYLIMIT_OK) throw library_error(env, err);
  }

  ~Live() override { Free(); }

 private:
  void Free() {
    if (live_ == nullptr) return;
    PolicyFreeJob::Release(Env(), closings_, !leases_, live_, &PolicyFreeJob::FreeLive);
    live_ = nullptr;
  }

  polylimit_http_live* live(Napi::Env env) {
    if (live_ == nullptr) {
      polylimit_error err{};
      err.code = POLYLIMIT_ECLOSED;
      snprintf(err.message, sizeof err.message, "the live policy is closed");
      throw library_error(env, err);
    }
    return live_;
  }

  Napi::Value Current(const Napi::CallbackInfo& info) {
    return Napi::External<polylimit_http_policy>::New(info.Env(), polylimit_http_live_current(live(info.Env())));
  }

  Napi::Value Generation(const Napi::CallbackInfo& info) {
    return Napi::Number::New(info.Env(), static_cast<double>(polylimit_http_live_generation(live(info.Env()))));
  }

  static Napi::Value Text(Napi::Env env, int rc, char* text, size_t len, const polylimit_error& err) {
    if (rc != POLYLIMIT_OK) throw library_error(env, err);
    Napi::String s = Napi::String::New(env, text, len);
    polylimit_free(text);
    return s;
  }

  Napi::Value LastError(const Napi::CallbackInfo& info) {
    char* text = nullptr;
    size_t len = 0;
    polylimit_error err;
    const int rc = polylimit_http_live_last_error(live(info.Env()), &text, &len, &err);
    return Text(info.Env(), rc, text, len, err);
  }

  Napi::Value Metrics(const Napi::CallbackInfo& info) {
    char* text = nullptr;
    size_t len = 0;
    polylimit_error err;
    const int rc = polylimit_http_live_metrics_prometheus(live(info.Env()), &text, &len, &err);
    return Text(info.Env(), rc, text, len, err);
  }

  Napi::Value Reload(const Napi::CallbackInfo& info) {
    std::string document = info[0].As<Napi::String>().Utf8Value();
    polylimit_error err;
    if (polylimit_http_live_reload(live(info.Env()), document.data(), document.size(), &err) != POLYLIMIT_OK)
      throw library_error(info.Env(), err);
    return info.Env().Undefined();
  }

  Napi::Value ReloadFile(const Napi::CallbackInfo& info) {
    polylimit_error err;
    if (polylimit_http_live_reload_file(live(info.Env()), &err) != POLYLIMIT_OK) throw library_error(info.Env(), err);
    return info.Env().Undefined();
  }

  // cachedPlan(tenant) -> the plan, or undefined when not cached (or stale).
  Napi::Value CachedPlan(const Napi::CallbackInfo& info) {
    std::string tenant = info[0].ToString().Utf8Value();
    char plan[256];
    if (polylimit_http_live_cached_plan(live(info.Env()), tenant.data(), tenant.size(), plan, sizeof plan) != 1)
      return info.Env().Undefined();
    return Napi::String::New(info.Env(), plan);
  }

  Napi::Value CachePlan(const Napi::CallbackInfo& info) {
    std::string tenant = info[0].ToString().Utf8Value();
    std::string plan = info[1].ToString().Utf8Value();
    polylimit_error err;
    if (polylimit_http_live_cache_plan(live(info.Env()), tenant.data(), tenant.size(), plan.data(), plan.size(),
                                       &err) != POLYLIMIT_OK)
      throw library_error(info.Env(), err);
    return info.Env().Undefined();
  }

  // Stops the watcher and drops the live policy (policies taken stay valid).
  Napi::Value Close(const Napi::CallbackInfo& info) {
    Free();
    return info.Env().Undefined();
  }

  polylimit_http_live* live_ = nullptr;
  Napi::ObjectReference client_ref_;
  std::vector<std::shared_ptr<Closing>> closings_;
  bool leases_ = false;
};

// Context-aware: one instance per environment, nothing shared between them.
class Addon : public Napi::Addon<Addon> {
 public:
  Addon(Napi::Env env, Napi::Object exports) {
    DefineAddon(
        exports,
        {InstanceValue("NativeClient", Client::Define(env)), InstanceValue("NativeLimiter", Limiter::Define(env)),
         InstanceValue("NativePolicy", Policy::Define(env)), InstanceValue("NativeLive", Live::Define(env)),
         InstanceMethod("setFactories", &Addon::SetFactories),
         InstanceValue("version", Napi::String::New(env, polylimit_version_string()))});
  }

  // setFactories(decision, error):
  //   decision(limiter, allowed, limit, remaining, retryAfterMs, resetAfterMs,
  //            granted, degraded, cached, shadowed) -> a Decision
  //   error(message, status, outcomeUnknown) -> a PolylimitError
  Napi::Value SetFactories(const Napi::CallbackInfo& info) {
    decision_factory = Napi::Persistent(info[0].As<Napi::Function>());
    error_factory = Napi::Persistent(info[1].As<Napi::Function>());
    return info.Env().Undefined();
  }

  Napi::FunctionReference decision_factory;
  Napi::FunctionReference error_factory;
};

// (Without factories, as when the addon is loaded on its own: plain objects.)
Napi::Value decision_value(Napi::Env env, const polylimit_decision& d, Napi::Value owner) {
  Napi::FunctionReference& factory = env.GetInstanceData<Addon>()->decision_factory;
  if (!factory.IsEmpty()) {
    return factory.Call(
        {owner, Napi::Boolean::New(env, d.allowed != 0), Napi::Number::New(env, static_cast<double>(d.limit)),
         Napi::Number::New(env, static_cast<double>(d.remaining)),
         Napi::Number::New(env, static_cast<double>(d.retry_after_ms)),
         Napi::Number::New(env, static_cast<double>(d.reset_after_ms)),
         Napi::Number::New(env, static_cast<double>(d.granted)), Napi::Boolean::New(env, d.degraded != 0),
         Napi::Boolean::New(env, d.cached != 0), Napi::Boolean::New(env, d.shadowed != 0)});
  }
  Napi::Object o = Napi::Object::New(env);
  o.Set("allowed", Napi::Boolean::New(env, d.allowed != 0));
  o.Set("limit", Napi::Number::New(env, static_cast<double>(d.limit)));
  o.Set("remaining", Napi::Number::New(env, static_cast<double>(d.remaining)));
  o.Set("retryAfterMs", Napi::Number::New(env, static_cast<double>(d.retry_after_ms)));
  o.Set("resetAfterMs", Napi::Number::New(env, static_cast<double>(d.reset_after_ms)));
  o.Set("granted", Napi::Number::New(env, static_cast<double>(d.granted)));
  o.Set("degraded", Napi::Boolean::New(env, d.degraded != 0));
  o.Set("cached", Napi::Boolean::New(env, d.cached != 0));
  o.Set("shadowed", Napi::Boolean::New(env, d.shadowed != 0));
  return o;
}

Napi::Value error_value(Napi::Env env, const polylimit_error& err) {
  Napi::FunctionReference& factory = env.GetInstanceData<Addon>()->error_factory;
  if (factory.IsEmpty()) return library_error(env, err).Value();
  return factory.Call({Napi::String::New(env, err.message[0] ? err.message : polylimit_status_name(err.code)),
                       Napi::Number::New(env, err.code), Napi::Boolean::New(env, err.outcome_unknown != 0)});
}

}  // namespace

NODE_API_ADDON(Addon)
