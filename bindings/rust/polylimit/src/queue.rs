//! `check_async` over the library's completion queue (feature `tokio`).
//!
//! A client has one `polylimit_queue` per tokio runtime that uses it. A
//! check is submitted without waiting, with a token; its oneshot sender
//! waits in `pending` under that token. One reaper task per queue, spawned
//! on that runtime, watches the queue's eventfd with `AsyncFd` and, when it
//! is readable, drains every waiting completion and sends each to its
//! future. So no thread waits per call and no runtime thread blocks on
//! Redis. Per runtime, because the fd is registered with one runtime's
//! reactor and the reaper runs only while that runtime is driven: a runtime
//! that is idle or shut down must not hold up another's checks.

use crate::error::Error;
use crate::{sys, Decision, Limiter};
use std::collections::HashMap;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::io::unix::AsyncFd;
use tokio::sync::oneshot;

type Reply = Result<sys::polylimit_decision, Error>;

/// The queues of one client, by runtime.
#[derive(Default)]
pub(crate) struct Queues(Mutex<Vec<(tokio::runtime::Id, Arc<Queue>)>>);

impl Queues {
    /// The queue of the current runtime, made (with its reaper) on first use.
    fn current(&self) -> Result<Arc<Queue>, Error> {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return Err(Error::invalid("check_async needs a tokio runtime (with I/O enabled)"));
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
    pending: Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
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

/// The queue's eventfd for `AsyncFd`, borrowed: the queue owns and closes
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
            pending: Mutex::new(HashMap::new()),
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

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<Reply>>> {
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
                // Drain until a poll finds nothing; only then clear readiness
                // (tokio keeps it set if the fd became readable meanwhile).
                loop {
                    // SAFETY: buf holds buf.len() completions.
                    let n = unsafe { sys::polylimit_queue_poll(q.handle, buf.as_mut_ptr(), buf.len(), 0) };
                    if n == 0 {
                        break;
                    }
                    let mut pending = q.pending();
                    for c in &buf[..n] {
                        if let Some(tx) = pending.remove(&c.token) {
                            let reply = if c.status == sys::POLYLIMIT_OK {
                                Ok(c.decision)
                            } else {
                                Err(Error::from_c(c.status, &c.error))
                            };
                            // The future may be gone (dropped): nothing to do.
                            let _ = tx.send(reply);
                        }
                    }
                }
                ready.clear_ready();
                if q.closing.load(Ordering::Acquire) && q.pending().is_empty() {
                    break;
                }
            }
            // Only an fd error ends the loop with checks pending: fail them
            // (their senders drop) rather than leave their futures waiting.
            q.pending().clear();
        });
        Ok(())
    }
}

impl Limiter {
    /// As [`check`](Limiter::check), without blocking the runtime: the
    /// check is submitted to the library's completion queue and this future
    /// resolves when Redis answers. Needs a tokio runtime with I/O enabled.
    ///
    /// Cancel safety: once this future has been polled, the check has been
    /// sent. Dropping the future does not recall it: it may still consume
    /// units, and its decision is discarded.
    ///
    /// The first call on a client may connect on the calling thread
    /// (bounded by the client's connect timeout), as the C library does.
    pub async fn check_async(&self, key: impl AsRef<[u8]>, cost: i64) -> Result<Decision, Error> {
        let rx = self.submit(key.as_ref(), cost)?;
        match rx.await {
            Ok(Ok(d)) => Ok(Decision::new(d, self)),
            Ok(Err(e)) => Err(e),
            // The reaper dropped the sender: the client was closed, or the
            // queue's fd failed. The check may have run (outcome unknown).
            Err(_) => Err(Error::from_detail(crate::Detail {
                code: -11,
                sys_errno: 0,
                outcome_unknown: true,
                message: "the check's completion was lost: the client was closed or its completion queue failed"
                    .to_string(),
            })),
        }
    }

    fn submit(&self, key: &[u8], cost: i64) -> Result<oneshot::Receiver<Reply>, Error> {
        let client = &self.inner.client.inner;
        let open = client.read();
        if open.is_null() {
            return Err(Error::new(-11, "client is closed"));
        }
        let q = client.queues.current()?;
        let token = q.next_token.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        // Registered before submitting: the completion may arrive at once.
        q.pending().insert(token, tx);
        let r = crate::error::call(|err| {
            // SAFETY: a live limiter and queue; key is valid for the call.
            unsafe {
                sys::polylimit_limiter_submit_check(
                    self.inner.handle,
                    key.as_ptr().cast(),
                    key.len(),
                    cost,
                    q.handle,
                    token,
                    err,
                )
            }
        });
        drop(open);
        if let Err(e) = r {
            q.pending().remove(&token);
            return Err(e);
        }
        Ok(rx)
    }
}
