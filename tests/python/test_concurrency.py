"""Exactness under threads and processes, and fork safety."""

import os
import threading

import polylimit
import pytest

PROCESSES = 8
THREADS = 8
LIMIT = 1000
ATTEMPTS_PER_THREAD = 25  # 8 * 8 * 25 = 1600 attempts for 1000 admissions


def _hammer(limiter, key, threads, attempts):
    """Runs `threads` threads of `attempts` checks each; returns admissions."""
    admitted = [0] * threads
    errors = []
    start = threading.Barrier(threads)

    def run(i):
        try:
            start.wait()
            for _ in range(attempts):
                admitted[i] += limiter.check(key).allowed
        except BaseException as e:  # reported by the caller
            errors.append(repr(e))

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        raise RuntimeError("; ".join(errors))
    return sum(admitted)


def _fork_workers(count, body):
    """Forks `count` children running body() -> int; returns their results.
    Children report through a pipe and leave with os._exit, so pytest's
    machinery never runs twice."""
    children = []
    for _ in range(count):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.close(r)
                os.write(w, str(body()).encode())
            except BaseException as e:
                os.write(w, ("error: %r" % e).encode())
                code = 1
            finally:
                os._exit(code)
        os.close(w)
        children.append((pid, r))
    results = []
    for pid, r in children:
        with os.fdopen(r, "rb") as f:
            out = f.read().decode()
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, out
        results.append(int(out))
    return results


def test_threads_share_one_limit_exactly(url, key):
    with polylimit.Client(url, pool_size=4) as client:
        lim = client.limiter(limit=LIMIT, window=600)
        assert _hammer(lim, key, 16, 100) == LIMIT


def test_processes_times_threads_exact(redis_server, key):
    # Each child opens its own client: the usual multi-process deployment.
    def child():
        with polylimit.Client(redis_server.url) as client:
            return _hammer(client.limiter(limit=LIMIT, window=600), key, THREADS, ATTEMPTS_PER_THREAD)

    results = _fork_workers(PROCESSES, child)
    assert sum(results) == LIMIT
    with polylimit.Client(redis_server.url) as client:
        assert client.limiter(limit=LIMIT, window=600).peek(key).remaining == 0


def test_client_created_before_fork_is_exact(redis_server, key):
    # The parent has live pooled connections when it forks; every child must
    # make its own (the core sees the pid change) and the total stays exact.
    with polylimit.Client(redis_server.url) as client:
        lim = client.limiter(limit=LIMIT, window=600)
        assert _hammer(lim, key, THREADS, 5) == THREADS * 5
        already = THREADS * 5

        results = _fork_workers(PROCESSES, lambda: _hammer(lim, key, THREADS, ATTEMPTS_PER_THREAD))
        assert already + sum(results) == LIMIT
        # The parent's connections were not disturbed by the children.
        assert lim.peek(key).remaining == 0
        assert lim.check(key + ":after").allowed


def test_async_after_fork(redis_server, key):
    import asyncio

    with polylimit.Client(redis_server.url) as client:
        lim = client.limiter("100/m")

        async def some():
            return sum(d.allowed for d in await asyncio.gather(*(lim.acheck(key) for _ in range(10))))

        assert asyncio.run(some()) == 10  # the parent's executor exists now
        results = _fork_workers(2, lambda: asyncio.run(some()))
        assert sum(results) == 20
        assert lim.peek(key).remaining == 70


@pytest.mark.parametrize("backend", ["memory"])
def test_memory_backend_is_per_process(backend, key):
    # memory:// state is this process's: a forked child starts from a copy.
    with polylimit.Client("memory://") as client:
        lim = client.limiter("2/m")
        assert lim.check(key)
        results = _fork_workers(1, lambda: sum(lim.check(key).allowed for _ in range(3)))
        assert results == [1]
        assert lim.check(key).remaining == 0


def test_close_while_other_threads_check(url, key):
    # Calls in flight finish; later ones raise POLYLIMIT_ECLOSED; nothing crashes.
    client = polylimit.Client(url)
    lim = client.limiter(limit=LIMIT, window=600)
    outcomes = {"ok": 0, "closed": 0, "other": []}
    lock = threading.Lock()
    go = threading.Event()

    def run():
        go.wait()
        for _ in range(200):
            try:
                lim.check(key)
                kind = "ok"
            except polylimit.Error as e:
                if e.code != "POLYLIMIT_ECLOSED":
                    with lock:
                        outcomes["other"].append(repr(e))
                    return
                kind = "closed"
            with lock:
                outcomes[kind] += 1

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    go.set()
    client.close()
    for t in threads:
        t.join()
    assert outcomes["other"] == []
    assert outcomes["ok"] + outcomes["closed"] == 800 and outcomes["closed"] > 0


def test_fork_while_parent_threads_are_mid_call(redis_server, key):
    # Children are forked while parent threads hold pooled connections and
    # sit inside the core: the children must neither deadlock nor reuse those
    # connections, and the total across all processes stays exact.
    with polylimit.Client(redis_server.url, pool_size=4) as client:
        lim = client.limiter(limit=LIMIT, window=600)
        parent_admitted = []
        t = threading.Thread(target=lambda: parent_admitted.append(_hammer(lim, key, 4, 150)))
        t.start()
        results = _fork_workers(4, lambda: _hammer(lim, key, 4, 40))
        t.join()
        assert sum(results) + parent_admitted[0] == LIMIT  # 600 + 640 attempts
