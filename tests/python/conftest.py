"""Fixtures for the polylimit Python suite: throwaway redis-server processes
on free loopback ports, started by tests/fixture/redisfix (the launcher every
language's fixtures share), and a tiny RESP client so tests can poke the
server without another dependency."""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid

import pytest


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def resp_command(port, *args, timeout=5.0):
    """Sends one command, returns the decoded reply (errors as RuntimeError)."""
    payload = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        payload += b"$%d\r\n%s\r\n" % (len(a), a)
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(payload)
        f = s.makefile("rb")
        return _read_reply(f)


def pending_requests(port):
    """How many connections to the local listener on `port` hold bytes it has
    not read (Linux /proc/net/tcp): a request sent to a server that is
    frozen (SIGSTOP) or never answers. Lets a test wait for "the request is
    on its way" instead of sleeping."""
    n = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            local, state, queues = fields[1], fields[3], fields[4]
            rx_queue = int(queues.split(":")[1], 16)
            if int(local.rsplit(":", 1)[1], 16) == port and state == "01" and rx_queue > 0:
                n += 1
    return n


def wait_until(condition, timeout=5.0, what="the condition"):
    """Polls `condition` until it is true; fails the test after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail("%s did not hold within %.1f s" % (what, timeout))
        time.sleep(0.005)


def _read_reply(f):
    line = f.readline()
    if not line:
        raise ConnectionError("connection closed")
    kind, rest = line[:1], line[1:-2]
    if kind == b"+":
        return rest.decode()
    if kind == b"-":
        raise RuntimeError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = f.read(n + 2)
        return data[:-2]
    if kind == b"*":
        n = int(rest)
        return None if n < 0 else [_read_reply(f) for _ in range(n)]
    raise RuntimeError("bad reply %r" % line)


# The launcher: $POLYLIMIT_REDISFIX, else the one of this source tree.
REDISFIX = os.environ.get("POLYLIMIT_REDISFIX") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), os.pardir, "fixture", "redisfix"
)


class RedisServer:
    """One redis-server, run by a redisfix process (`proc`); `pid` is the
    server's own (for SIGSTOP/SIGCONT), `dir` its directory."""

    def __init__(self, proc, port, directory, pid):
        self.proc = proc
        self.port = port
        self.dir = directory
        self._pid = pid
        self.url = "redis://127.0.0.1:%d" % port

    @property
    def pid(self):
        return self._pid

    def command(self, *args):
        return resp_command(self.port, *args)

    def stop(self):
        """Resumes the server (in case a test left it stopped), terminates it
        and removes its directory: the launcher does all of it. Idempotent."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("stop\n")
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()


def start_redis(*extra):
    """Starts redis-server (extra arguments appended) and waits until it answers."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    # stdin stays open: the launcher stops the server at "stop" or when this
    # process dies and the pipe closes.
    proc = subprocess.Popen(
        [sys.executable, REDISFIX, "standalone", "--", *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    line = proc.stdout.readline()
    desc = json.loads(line) if line.strip() else {"error": "no output (status %s)" % proc.wait()}
    if "error" in desc:
        proc.stdin.close()
        proc.wait()
        proc.stdout.close()
        raise RuntimeError("redisfix standalone: " + desc["error"])
    node = desc["nodes"][0]
    return RedisServer(proc, node["port"], node["dir"], node["pid"])


@pytest.fixture(scope="session")
def redis_server():
    server = start_redis()
    yield server
    server.stop()


@pytest.fixture
def private_redis():
    """A server of the test's own, for tests that stop or reconfigure it."""
    server = start_redis()
    yield server
    server.stop()


@pytest.fixture(params=["memory", "redis"])
def url(request):
    """Both backends: every API test runs in process and against Redis."""
    if request.param == "memory":
        return "memory://"
    return request.getfixturevalue("redis_server").url


@pytest.fixture
def key():
    """A fresh key per test, so tests never share state."""
    return "test:" + uuid.uuid4().hex


@pytest.fixture
def prefix():
    return "rlpy" + uuid.uuid4().hex[:8]
