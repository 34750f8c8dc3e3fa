//! The `_async` operations over the library's completion queue (feature
//! `tokio`).
//!
//! A client has one `polylimit_queue` per tokio runtime that uses it. A call
//! is submitted without waiting, with a token; its oneshot sender waits in
//! `pending` under that token. One reaper task per queue, spawned on that
//! runtime, watches the queue's fd with `AsyncFd` and, when it is
//! readable, drains every waiting completion and sends each to its future.
//! So no thread waits per call and no runtime thread blocks on Redis. Per
//! runtime, because the fd is registered with one runtime's reactor and the
//! reaper runs only while that runtime is driven: a runtime that is idle or
//! shut down must not hold up another's calls.
//!
//! Every operation goes through [`Limiter::submit`]: only the C submit call
//! differs. `check_many_async` also hands the library three result arrays,
//! which it writes just before queuing the completion; they live in the
//! pending entry (not in the future, which may be dropped) until the reaper
//! has polled that completion, or until the queue is freed.

use crate::error::Error;
use crate::{key_parts, ms_i64, sys, Decision, Limiter};
use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, TryLockError};
use std::time::Duration;
use tokio::io::unix::AsyncFd;
use tokio::sync::oneshot;

/// One completion, as the reaper hands it to its future.
struct Done {
    /// The completion's status (and decision, or error).
    result: Result<sys::polylimit_decision, Error>,
    /// check_many's arrays, filled, back from the library.
    batch: Option<Batch>,
}

/// check_many_async's result arrays. The library owns them from the submit
/// until their completion has been polled (or the queue freed); moving this
/// struct does not move the heap buffers it points into.
struct Batch {
    out: Vec<sys::polylimit_decision>,
    statuses: Vec<c_int>,
    key_errors: Vec<sys::polylimit_error>,
}

impl Batch {
    fn new(n: usize) -> Batch {
        Batch {
            out: vec![sys::polylimit_decision::default(); n],
            // 1 is no status the library writes: it marks "left untouched".
            statuses: vec![1; n],
            key_errors: vec![sys::polylimit_error::default(); n],
        }
    }
}

/// The pending map's hasher: tokens are distinct counters the library hands
/// back, never chosen by anyone else, so one multiplication spreads them
/// (no SipHash per insert and per removal, twice a call).
#[derive(Default, Clone, Copy)]
struct TokenHasher(u64);

impl std::hash::Hasher for TokenHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type Tokens = std::hash::BuildHasherDefault<TokenHasher>;

/// A submitted call waiting for its completion.
struct Pending {
    /// None once the reaper gave up (its fd failed): the future then fails.
    tx: Option<oneshot::Sender<Done>>,
    /// Must outlive the library's use of it, whatever the future does.
    batch: Option<Batch>,
}

/// What a submit came to.
enum Submitted {
    /// In the queue: the receiver gets the completion.
    Queued(oneshot::Receiver<Done>),
    /// Refused by the library at once (bad arguments; a whole batch refused),
    /// with check_many's arrays as the library filled them.
    Refused(Error, Option<Batch>),
    /// The client is closed (`false`) or being closed (`true`): nothing was
    /// submitted.
    Closed(bool),
}

/// The queues of one client, by runtime.
#[derive(Default)]
pub(crate) struct Queues(Mutex<Vec<(tokio::runtime::Id, Arc<Queue>)>>);

impl Queues {
    /// The queue of the current runtime, made (with its reaper) on first use.
    fn current(&self) -> Result<Arc<Queue>, Error> {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return Err(Error::invalid(
                "the _async operations need a tokio runtime (with I/O enabled)",
            ));
        };
        let id = rt.id();
        let mut qs = self.0.lock().unwrap_or_else(|e| e.into_inner());
        // A queue whose reaper ended belongs to a runtime that shut down
        // (runtime ids are never reused): drop it.
        qs.retain(|(_, q)| q.reaping.load(Ordering::Acquire));
        if let Some((_, q)) = qs.iter().find(|(i, _)| *i == id) {
            return Ok(q.clone());
        }
        let q = Arc::new(Queue::new()?);
        q.start_reaper()?;
        qs.push((id, q.clone()));
        Ok(q)
    }

    pub(crate) fn shutdown(&self) {
        for (_, q) in self.0.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            q.shutdown();
        }
    }
}

pub(crate) struct Queue {
    handle: *mut sys::polylimit_queue,
    next_token: AtomicU64,
    /// Dropped after the queue is freed (field drops follow Drop::drop), so
    /// check_many arrays still in flight are never freed under the library.
    pending: Mutex<HashMap<u64, Pending, Tokens>>,
    /// True while the reaper task runs (it clears this when it ends, also
    /// when its runtime shuts down).
    reaping: AtomicBool,
    closing: AtomicBool,
}

// SAFETY: the C queue is safe to use from several threads; the Rust state is
// behind atomics and a mutex.
unsafe impl Send for Queue {}
unsafe impl Sync for Queue {}

impl Drop for Queue {
    fn drop(&mut self) {
        // SAFETY: the last reference. Checks still in flight complete into
        // the queue's memory, which the library keeps until they have.
        unsafe { sys::polylimit_queue_free(self.handle) };
    }
}

/// The queue's fd (an epoll set) for `AsyncFd`, borrowed: the queue owns and closes
/// it, and this holds the queue, so the fd stays open while it is registered.
/// Dropping it (the reaper ended, or its runtime shut down) marks the queue
/// as done.
struct QueueFd {
    queue: Arc<Queue>,
    fd: RawFd,
}

impl AsRawFd for QueueFd {
    fn as_raw_fd(&self) -> RawFd {
        self.fd
    }
}

impl Drop for QueueFd {
    fn drop(&mut self) {
        self.queue.reaping.store(false, Ordering::Release);
    }
}

impl Queue {
    fn new() -> Result<Queue, Error> {
        let mut h: *mut sys::polylimit_queue = std::ptr::null_mut();
        // SAFETY: valid out pointer.
        crate::error::call(|err| unsafe { sys::polylimit_queue_new(&mut h, err) })?;
        Ok(Queue {
            handle: h,
            next_token: AtomicU64::new(1),
            pending: Mutex::new(HashMap::default()),
            reaping: AtomicBool::new(false),
            closing: AtomicBool::new(false),
        })
    }

    /// Makes the reaper end once nothing is pending (the client closed).
    pub(crate) fn shutdown(&self) {
        self.closing.store(true, Ordering::Release);
        // SAFETY: a live queue.
        unsafe { sys::polylimit_queue_wake(self.handle) };
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Pending, Tokens>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Spawns the reaper on the current runtime.
    fn start_reaper(self: &Arc<Queue>) -> Result<(), Error> {
        self.reaping.store(true, Ordering::Release);
        // SAFETY: a live queue.
        let fd = unsafe { sys::polylimit_queue_fd(self.handle) };
        let qfd = QueueFd {
            queue: self.clone(),
            fd,
        };
        // SAFETY: the fd is open and the same for as long as QueueFd holds
        // the queue, which is the AsyncFd's whole lifetime.
        let afd = match unsafe { AsyncFd::register_with_interest(qfd, tokio::io::Interest::READABLE) } {
            Ok(a) => a,
            // Dropping the returned QueueFd clears `reaping`.
            Err(e) => return Err(Error::new(-1, format!("cannot watch the completion queue's fd: {e}"))),
        };
        tokio::spawn(async move {
            let q = afd.get_ref().queue.clone();
            let mut buf = vec![sys::polylimit_completion::default(); 64];
            loop {
                let Ok(mut ready) = afd.readable().await else { break };
                // Drain until a poll returns less than a full buffer (the queue
                // was empty then); only then clear readiness (tokio keeps it
                // set if the fd became readable meanwhile).
                loop {
                    // SAFETY: buf holds buf.len() completions.
                    let n = unsafe { sys::polylimit_queue_poll(q.handle, buf.as_mut_ptr(), buf.len(), 0) };
                    if n == 0 {
                        break;
                    }
                    let mut pending = q.pending();
                    for c in &buf[..n] {
                        // Polled: the library is done with the entry's arrays.
                        let Some(p) = pending.remove(&c.token) else { continue };
                        let result = if c.status == sys::POLYLIMIT_OK {
                            Ok(c.decision)
                        } else {
                            Err(Error::from_c(c.status, &c.error))
                        };
                        if let Some(tx) = p.tx {
                            // The future may be gone (dropped): its Done,
                            // arrays included, is dropped here.
                            let _ = tx.send(Done { result, batch: p.batch });
                        }
                    }
                    if n < buf.len() {
                        break;
                    }
                }
                ready.clear_ready();
                if q.closing.load(Ordering::Acquire) && q.pending().is_empty() {
                    break;
                }
            }
            // Only an fd error ends the loop with calls pending: fail their
            // futures (the senders drop) rather than leave them waiting. The
            // entries stay: a check_many's arrays may still be written until
            // the queue is freed, and are dropped only after that.
            for p in q.pending().values_mut() {
                p.tx = None;
            }
        });
        Ok(())
    }
}

/// The error of a future whose completion can no longer arrive.
fn lost() -> Error {
    // The reaper dropped the sender: the client was closed, or the queue's fd
    // failed. The call may have run (outcome unknown).
    Error::from_detail(crate::Detail {
        code: -11,
        sys_errno: 0,
        outcome_unknown: true,
        message: "the call's completion was lost: the client was closed or its completion queue failed".to_string(),
    })
}

fn closed() -> Error {
    Error::new(-11, "client is closed")
}

/// Waits for a one-key call's completion.
async fn completed(submitted: Result<Submitted, Error>) -> Result<sys::polylimit_decision, Error> {
    match submitted? {
        Submitted::Queued(rx) => rx.await.map_err(|_| lost())?.result,
        Submitted::Refused(e, _) => Err(e),
        Submitted::Closed(_) => Err(closed()),
    }
}

impl Limiter {
    /// Submits one call to the current runtime's queue: `start` makes the C
    /// submit call, given the limiter, the queue, the token and the error.
    /// `batch` (check_many's arrays) is parked in the pending entry before
    /// the call, since the completion may arrive at once. Never waits: a
    /// client that is being closed (another thread holds or waits for its
    /// lock for writing) counts as closed.
    fn submit(
        &self,
        batch: Option<Batch>,
        start: impl FnOnce(*mut sys::polylimit_limiter, *mut sys::polylimit_queue, u64, *mut sys::polylimit_error) -> c_int,
    ) -> Result<Submitted, Error> {
        let client = &self.inner.client.inner;
        let open = match client.handle.try_read() {
            Ok(g) => g,
            Err(TryLockError::Poisoned(e)) => e.into_inner(),
            Err(TryLockError::WouldBlock) => return Ok(Submitted::Closed(true)),
        };
        if open.is_null() {
            return Ok(Submitted::Closed(false));
        }
        let q = client.queues.current()?;
        let token = q.next_token.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        q.pending().insert(token, Pending { tx: Some(tx), batch });
        let r = crate::error::call(|err| start(self.inner.handle, q.handle, token, err));
        drop(open);
        match r {
            Ok(()) => Ok(Submitted::Queued(rx)),
            // Nothing was queued: the arrays are the caller's again.
            Err(e) => Ok(Submitted::Refused(e, q.pending().remove(&token).and_then(|p| p.batch))),
        }
    }

    /// As [`check`](Limiter::check), without blocking the runtime: the
    /// check is submitted to the library's completion queue and this future
    /// resolves when Redis answers. Needs a tokio runtime with I/O enabled.
    ///
    /// Cancel safety: nothing is sent until the first poll. Once this
    /// future has been polled, the check has been sent: dropping the future
    /// does not recall it, it may still consume units, and its decision is
    /// discarded.
    ///
    /// The first call on a client may connect on the calling thread
    /// (bounded by the client's connect timeout), as the C library does;
    /// this holds for every `_async` operation.
    pub async fn check_async(&self, key: impl AsRef<[u8]>, cost: i64) -> Result<Decision, Error> {
        let submitted = self.submit(None, |l, q, t, e| {
            let (k, n) = key_parts(key.as_ref());
            // SAFETY: a live limiter and queue; the key is valid for the
            // call, which copies it.
            unsafe { sys::polylimit_limiter_submit_check(l, k, n, cost, q, t, e) }
        });
        let d = completed(submitted).await?;
        Ok(Decision::new(d, self))
    }

    /// As [`peek`](Limiter::peek), without blocking the runtime.
    ///
    /// Cancel safety: a peek consumes nothing, so dropping this future at
    /// any point leaves the key as it was.
    pub async fn peek_async(&self, key: impl AsRef<[u8]>) -> Result<Decision, Error> {
        let submitted = self.submit(None, |l, q, t, e| {
            let (k, n) = key_parts(key.as_ref());
            // SAFETY: a live limiter and queue; the key is valid for the
            // call, which copies it.
            unsafe { sys::polylimit_limiter_submit_peek(l, k, n, q, t, e) }
        });
        let d = completed(submitted).await?;
        Ok(Decision::new(d, self))
    }

    /// As [`check_at_most`](Limiter::check_at_most), without blocking the
    /// runtime (a peek, then a check of what was free, each submitted from
    /// the completion of the one before); `granted` says how many.
    ///
    /// Cancel safety: once polled, the call runs to its end whatever happens
    /// to this future: dropping it may still consume up to `max_cost` units,
    /// and how many is then unknown.
    pub async fn check_at_most_async(&self, key: impl AsRef<[u8]>, max_cost: i64) -> Result<Decision, Error> {
        let submitted = self.submit(None, |l, q, t, e| {
            let (k, n) = key_parts(key.as_ref());
            // SAFETY: a live limiter and queue; the key is valid for the
            // call, which copies it.
            unsafe { sys::polylimit_limiter_submit_check_at_most(l, k, n, max_cost, q, t, e) }
        });
        let d = completed(submitted).await?;
        Ok(Decision::new(d, self))
    }

    /// As [`check_limit`](Limiter::check_limit) (`limit` per `window`, for
    /// this call only), without blocking the runtime.
    ///
    /// Cancel safety: as [`check_async`](Limiter::check_async): once polled,
    /// a dropped future's check may still consume.
    pub async fn check_limit_async(
        &self,
        key: impl AsRef<[u8]>,
        cost: i64,
        limit: i64,
        window: Duration,
    ) -> Result<Decision, Error> {
        let w = ms_i64(window);
        let submitted = self.submit(None, |l, q, t, e| {
            let (k, n) = key_parts(key.as_ref());
            // SAFETY: a live limiter and queue; the key is valid for the
            // call, which copies it.
            unsafe { sys::polylimit_limiter_submit_check_limit(l, k, n, cost, limit, w, q, t, e) }
        });
        let d = completed(submitted).await?;
        Ok(Decision::new(d, self))
    }

    /// As [`refund`](Limiter::refund), without blocking the runtime;
    /// answers as `peek`.
    ///
    /// Cancel safety: once polled, the refund has been sent: dropping the
    /// future does not recall it, and the units may still be given back.
    pub async fn refund_async(&self, key: impl AsRef<[u8]>, units: i64) -> Result<Decision, Error> {
        let submitted = self.submit(None, |l, q, t, e| {
            let (k, n) = key_parts(key.as_ref());
            // SAFETY: a live limiter and queue; the key is valid for the
            // call, which copies it.
            unsafe { sys::polylimit_limiter_submit_refund(l, k, n, units, q, t, e) }
        });
        let d = completed(submitted).await?;
        Ok(Decision::new(d, self))
    }

    /// As [`reset`](Limiter::reset), without blocking the runtime.
    ///
    /// Cancel safety: once polled, the reset has been sent: dropping the
    /// future does not recall it, and the key may still be cleared.
    pub async fn reset_async(&self, key: impl AsRef<[u8]>) -> Result<(), Error> {
        let submitted = self.submit(None, |l, q, t, e| {
            let (k, n) = key_parts(key.as_ref());
            // SAFETY: a live limiter and queue; the key is valid for the
            // call, which copies it.
            unsafe { sys::polylimit_limiter_submit_reset(l, k, n, q, t, e) }
        });
        completed(submitted).await.map(|_| ())
    }

    /// As [`acquire`](Limiter::acquire), without a sleeping thread: a denied
    /// try whose retry-after still fits in `timeout` is tried again from a
    /// timer thread of the client (one per client), and this future resolves
    /// with the last try's decision (`allowed == false` when admission would
    /// come after the timeout; it returns early then).
    ///
    /// Cancel safety: once polled, the tries go on until one admits or the
    /// timeout would pass, whatever happens to this future: a dropped
    /// future's acquire may still consume `cost` units, up to `timeout`
    /// later. Closing the client ends pending tries at once.
    pub async fn acquire_async(&self, key: impl AsRef<[u8]>, cost: i64, timeout: Duration) -> Result<Decision, Error> {
        let ms = ms_i64(timeout);
        let submitted = self.submit(None, |l, q, t, e| {
            let (k, n) = key_parts(key.as_ref());
            // SAFETY: a live limiter and queue; the key is valid for the
            // call, which copies it.
            unsafe { sys::polylimit_limiter_submit_acquire(l, k, n, cost, ms, q, t, e) }
        });
        let d = completed(submitted).await?;
        Ok(Decision::new(d, self))
    }

    /// As [`check_many`](Limiter::check_many), without blocking the runtime:
    /// the keys go out back to back (usually one round trip per node) and
    /// this future resolves once, when every key is decided, with the same
    /// per-key results and outer error as `check_many`. (One exception: while
    /// another thread is closing the client, this fails at once with
    /// [`Error::Closed`] where `check_many` would wait for the close and
    /// then fail each key with it.)
    ///
    /// Cancel safety: once polled, every key has been sent: dropping the
    /// future does not recall them, each may still consume `cost`, and the
    /// decisions are discarded. The result arrays the library writes into
    /// belong to the submitted call, not to this future, so dropping it at
    /// any point is memory-safe.
    pub async fn check_many_async<K: AsRef<[u8]>>(
        &self,
        keys: &[K],
        cost: i64,
    ) -> Result<Vec<Result<Decision, Error>>, Error> {
        let submitted = self.submit_many(keys, cost)?;
        let (whole, batch) = match submitted {
            Submitted::Queued(rx) => {
                let done = rx.await.map_err(|_| lost())?;
                (done.result.map(|_| ()), done.batch)
            }
            Submitted::Refused(e, batch) => (Err(e), batch),
            // A closed client refuses the batch before any I/O: the blocking
            // form answers at once, and exactly as it always does.
            Submitted::Closed(false) => return self.check_many(keys, cost),
            // Being closed: the blocking form would wait for the close.
            Submitted::Closed(true) => return Err(closed()),
        };
        let b = batch.expect("a check_many submit keeps its arrays");
        self.batch_results(whole, b.out, &b.statuses, &b.key_errors)
    }

    /// check_many_async's submit (no raw pointer lives across an await).
    fn submit_many<K: AsRef<[u8]>>(&self, keys: &[K], cost: i64) -> Result<Submitted, Error> {
        let n = keys.len();
        let ptrs: Vec<*const c_void> = keys.iter().map(|k| k.as_ref().as_ptr() as *const c_void).collect();
        let lens: Vec<usize> = keys.iter().map(|k| k.as_ref().len()).collect();
        let mut batch = Batch::new(n);
        let (out, statuses, key_errors) = (
            batch.out.as_mut_ptr(),
            batch.statuses.as_mut_ptr(),
            batch.key_errors.as_mut_ptr(),
        );
        let (p, ln) = (ptrs.as_ptr(), lens.as_ptr());
        // SAFETY: keys and their lengths are valid for the call (the library
        // copies them). The three arrays hold n elements in heap buffers that
        // stay put when `batch` moves into the pending entry, which keeps
        // them until the completion has been polled or the queue freed.
        self.submit(Some(batch), |l, q, t, e| unsafe {
            sys::polylimit_limiter_submit_check_many(l, p, ln, n, cost, out, statuses, key_errors, q, t, e)
        })
    }
}
