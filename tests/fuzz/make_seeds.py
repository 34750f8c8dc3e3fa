#!/usr/bin/env python3
"""Writes the seed corpora in tests/fuzz/corpus/<target>/ (run from anywhere).

The URL, rate-spec and reply seeds are the forms the docs show. The C ABI
seeds are call sequences laid out as fuzz_capi.cpp reads them through
libFuzzer's FuzzedDataProvider (strings from the front, numbers from the
back); a seed that no longer matches the harness is still a valid input.
"""

import os

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    path = os.path.join(HERE, "corpus", target, name)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# fuzz_url: byte 0 even = the URL as is, odd = built around marker passwords.
URLS = [
    "redis://127.0.0.1:6379",
    "redis://user:pass@localhost:6380/2",
    "redis://:secret@[::1]:6379/0",
    "rediss://user:pass@redis.example:6380",
    "unix:///run/redis.sock?db=3",
    "memory://",
    "redis+cluster://user:pass@10.0.0.1:7000,10.0.0.2:7001",
    "redis+sentinel://:pw@s1:26379,s2/mymaster/1?sentinel_user=u&sentinel_password=spw",
    "redis://user:secretpw@h:99999",
    "redis://h:1:2",
    "redis://:" + "&".join(["*"] * 40) + "@h:1*",  # one-character secrets the mask contains
]
for i, url in enumerate(URLS):
    write("fuzz_url", "url%02d" % i, b"\x00" + url.encode())
write("fuzz_url", "structured0", b"\x01\x02user\\x" + b"pw\\x" + b"\x01spw\\x" + b"127.0.0.1:99999/1\\x" + b"x=1")
write("fuzz_url", "structured1", b"\x01\x00\\x" + b"p%41ss\\x" + b"\x00\\x" + b"h:1:2\\x")

# fuzz_rate_spec: byte 0 = algorithm (0 sliding log, 1 sliding counter, 2 fixed window, 3 GCRA).
SPECS = [
    (0, "100/minute"),
    (0, "10/s"),
    (1, "5 per 2 seconds"),
    (0, "10/s; 1000/hour"),
    (3, "10/s burst 20"),
    (2, "200 per day, 50 per hour"),
    (0, "10/hour|100/day"),
    (0, "2000 per year"),
    (0, "1 per 3 months"),
    (0, "7/500ms"),
]
for i, (alg, spec) in enumerate(SPECS):
    write("fuzz_rate_spec", "spec%02d" % i, bytes([alg]) + spec.encode())

# fuzz_reply: byte 0 = the limits (see limits_for), byte 1 = chunk size (0: all at once).
REPLIES = [
    (0x00, 0, b"*5\r\n:1\r\n:10\r\n:9\r\n:0\r\n:1000\r\n"),  # one limit of 10: allowed
    (0x00, 1, b"*5\r\n:0\r\n:10\r\n:0\r\n:250\r\n:1000\r\n"),  # denied, byte by byte
    (0x01, 0, b"*9\r\n:1\r\n:10\r\n:3\r\n:0\r\n:1000\r\n:1\r\n:0\r\n:0\r\n:2000\r\n"),  # two limits
    (0x8C, 3, b"*5\r\n:1\r\n:20\r\n:19\r\n:0\r\n:50\r\n"),  # GCRA with a burst of 20
    (0x00, 0, b"-NOSCRIPT No matching script. Please use EVAL.\r\n"),
    (0x00, 0, b"-ERR Error running script (call to f_0123): user_script:1: oops\r\n"),
    (0x00, 7, b"+OK\r\n$5\r\nhello\r\n$-1\r\n*-1\r\n*2\r\n*1\r\n:1\r\n$0\r\n\r\n"),
    (0x00, 0, b"*3\r\n*3\r\n:0\r\n:5460\r\n*2\r\n$9\r\n127.0.0.1\r\n:7000\r\n"),  # CLUSTER SLOTS-like
    (0x00, 0, b"*99999999\r\n"),  # refused by ReplyReader
    (0x00, 0, b"$123456789012345678901\r\n"),
    (0x00, 0, b"*5\r\n:-9223372036854775808\r\n:9223372036854775807\r\n:0\r\n:-1\r\n:1\r\n"),  # int64's ends
]
for i, (sel, chunk, stream) in enumerate(REPLIES):
    write("fuzz_reply", "reply%02d" % i, bytes([sel, chunk]) + stream)


class Provider:
    """Builds input for FuzzedDataProvider: strings go to the front, numbers to the back."""

    def __init__(self):
        self.front = b""
        self.back = []  # bytes in the order they are consumed (from the end)

    def string(self, s):
        self.front += s.encode().replace(b"\\", b"\\\\") + b"\\x"

    def int_in(self, lo, hi, v):
        rng, offset, value, out = hi - lo, 0, v - lo, []
        assert 0 <= value <= rng
        while offset < 64 and (rng >> offset) > 0:
            offset += 8
        for shift in range(offset - 8, -8, -8):  # most significant byte first
            out.append((value >> shift) & 0xFF)
        self.back += out

    def boolean(self, b):
        self.int_in(0, 255, 1 if b else 0)

    def data(self):
        return self.front + bytes(reversed(self.back))


def amount(p, v):  # amount(): small numbers are selector 2, value 0..20
    p.int_in(0, 7, 2)
    p.int_in(0, 20, v)


def options(p, algorithm=0, limit=5, window=1000):
    p.int_in(0, 7, 1)  # keep the version
    p.int_in(-1, 4, algorithm)
    amount(p, limit)
    p.boolean(True)
    p.int_in(1, 5000, window)
    p.int_in(-1, 2, 0)  # clock
    for _ in range(3):  # no burst, deny cache, failure policy
        p.int_in(0, 3, 1)
    p.int_in(0, 5, 1)  # no breaker
    p.int_in(0, 5, 1)  # not shadow
    p.int_in(0, 5, 1)  # no block


def start(p, name=None):
    p.boolean(name is not None)
    if name is not None:
        p.string(name)
    p.int_in(0, 7, 1)  # default pool size
    p.boolean(True)


def new_limiter(p, **kw):
    p.int_in(0, 17, 0)
    options(p, **kw)
    p.int_in(0, 3, 1)  # no prefix


def new_spec(p, spec, algorithm=0):
    p.int_in(0, 17, 1)
    options(p, algorithm=algorithm)
    p.int_in(0, 3, 1)
    p.string(spec)
    p.boolean(True)  # with the options


def key_call(p, which, key, n_limiters=1, *numbers):
    p.int_in(0, 17, 2 + which)
    if n_limiters > 1:
        p.int_in(0, n_limiters - 1, 0)
    p.string(key)
    p.boolean(False)  # not repeated
    for v in numbers:
        amount(p, v)


CHECK, CHECK_AT, PEEK, REFUND, AT_MOST, CHECK_LIMIT, ACQUIRE, RESET = range(8)

p = Provider()
start(p)
new_limiter(p, limit=5, window=1000)
for _ in range(6):
    key_call(p, CHECK, "user:42", 1, 1)
p.int_in(0, 17, 12)  # headers of the last decision
p.int_in(0, 3, 1)
p.boolean(True)
p.int_in(0, 17, 13)  # Prometheus page
p.boolean(False)
p.boolean(True)
write("fuzz_capi", "basic", p.data())

for i, spec in enumerate(["10/s; 1000/hour", "200 per day, 50 per hour", "10/hour|100/day", "2000 per year"]):
    p = Provider()
    start(p, "api-%d" % i)
    new_spec(p, spec)
    key_call(p, CHECK, "10.0.0.%d" % i, 1, 3)
    key_call(p, PEEK, "10.0.0.%d" % i)
    key_call(p, REFUND, "10.0.0.%d" % i, 1, 1)
    key_call(p, RESET, "10.0.0.%d" % i)
    p.int_in(0, 17, 10)  # check_many of 3 keys
    p.int_in(0, 16, 3)
    for k in ("a", "b", "a"):
        p.string(k)
        p.boolean(False)
    p.boolean(True)
    amount(p, 1)
    write("fuzz_capi", "spec%d" % i, p.data())

p = Provider()
start(p)
new_spec(p, "10/s burst 20", algorithm=3)
key_call(p, CHECK_AT, "k", 1, 4)
p.boolean(True)
p.int_in(1, 1 << 52, 1700000000000000)
key_call(p, AT_MOST, "k", 1, 15)
write("fuzz_capi", "gcra", p.data())

p = Provider()
start(p)
p.int_in(0, 17, 14)
p.string("redis://user:secretpw@h:99999")
p.int_in(0, 17, 14)
p.string("memory://")
new_limiter(p, algorithm=2, limit=3, window=5000)
key_call(p, ACQUIRE, "job", 1, 1)
p.int_in(0, 17, 16)  # close the client
p.int_in(0, 3, 0)
write("fuzz_capi", "urls_and_close", p.data())

# fuzz_http: byte 0 even = a policy document; odd = a request, fields
# separated by newlines: peer, X-Forwarded-For, X-API-Key, path, method,
# user, X-Cost, route (or X-Tenant).
os.makedirs(os.path.join(HERE, "corpus", "fuzz_http"), exist_ok=True)
DOCS = [
    '{"rules": [{"name": "all", "limiter": 0}]}',
    '{"trusted_proxies": ["10.0.0.0/8", "::1"], "ipv6_prefix": 64, "exempt": ["/health"],'
    ' "deny": {"ips": ["203.0.113.0/24"], "api_keys": ["sha256:' + "ab" * 32 + '"]},'
    ' "rules": [{"name": "login", "paths": ["/login"], "methods": ["POST"], "limiter": 0,'
    ' "key": ["api_key", "user+route", "ip"], "cost": {"header": "X-Cost", "max": 9},'
    ' "count_when": [401, "5xx", "400-403"], "on_missing_key": "skip"}]}',
    '{"rules": [{"name": "a", "limiter": 0, "key": "ipv7"}]}',
    # TOML, with plans, tenants and a resolver.
    'prefix = "shop"\ndefault_plan = "free"\n[plans.free]\napi = "10/minute"\n[plans.pro]\n'
    'api = "100/minute; 5/s"\n[tenants]\nacme = "pro"\n[resolver]\ntimeout_ms = 20\n'
    '[[rules]]\nname = "api"\npaths = ["/api/*"]\nkey = "tenant"\nlimit = "plan"\nalgorithm = "gcra"\n',
    '[[rules]]\nname = "x"\nlimit = 5\n[a]\nb = [[1, 2], {c = 1979-05-27}]\n',
]
for i, doc in enumerate(DOCS):
    write("fuzz_http", "doc%d" % i, b"\x00" + doc.encode())
REQUESTS = [
    ["10.0.0.1:5000", "203.0.113.9, 10.1.1.1", "", "/", "GET", "", "", ""],
    ["[::1]:80", "2001:db8:1:2::a, fd00::1", "sk_live_secret", "/api/x", "post", "bob", "7", ""],
    ["fe80::1%eth0", "unknown, 10.0.0.2", "", "/users/7", "GET", "alice", "", "/users/{id}"],
    ["::ffff:198.51.100.7", "", "revoked", "/login", "POST", "", "x", ""],
    ["unix:/run/app.sock", ",,", "", "/t/a", "GET", "", "", "acme"],
    # A cost header of 30 digits once overflowed the cost's parser.
    ["192.0.2.1", "", "", "/api/x", "GET", "", "9" * 30, ""],
    ["10.0.0.1", "203.0.113.9", "", "/static/%2e%2e/./admin/..", "GET", "", "", ""],
    # A long method in a route key once made a key over 1024 bytes.
    ["10.0.0.1", "", "", "/users/7", "G" * 1200, "u" * 100, "", "/users/{id}"],
    # By plan: the tenant (the user field), the plan given or not (byte 0).
    ["10.0.0.1", "", "", "/p/x", "GET", "acme", "", ""],
    ["10.0.0.1", "", "", "/p/x", "GET", "globex", "pro", ""],
]
for i, fields in enumerate(REQUESTS):
    write("fuzz_http", "request%d" % i, b"\x01" + "\n".join(fields).encode())
write("fuzz_http", "request_plan", b"\x03" + "\n".join(REQUESTS[-1]).encode())
