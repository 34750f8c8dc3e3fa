"""Fixtures for the polylimit Python suite: throwaway redis-server processes
on free loopback ports (as tests/redis-server.sh starts them), and a tiny RESP
client so tests can poke the server without another dependency."""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
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


class RedisServer:
    def __init__(self, proc, port, directory):
        self.proc = proc
        self.port = port
        self.dir = directory
        self.url = "redis://127.0.0.1:%d" % port

    @property
    def pid(self):
        return self.proc.pid

    def command(self, *args):
        return resp_command(self.port, *args)

    def stop(self):
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)  # in case a test left it stopped
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def start_redis(*extra):
    """Starts redis-server in the foreground (a child we own) and waits for PING."""
    exe = shutil.which("redis-server")
    if exe is None:
        pytest.skip("redis-server is not installed")
    directory = tempfile.mkdtemp(prefix="polylimit-py-redis-")
    for _ in range(5):
        port = _free_port()
        proc = subprocess.Popen(
            [exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", directory, "--protected-mode", "no", "--daemonize", "no",
             "--logfile", os.path.join(directory, "redis.log"), *extra],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                if resp_command(port, "PING", timeout=0.5) == "PONG":
                    return RedisServer(proc, port, directory)
            except OSError:
                time.sleep(0.05)
        proc.kill()
        proc.wait()
    shutil.rmtree(directory, ignore_errors=True)
    raise RuntimeError("redis-server did not start")


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
