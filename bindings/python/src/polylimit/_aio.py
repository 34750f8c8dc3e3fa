"""The a* calls without threads: acheck, acheck_many, apeek, areset,
acheck_at_most, acheck_limit and arefund complete on the event loop.

A check is submitted to the core (polylimit_limiter_submit_check), which
sends it and returns. Each event loop has one polylimit queue (per process),
shared by every client and limiter; its fd (an epoll set holding the sockets
of the calls in flight, docs/transport.md) is registered with
``loop.add_reader``, and the reader polls the queue, which reads the replies
that are in without waiting, and resolves the waiting futures by token.
No Python thread waits for Redis, and the loop never blocks on it (but for
the first check of a client, which may connect, bounded by connect_timeout).

What belongs to whom:

- A client owns nothing here: closing it completes its checks in flight
  with ClosedError through the same queue (every submitted check completes
  exactly once, by the C API's rule).
- A loop's queue is freed when the loop is garbage-collected, or by the
  next loop that needs a queue once the loop is closed; completions still
  in flight are then dropped (polylimit_queue_free's rule).
- After fork() the child never touches the parent's queues (their locks may
  be held by threads that do not exist there): it makes its own.
"""

import asyncio
import os
import threading
import weakref
from typing import Any, Dict, List, Optional, Tuple, cast

from . import _core, _vocabulary
from ._errors import Error

# Completions taken per poll: one drain call resolves up to this many futures
# before it polls again (it loops until the queue is empty).
_POLL_BATCH = 256
_MAX_BATCH = _vocabulary.BOUNDS["batch"][1]


class _LoopQueue:
    """The queue of one event loop, and the futures waiting on it by token.
    Used only from the loop's own thread. Holds no reference to the loop, so
    that the loop can be collected while registered here."""

    __slots__ = ("queue", "futures", "next_token", "pid", "finalizer")

    def __init__(self) -> None:
        self.queue = _core.Queue()
        self.futures: Dict[int, "asyncio.Future[Any]"] = {}
        self.next_token = 1
        self.pid = _pid
        self.finalizer: "Optional[weakref.finalize[[], Any]]" = None

    def drain(self) -> None:
        """The eventfd's reader: resolves every waiting completion."""
        poll, futures = self.queue.poll, self.futures
        while True:
            batch = poll(_POLL_BATCH)
            for token, status, result in batch:
                future = futures.pop(token, None)
                if future is None or future.done():  # its waiter was cancelled
                    continue
                if status == 0:
                    future.set_result(result)
                else:
                    future.set_exception(cast(Error, result))
            if len(batch) < _POLL_BATCH:
                return


_pid = os.getpid()  # refreshed in a forked child: os.getpid() is a system call
_lock = threading.Lock()
_queues: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopQueue]" = weakref.WeakKeyDictionary()
# Loops that cannot watch a file descriptor (add_reader) or be weakly
# referenced: the a* calls fall back to the client's thread pool there.
_unsupported: "weakref.WeakSet[asyncio.AbstractEventLoop]" = weakref.WeakSet()


def _release(loop: Any, lq: _LoopQueue) -> None:
    """Frees a closed loop's queue (the loop no longer polls its fd)."""
    try:
        loop.remove_reader(lq.queue.fd())  # a no-op on a closed asyncio loop
    except Exception:
        pass
    if lq.finalizer is not None:
        lq.finalizer()  # closes the queue once, and forgets the loop
    lq.futures.clear()


def queue_for(loop: asyncio.AbstractEventLoop) -> Optional[_LoopQueue]:
    """The running loop's queue, made on first use; None when this loop
    cannot watch the queue (use the thread pool then)."""
    lq = _queues.get(loop)
    if lq is not None and lq.pid == _pid:
        return lq
    if loop in _unsupported:
        return None
    with _lock:
        # Queues of loops closed since the last new queue: free them now
        # rather than when the garbage collector gets to their loops.
        for other, stale in list(_queues.items()):
            if other.is_closed():
                del _queues[other]
                _release(other, stale)
        lq = _LoopQueue()
        try:
            loop.add_reader(lq.queue.fd(), lq.drain)
        except (NotImplementedError, AttributeError):
            lq.queue.close()
            _unsupported.add(loop)
            return None
        try:
            # Frees the queue when the loop is collected; the loop's selector,
            # which watched the fd, is gone by then.
            lq.finalizer = weakref.finalize(loop, lq.queue.close)
            _queues[loop] = lq
        except TypeError:  # a loop that cannot be weakly referenced
            loop.remove_reader(lq.queue.fd())
            lq.queue.close()
            return None
        return lq


async def call(loop: asyncio.AbstractEventLoop, lq: _LoopQueue, submit: Any, *args: Any) -> Any:
    """One non-blocking call on the running loop and its queue:
    ``submit(*args, queue, token)`` (a ``_core.Limiter.submit_*``), then its
    completion."""
    token = lq.next_token
    lq.next_token = token + 1
    # Raises as the blocking call would when the core refuses (closed client,
    # bad argument; an outage comes as a completion, after the failure
    # policy); the completion cannot be drained before the future is
    # registered: drain runs on this thread.
    submit(*args, lq.queue, token)
    future = loop.create_future()
    lq.futures[token] = future
    try:
        return await future
    except asyncio.CancelledError:
        lq.futures.pop(token, None)  # its completion is ignored when it comes
        raise


async def check_many(
    loop: asyncio.AbstractEventLoop,
    lq: _LoopQueue,
    core: "_core.Limiter",
    keys: Any,
    cost: Any,
    return_exceptions: bool,
) -> List[Any]:
    """check_many's results and errors, from one submit per key: the checks
    are in flight together (the core pipelines them on its connections)."""
    keys = list(keys)  # (a str or bytes never gets here: Limiter.acheck_many)
    n = len(keys)
    if n == 0 or n > _MAX_BATCH:
        # No round trip either way: [] or the core's refusal of the batch size.
        return core.check_many(keys, cost, return_exceptions)
    first = lq.next_token
    lq.next_token = first + n
    results: List[Any] = core.submit_check_many(keys, cost, lq.queue, first)
    refused = [r for r in results if r is not None]
    pending: List[Tuple[int, "asyncio.Future[Any]"]] = []
    for i, r in enumerate(results):
        if r is None:
            future = loop.create_future()
            lq.futures[first + i] = future
            pending.append((i, future))
    try:
        for i, future in pending:
            try:
                results[i] = await future
            except Error as e:
                e.index = i
                results[i] = e
    except asyncio.CancelledError:
        for i, _ in pending:
            lq.futures.pop(first + i, None)
        raise
    if return_exceptions:
        return results
    failed = [i for i, r in enumerate(results) if isinstance(r, Error)]
    if not failed:
        return results
    raise _batch_error(results, failed, len(refused) == n)


def _batch_error(results: List[Any], failed: List[int], all_refused: bool) -> Error:
    """The error check_many raises: the first failed key's class, its message
    prefixed "keys[i]: " (as the core words it), .index and .results. A batch
    the core refused for every key with the same error (a closed client, a
    bad cost) is check_many's whole-call refusal: its message unprefixed."""
    first: Error = results[failed[0]]
    whole = all_refused and all(type(results[i]) is type(first) and str(results[i]) == str(first) for i in failed)
    exc = type(first)(str(first) if whole else "keys[%d]: %s" % (failed[0], first))
    exc.code = first.code
    exc.status = first.status
    exc.sys_errno = first.sys_errno
    exc.outcome_unknown = any(results[i].outcome_unknown for i in failed)
    exc.index = failed[0]
    exc.results = results  # type: ignore[attr-defined]
    return exc


def _after_fork_in_child() -> None:
    global _pid, _lock, _queues, _unsupported
    _pid = os.getpid()
    _lock = threading.Lock()
    # The parent's queues stay allocated: _core.Queue.close() leaves a queue
    # made in another process alone.
    _queues = weakref.WeakKeyDictionary()
    _unsupported = weakref.WeakSet()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
