"""Client and Limiter: the Pythonic layer over polylimit._core."""

import asyncio
import datetime
import decimal
import functools
import inspect
import math
import os
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Literal,
    NamedTuple,
    Optional,
    Tuple,
    TypedDict,
    TypeVar,
    Union,
    cast,
    overload,
)

from . import _aio, _core, _vocabulary
from ._core import Decision
from ._errors import Error, InvalidArgument, RateLimited
from ._vocabulary import AlgorithmName, ClockName, FailurePolicyName

Key = Union[str, bytes]
Seconds = Union[float, int, datetime.timedelta]
PathLike = Union[str, "os.PathLike[str]"]


class Rate(NamedTuple):
    limit: int  # units admitted per window
    window: float  # seconds


class Stats(TypedDict):
    """Counters of one client (all its limiters) since it was opened, as
    ``Client.stats()`` returns them (a plain dict)."""

    checks: int  # checks decided or failed (each key of check_many counts)
    admitted: int
    denied: int
    errors: int  # checks that raised
    round_trips: int  # to Redis; a pipelined check_many is one
    noscript_reloads: int
    cache_hits: int  # answered by the local deny cache
    degraded: int  # answered by the failure policy
    near_limit: int  # admitted with less than 10% of the limit left
    latency_count: int
    latency_sum_us: int
    # a gauge: Redis nodes whose maxmemory policy can evict limiter keys
    # (a limit can over-admit there; docs/deployments.md)
    evicting_nodes: int
    # connects tried to Redis data nodes, made or failed (bounded by the
    # reconnect backoff while a node is down)
    connect_attempts: int
    # script calls sent to Redis; checks of one key coalesced into one call
    # count once (docs/limiter.md, "Hot keys")
    script_calls: int
    coalesced: int  # checks decided in one call with others of their key
    # leases (docs/limiter.md, "Leases"): units taken from Redis, unused
    # units given back, and unused units that could not be given back
    leased_units: int
    refunded_units: int
    stranded_units: int
    # (upper bound in microseconds, checks in this bucket): not cumulative;
    # the last bound is math.inf.
    latency_buckets: List[Tuple[float, int]]


F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

# The binding converts types (seconds to milliseconds, names to enum values);
# the core checks every range, with one message format everywhere:
# "<name> = <value> is out of range <min>..<max>" (names as the core has them).


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# Our own context: the caller's decimal context (precision, traps) must not
# change how a duration converts. 64 digits hold any float's decimal times 1000.
_DECIMAL = decimal.Context(prec=64)


def _exact_ms(name: str, value: Any) -> decimal.Decimal:
    """Seconds (int, float or timedelta) as an exact number of milliseconds.
    A float counts as the decimal it prints as (0.3 is 300 ms, not
    299.99999999999997)."""
    if isinstance(value, datetime.timedelta):
        return _DECIMAL.divide(decimal.Decimal(value // datetime.timedelta(microseconds=1)), 1000)
    if not _is_number(value):
        raise TypeError("%s must be a number of seconds, not %s" % (name, type(value).__name__))
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidArgument("%s = %r is not a finite number of seconds" % (name, value))
    return _DECIMAL.multiply(decimal.Decimal(repr(value) if isinstance(value, float) else value), 1000)


def _ms(name: str, value: Any) -> int:
    """A duration in seconds as whole milliseconds, rounded up (away from 0, so
    that a tiny value never becomes 0, which the C ABI may read as "default" or
    "off"). The sign is kept: the core rejects a negative duration, by name."""
    return int(_exact_ms(name, value).to_integral_value(rounding=decimal.ROUND_UP, context=_DECIMAL))


def _out_of_range(name: str, value: int) -> InvalidArgument:
    """The core's error for a value the core cannot be shown (the C ABI reads 0
    as "default"), with the bounds of the generated table."""
    lo, hi = _vocabulary.BOUNDS[name]
    return InvalidArgument("%s = %d is out of range %d..%d" % (name, value, lo, hi))


def _client_option(name: str, core_name: str, value: Any, ms: bool = True) -> int:
    """A client option for polylimit_client_options: None is 0 (the library's
    default); an explicit 0 is refused, since the C struct reads it as the
    default too."""
    if value is None:
        return 0
    n = _ms(name, value) if ms else _check_int(name, value)
    if n != 0:
        return n
    lo, hi = _vocabulary.BOUNDS[core_name]
    if not lo <= 0 <= hi:
        raise _out_of_range(core_name, 0)
    raise InvalidArgument(
        "%s = 0 cannot be given: the C ABI reads 0 as the default (%d ms); use None for the default "
        "or at least 0.001 s" % (name, _vocabulary.DEFAULTS[core_name])
    )


def _check_int(name: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("%s must be an int, not %s" % (name, type(value).__name__))
    return value


def _lease_ms(value: Any) -> int:
    # 0 would read as "default" in the C ABI: a lease of 0 s is out of range.
    ms = _ms("lease", value)
    if ms == 0:
        raise _out_of_range("lease_ms", 0)
    return ms


def _choice(name: str, value: Any, table: Any, hint: str) -> int:
    if not isinstance(value, str):
        raise TypeError("%s must be a str, not %s" % (name, type(value).__name__))
    if value not in table:
        raise InvalidArgument("%s %r is unknown; %s" % (name, value, hint))
    return int(table[value])


def _path(value: Any) -> Optional[str]:
    """A file option: str or os.PathLike (None stays unset)."""
    return None if value is None else os.fspath(value)


def prometheus_text(*clients: "Client") -> str:
    """Several clients' counters on ONE valid Prometheus page (each metric's
    HELP and TYPE once, one sample per client labelled ``client="<name>"``),
    by the core (polylimit_clients_stats_prometheus). With more than one
    client every client needs a distinct ``name=``; the core says which one
    does not. Concatenating ``stats_prometheus()`` texts is not valid
    exposition; this is."""
    for c in clients:
        if not isinstance(c, Client):
            raise TypeError("prometheus_text() takes polylimit.Client objects, not %s" % type(c).__name__)
    return _core.clients_stats_prometheus([c._core for c in clients])


def redact_url(url: str) -> str:
    """``url`` with every password replaced by ``***`` (``redis://user:***@host``,
    ``sentinel_password=***``), by the core's one redaction
    (polylimit_redact_url): what every message, ``repr()`` and log line of
    this package shows. Any str is accepted; one that does not parse is
    redacted too, hiding more when in doubt."""
    return _core.redact_url(url)


class Client:
    """A connection pool to one deployment, named by a URL.

    ``redis://[user:pass@]host:port[/db]``, ``unix:///path/to.sock[?db=N]``
    or ``memory://`` (in-process, no server). Without a URL (None or ``""``)
    the core reads the ``POLYLIMIT_URL`` environment variable; when that is
    unset too it raises InvalidArgument: there is no silent default, so
    ``memory://`` must be asked for. Connections are made lazily, on the
    first command. Durations are in seconds (float); ``None`` picks the
    library default. Thread-safe, and safe to use after ``os.fork()``: the
    child makes fresh connections.

    ``name`` labels the client's metrics (``client="<name>"``: letters,
    digits and ``_ - . : /``, up to 128); :func:`polylimit.prometheus_text`
    needs it for more than one client. The ``tls_*`` options apply to
    ``rediss://`` URLs (CA bundle or directory, client certificate and key
    for mutual TLS, the server name to verify, and ``tls_insecure`` for
    tests only); the core checks them.

    ``coalesce=False`` makes every check its own script call. By default
    (True) checks of one key that arrive while a call of that key is in
    flight go out together as one call, decided exactly as separate calls
    would be (docs/limiter.md, "Hot keys: coalescing"); ``stats()`` counts
    the calls in ``round_trips``.

    Use as a context manager or call :meth:`close`; closing also closes every
    limiter made from this client.
    """

    def __init__(
        self,
        url: Optional[str] = None,
        *,
        name: Optional[str] = None,
        pool_size: Optional[int] = None,
        connect_timeout: Optional[float] = None,
        command_timeout: Optional[float] = None,
        acquire_timeout: Optional[float] = None,
        keepalive: Union[None, bool, int] = None,
        idle_check: Optional[float] = None,
        tls_ca_file: Optional[PathLike] = None,
        tls_ca_dir: Optional[PathLike] = None,
        tls_cert_file: Optional[PathLike] = None,
        tls_key_file: Optional[PathLike] = None,
        tls_server_name: Optional[str] = None,
        tls_insecure: bool = False,
        coalesce: bool = True,
    ) -> None:
        if url is not None and not isinstance(url, str):
            raise TypeError("url must be a str or None, not %s" % type(url).__name__)
        for option, value in (
            ("name", name),
            ("tls_ca_file", tls_ca_file),
            ("tls_ca_dir", tls_ca_dir),
            ("tls_cert_file", tls_cert_file),
            ("tls_key_file", tls_key_file),
            ("tls_server_name", tls_server_name),
        ):
            if value is not None and not isinstance(value, (str, os.PathLike)):
                raise TypeError("%s must be a str or None, not %s" % (option, type(value).__name__))
        if not isinstance(tls_insecure, bool):
            raise TypeError("tls_insecure must be a bool, not %s" % type(tls_insecure).__name__)
        if not isinstance(coalesce, bool):
            raise TypeError("coalesce must be a bool, not %s" % type(coalesce).__name__)
        keepalive_s, no_keepalive = 0, False
        if keepalive is None or keepalive is True:
            pass  # the library default
        elif keepalive is False or (isinstance(keepalive, int) and keepalive == 0):
            no_keepalive = True
        elif isinstance(keepalive, int):
            keepalive_s = keepalive
        else:
            raise TypeError("keepalive must be an int of seconds, True or False, not %s" % type(keepalive).__name__)

        self._core = _core.Client(
            url,
            pool_size=_client_option("pool_size", "pool_size", pool_size, ms=False),
            connect_timeout_ms=_client_option("connect_timeout", "connect_timeout_ms", connect_timeout),
            command_timeout_ms=_client_option("command_timeout", "command_timeout_ms", command_timeout),
            acquire_timeout_ms=_client_option("acquire_timeout", "acquire_timeout_ms", acquire_timeout),
            keepalive_s=keepalive_s,
            disable_keepalive=no_keepalive,
            idle_check_ms=_client_option("idle_check", "idle_check_ms", idle_check),
            name=name,
            tls_ca_file=_path(tls_ca_file),
            tls_ca_dir=_path(tls_ca_dir),
            tls_cert_file=_path(tls_cert_file),
            tls_key_file=_path(tls_key_file),
            tls_server_name=tls_server_name,
            tls_insecure=tls_insecure,
            coalesce=coalesce,
        )
        # What the core opened (for url and repr): without a URL, the one in
        # $POLYLIMIT_URL, which the core has just read.
        self._url = url or os.environ.get("POLYLIMIT_URL", "")
        self._name = name
        # One async worker thread per pooled connection: more would only queue.
        self._pool_size = pool_size or _vocabulary.DEFAULTS["pool_size"]
        self._lock = threading.Lock()
        _ALL_CLIENTS.add(self)
        self._executor: Optional[ThreadPoolExecutor] = None
        self._executor_pid = 0

    @property
    def url(self) -> str:
        """The URL this client was opened with (from ``POLYLIMIT_URL`` when
        none was given). It may hold a password: repr() hides it."""
        return self._url

    @property
    def name(self) -> Optional[str]:
        """The metrics label given as ``name=`` (None: no label)."""
        return self._name

    @property
    def closed(self) -> bool:
        return self._core.closed

    def limiter(
        self,
        spec: Optional[str] = None,
        algorithm: AlgorithmName = "sliding_log",
        prefix: str = "pl",
        clock: ClockName = "server",
        *,
        limit: Optional[int] = None,
        window: Optional[Seconds] = None,
        burst: Optional[int] = None,
        deny_cache: int = 0,
        on_failure: FailurePolicyName = "error",
        breaker_failures: int = 0,
        breaker_cooldown: Optional[Seconds] = None,
        shadow: bool = False,
        block: Seconds = 0.0,
        durable_replicas: int = 0,
        durable_timeout: Optional[Seconds] = None,
        durable_aof: bool = False,
        lease_units: int = 0,
        lease: Optional[Seconds] = None,
    ) -> "Limiter":
        """A limiter for a rate ``spec``, or ``limit`` units per ``window`` seconds.

        ``spec`` is parsed by the core (the same parser in every language):
        ``"100/minute"``, ``"5 per 2 seconds"``, several limits that must all
        admit (``"10/s; 1000/hour"``) and, for ``gcra``, a burst
        (``"10/s burst 20"``). A bad spec raises InvalidArgument with the
        core's message, which quotes the bad part.

        - ``algorithm``: ``"sliding_log"`` (exact, the default),
          ``"sliding_counter"`` (approximate, O(1)), ``"fixed_window"``
          (O(1), up to 2 x limit around a window edge) or ``"gcra"``
          (smooth; ``burst`` units at once, default ``limit``).
        - ``clock``: ``"server"`` (Redis TIME) or ``"client"`` (this host).
        - ``burst``: gcra only, with ``limit=``/``window=`` (a spec carries
          its own: ``"10/s burst 20"``).
        - ``deny_cache``: remember up to this many denied keys in this process
          and deny them again locally (``decision.cached``) until their
          retry_after has passed; 0 (the default) is off.
        - ``on_failure``: what a check answers when Redis does not
          (timeout, refused or broken connection, pool exhausted, breaker
          open): ``"error"`` raises (the default), ``"open"`` admits,
          ``"closed"`` denies, ``"local"`` decides with an in-process limiter;
          the last three set ``decision.degraded``.
        - ``breaker_failures``: after this many consecutive outages, fail fast
          for ``breaker_cooldown`` seconds (None: the library default, 1 s),
          then let one probe through; 0 (the default) is no breaker.
        - ``shadow``: dry run; decide and count as usual but always admit,
          with ``decision.shadowed`` set on would-be denials.
        - ``block``: seconds a denied key stays denied (punitive block);
          0 is off.
        - ``durable_replicas``: failover-safe mode: a check is admitted only
          once its write is acknowledged by this many replicas (WAIT, sent
          with the script in one round trip) within ``durable_timeout``
          seconds (None: the library default, 0.1 s; below the client's
          ``command_timeout``); ``durable_aof=True`` also requires an fsync
          to the master's AOF (WAITAOF, Redis 7.2+). An admitted check that is
          not acknowledged in time raises :class:`NotDurable` (its units stay
          consumed on the master), which ``on_failure`` handles like an
          outage. 0 (the default) is off.
        - ``lease_units``: leases: a check takes this many units of the key
          from Redis in one round trip and hands them out in this process
          without one, for ``lease`` seconds (None: the library default,
          0.1 s; at most the window); unused units go back when the lease
          ends or the client closes. Admissions can exceed the limit in a
          window by at most ``lease_units`` per limiter holding leases on the
          key (docs/limiter.md, "Leases"). 0 (the default) is off; not with
          ``block``.

        Durations are rounded up to whole milliseconds (``window`` must be
        one). Every range is checked by the core, which names the option as
        the C API does: ``"block_ms = <ms> is out of range <min>..<max>"``.
        """
        if spec is not None:
            if limit is not None or window is not None:
                raise InvalidArgument("give either a rate spec or limit= and window=, not both")
            if not isinstance(spec, str):
                raise TypeError("rate spec must be a str, not %s" % type(spec).__name__)
            if burst is not None:
                raise InvalidArgument("with a rate spec the burst goes in the spec, e.g. '10/s burst 20'")
            limit_n, window_ms, burst_n = 0, 0, 0
        else:
            if limit is None or window is None:
                raise InvalidArgument("a rate is needed: limiter('100/minute') or limiter(limit=100, window=60)")
            limit_n, window_ms = _check_int("limit", limit), _window_ms(window)
            burst_n = 0 if burst is None else _check_int("burst", burst)  # 0: the limit
        alg = _choice(
            "algorithm", algorithm, _vocabulary.ALGORITHMS, "available: " + ", ".join(sorted(_vocabulary.ALGORITHMS))
        )
        clk = _choice(
            "clock",
            clock,
            _vocabulary.CLOCKS,
            "use " + " or ".join(repr(c) for c in sorted(_vocabulary.CLOCKS, reverse=True)),
        )
        policy = _choice(
            "on_failure",
            on_failure,
            _vocabulary.FAILURE_POLICIES,
            "use " + ", ".join(repr(p) for p in sorted(_vocabulary.FAILURE_POLICIES)),
        )
        if not isinstance(prefix, str):
            raise TypeError("prefix must be a str, not %s" % type(prefix).__name__)
        if not isinstance(shadow, bool):
            raise TypeError("shadow must be a bool, not %s" % type(shadow).__name__)
        if not isinstance(durable_aof, bool):
            raise TypeError("durable_aof must be a bool, not %s" % type(durable_aof).__name__)
        options: Dict[str, Any] = dict(
            algorithm=alg,
            prefix=prefix,
            clock=clk,
            deny_cache_size=_check_int("deny_cache", deny_cache),
            failure_policy=policy,
            breaker_failures=_check_int("breaker_failures", breaker_failures),
            breaker_cooldown_ms=0 if breaker_cooldown is None else _breaker_cooldown_ms(breaker_cooldown),
            shadow=shadow,
            block_ms=_ms("block", block),
            durable_replicas=_check_int("durable_replicas", durable_replicas),
            durable_timeout_ms=0 if durable_timeout is None else _durable_timeout_ms(durable_timeout),
            durable_aof=durable_aof,
            lease_units=_check_int("lease_units", lease_units),
            lease_ms=0 if lease is None else _lease_ms(lease),
        )
        with self._lock:
            if spec is not None:
                core = _core.Limiter(self._core, spec=spec, **options)
            else:
                core = _core.Limiter(self._core, limit=limit_n, window_ms=window_ms, burst=burst_n, **options)
            lim = Limiter(self, core, algorithm, clock, on_failure, shadow)
        return lim

    def stats(self) -> Stats:
        """This client's counters (all its limiters) since it was opened, as
        a dict: ``checks``, ``admitted``, ``denied``, ``errors``,
        ``round_trips``, ``noscript_reloads``, ``cache_hits``, ``degraded``,
        ``near_limit``, ``latency_count``, ``latency_sum_us``,
        ``evicting_nodes`` (a gauge), ``connect_attempts`` and
        ``latency_buckets`` (a list of ``(upper_bound_us, count)``, not
        cumulative, the last bound ``math.inf``). No I/O."""
        return self._core.stats()  # type: ignore[return-value]

    def stats_prometheus(self) -> str:
        """The same counters in the Prometheus text exposition format (metric
        names start with ``polylimit_``), ready to serve on /metrics; the
        samples carry ``client="<name>"`` when the client has a name. For
        several clients on one page use :func:`polylimit.prometheus_text`."""
        return self._core.stats_prometheus()

    def close(self) -> None:
        """Closes the client and, in the core, every limiter made from it.
        Idempotent. Calls already in flight finish; later calls (and
        :meth:`limiter`) raise :class:`polylimit.ClosedError`
        (POLYLIMIT_ECLOSED). The limiter objects stay safe to hold."""
        with self._lock:
            self._core.close()
            executor, self._executor = self._executor, None
        if executor is not None and self._executor_pid == os.getpid():
            executor.shutdown(wait=False)

    async def aclose(self) -> None:
        """As :meth:`close`, without blocking the event loop: closing gives
        the leases' unused units back to Redis (a round trip, up to the
        command timeout when the server does not answer), so it runs on the
        loop's default executor. Calls raise :class:`polylimit.ClosedError`
        once that thread has begun the close."""
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return "<polylimit.Client %r%s%s>" % (
            redact_url(self._url),
            "" if self._name is None else " name=%r" % self._name,
            " closed" if self.closed else "",
        )

    def _async_executor(self) -> ThreadPoolExecutor:
        # One thread per pooled connection: more would only queue on the pool.
        # A fresh executor after fork(): the parent's threads do not exist here.
        pid = os.getpid()
        executor = self._executor
        if executor is None or self._executor_pid != pid:
            with self._lock:
                if self._executor is None or self._executor_pid != pid:
                    self._executor = ThreadPoolExecutor(self._pool_size, thread_name_prefix="polylimit")
                    self._executor_pid = pid
                executor = self._executor
        return executor


# A fork() while another thread holds a client's lock would leave the child's
# copy locked forever: the child gets fresh locks (the core makes fresh
# connections by itself).
_ALL_CLIENTS: "weakref.WeakSet[Client]" = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for client in list(_ALL_CLIENTS):
        client._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _window_ms(window: Any) -> int:
    """A window in seconds as milliseconds; it must be a whole number of them
    (as in rate specs: "10/1.5ms" is refused too). The core checks the range."""
    exact = _exact_ms("window", window)
    if exact != exact.to_integral_value(context=_DECIMAL):
        raise InvalidArgument("window = %r s is not a whole number of milliseconds" % (window,))
    return int(exact)


def _breaker_cooldown_ms(cooldown: Any) -> int:
    ms = _ms("breaker_cooldown", cooldown)
    if ms == 0:  # the C ABI would read 0 as the default
        raise _out_of_range("breaker_cooldown_ms", 0)
    return ms


def _durable_timeout_ms(timeout: Any) -> int:
    ms = _ms("durable_timeout", timeout)
    if ms == 0:  # the C ABI would read 0 as the default
        raise _out_of_range("durable_timeout_ms", 0)
    return ms


def _timeout_ms(timeout: Any) -> int:
    """acquire's timeout: None is as long as the core allows."""
    if timeout is None:
        return _vocabulary.BOUNDS["timeout_ms"][1]
    return _ms("timeout", timeout)


def _now_us(now: Any) -> int:
    """check_at's time: float seconds since the epoch, int microseconds since
    the epoch, or an aware datetime."""
    if isinstance(now, datetime.datetime):
        if now.tzinfo is None:
            raise InvalidArgument("now is a naive datetime; give it a timezone")
        delta = now - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
        return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds
    if isinstance(now, float):
        if not math.isfinite(now):
            raise InvalidArgument("now = %r is not finite" % (now,))
        return int(round(now * 1_000_000))
    if isinstance(now, int) and not isinstance(now, bool):
        return now
    raise TypeError(
        "now must be float seconds, int microseconds since the epoch or a datetime, not %s" % type(now).__name__
    )


class Limiter:
    """A rate (one or more limits) applied to keys.

    Keys are ``str`` (sent as UTF-8) or ``bytes`` (binary safe). Every
    method is thread-safe and releases the GIL while it waits on Redis. The
    ``a*`` variants never block the event loop: ``acheck``, ``acheck_many``
    (and so ``aacquire``, ``hit`` and ``limit``) complete on the loop itself,
    with no thread; the others run the same call in the client's thread pool.
    """

    def __init__(
        self,
        client: Client,
        core: "_core.Limiter",
        algorithm: AlgorithmName,
        clock: ClockName,
        on_failure: FailurePolicyName = "error",
        shadow: bool = False,
    ) -> None:
        self._client = client
        self._core = core
        self._algorithm = algorithm
        self._clock = clock
        self._on_failure = on_failure
        self._shadow = shadow

    # -- description --------------------------------------------------------
    @property
    def spec(self) -> Optional[str]:
        """The rate spec the limiter was made from, or None for
        ``limit=``/``window=``."""
        return self._core.spec

    @property
    def rate(self) -> Optional[Rate]:
        """``Rate(limit, window)`` (limit units per window seconds) of a
        limiter made with ``limit=``/``window=``; None for one made from a
        spec (the core parses specs, and the C ABI does not report the
        parsed limits; see :attr:`spec`). (The name ``limit`` is the
        decorator, as in ``@limiter.limit(key)``.)"""
        if self._core.spec is not None:
            return None
        return Rate(self._core.limit, self._core.window_ms / 1000.0)

    @property
    def algorithm(self) -> AlgorithmName:
        return self._algorithm

    @property
    def clock(self) -> ClockName:
        return self._clock

    @property
    def on_failure(self) -> FailurePolicyName:
        return self._on_failure

    @property
    def shadow(self) -> bool:
        return self._shadow

    @property
    def prefix(self) -> str:
        return self._core.prefix

    @property
    def client(self) -> Client:
        return self._client

    def __repr__(self) -> str:
        if self._core.spec is not None:
            rate = repr(self._core.spec)
        else:
            rate = "%d per %gs" % (self._core.limit, self._core.window_ms / 1000.0)
        return "<polylimit.Limiter %s %s prefix=%r%s>" % (
            rate,
            self._algorithm,
            self.prefix,
            " closed" if self._client.closed else "",
        )

    # -- blocking calls -----------------------------------------------------
    def check(self, key: Key, cost: int = 1) -> Decision:
        """Admits ``cost`` units for ``key``, all or nothing. A denial is a
        Decision with ``allowed=False``, not an exception."""
        return self._core.check(key, cost)

    def check_at(self, key: Key, cost: int, now: Union[float, int, datetime.datetime]) -> Decision:
        """As check, at the given time instead of the limiter's clock.

        ``now`` is a float of *seconds* since the Unix epoch
        (``time.time()``), an int of *microseconds* since the epoch, or an
        aware ``datetime``.
        """
        return self._core.check_at(key, cost, _now_us(now))

    def peek(self, key: Key) -> Decision:
        """What a check of cost 1 would answer now, consuming nothing."""
        return self._core.peek(key)

    def reset(self, key: Key) -> None:
        """Clears the key: it is back to full capacity."""
        self._core.reset(key)

    @overload
    def check_many(
        self, keys: Iterable[Key], cost: int = ..., *, return_exceptions: Literal[False] = ...
    ) -> List[Decision]: ...

    @overload
    def check_many(
        self, keys: Iterable[Key], cost: int = ..., *, return_exceptions: Literal[True]
    ) -> List[Union[Decision, Error]]: ...

    @overload
    def check_many(
        self, keys: Iterable[Key], cost: int = ..., *, return_exceptions: bool
    ) -> List[Union[Decision, Error]]: ...

    def check_many(self, keys: Iterable[Key], cost: int = 1, *, return_exceptions: bool = False) -> List[Any]:
        """check(key, cost) for every key, in order, in one pipelined round
        trip to Redis (one GIL release). Each key is decided on its own (all
        or nothing per key, not across keys).

        Every key reports its own outcome. With ``return_exceptions=True``
        (as in ``asyncio.gather``) the list holds, for each key, its Decision
        or its own :class:`polylimit.Error` (the core's message for that key,
        ``.index`` its position); an error of the whole call (a bad cost, a
        closed client) is then every key's error.

        Without it, when a key fails (a timeout, an empty key) an error is
        raised: the core's message names the first key that failed
        (``"keys[3]: key is empty"``), ``.index`` is its position and
        ``.results`` the list ``return_exceptions=True`` would have returned:
        the other keys were decided, and consumed, all the same. Only a call
        refused as a whole before any key (too many keys) raises either way.
        """
        return self._core.check_many(keys, cost, return_exceptions)

    def check_at_most(self, key: Key, max_cost: int) -> Decision:
        """Admits as many units as fit now, up to ``max_cost``:
        ``decision.granted`` says how many (``allowed`` when at least one).
        Never over-admits; may take two round trips."""
        return self._core.check_at_most(key, max_cost)

    def acquire(self, key: Key, cost: int = 1, timeout: Optional[Seconds] = None) -> Decision:
        """Waits until ``cost`` units are admitted, sleeping retry_after
        between tries (in the core, with the GIL released), for at most
        ``timeout`` seconds (0: one try; None: as long as it takes, up to the
        core's bound of 366 days). Returns a denied Decision, early, when
        admission would come later than the timeout. The core sleeps in C, so
        a signal (Ctrl-C) is handled when the call returns; from asyncio use
        :meth:`aacquire`, which can be cancelled."""
        return self._core.acquire(key, cost, _timeout_ms(timeout))

    def check_limit(self, key: Key, cost: int, limit: int, window: Seconds) -> Decision:
        """As check, with ``limit`` units per ``window`` seconds for this call
        only (limits that change at run time), in the limiter's algorithm
        (gcra: burst = limit). Replaces all of the limiter's limits for this
        call; the deny cache is not used."""
        return self._core.check_limit(key, cost, limit, _window_ms(window))

    def refund(self, key: Key, units: int) -> Decision:
        """Gives back up to ``units`` units taken earlier (e.g. the operation
        they paid for failed) and returns what peek would answer then. Clears
        the key's deny-cache entry."""
        return self._core.refund(key, units)

    def headers(self, decision: Decision) -> Dict[str, str]:
        """The standard HTTP rate-limit headers for ``decision``, formatted
        by the core (polylimit_limiter_headers) with this limiter's limits,
        in order: ``Retry-After`` (denials only, whole seconds, at least 1),
        ``RateLimit-Limit``, ``RateLimit-Remaining``, ``RateLimit-Reset``
        (seconds) and the IETF draft's ``RateLimit-Policy`` and
        ``RateLimit``. The same names and values in every language.
        ``decision.headers()`` is the same for the limiter that made it."""
        if not isinstance(decision, Decision):
            raise TypeError("decision must be a polylimit.Decision, not %s" % type(decision).__name__)
        return self._core.headers(decision)

    # -- asyncio --------------------------------------------------------------
    def _run(self, fn: Callable[..., T], *args: Any) -> "asyncio.Future[T]":
        loop = asyncio.get_running_loop()
        if self._client.closed:
            # The core answers POLYLIMIT_ECLOSED at once: no thread pool for that.
            future: "asyncio.Future[T]" = loop.create_future()
            try:
                future.set_result(fn(*args))
            except Exception as e:
                future.set_exception(e)
            return future
        return loop.run_in_executor(self._client._async_executor(), fn, *args)

    async def acheck(self, key: Key, cost: int = 1) -> Decision:
        """check for asyncio: submitted to the core without waiting, and
        completed on the event loop (no thread is used or held)."""
        loop = asyncio.get_running_loop()  # looked up once a call, passed on
        lq = _aio.queue_for(loop)
        if lq is None:  # a loop that cannot watch a file descriptor
            return await self._run(self._core.check, key, cost)
        return cast(Decision, await _aio.call(loop, lq, self._core.submit_check, key, cost))

    async def acheck_at(self, key: Key, cost: int, now: Union[float, int, datetime.datetime]) -> Decision:
        return await self._run(self._core.check_at, key, cost, _now_us(now))

    async def _queued(self, blocking: Callable[..., T], submit: Callable[..., None], *args: Any) -> T:
        """A call submitted to the core without waiting and completed on the
        event loop, as acheck; the thread pool where the loop cannot watch
        the queue."""
        loop = asyncio.get_running_loop()
        lq = _aio.queue_for(loop)
        if lq is None:
            return await self._run(blocking, *args)
        return cast(T, await _aio.call(loop, lq, submit, *args))

    async def apeek(self, key: Key) -> Decision:
        return await self._queued(self._core.peek, self._core.submit_peek, key)

    async def areset(self, key: Key) -> None:
        await self._queued(self._core.reset, self._core.submit_reset, key)

    @overload
    async def acheck_many(
        self, keys: Iterable[Key], cost: int = ..., *, return_exceptions: Literal[False] = ...
    ) -> List[Decision]: ...

    @overload
    async def acheck_many(
        self, keys: Iterable[Key], cost: int = ..., *, return_exceptions: Literal[True]
    ) -> List[Union[Decision, Error]]: ...

    @overload
    async def acheck_many(
        self, keys: Iterable[Key], cost: int = ..., *, return_exceptions: bool
    ) -> List[Union[Decision, Error]]: ...

    async def acheck_many(self, keys: Iterable[Key], cost: int = 1, *, return_exceptions: bool = False) -> List[Any]:
        """check_many for asyncio: every key submitted to the core at once
        (pipelined on its connections), completed on the event loop; the
        same results and errors as check_many."""
        if isinstance(keys, (str, bytes)):
            return self._core.check_many(keys, cost, return_exceptions)  # raises TypeError
        keys = list(keys)  # iterate here: a generator must not run in a worker thread
        loop = asyncio.get_running_loop()
        lq = _aio.queue_for(loop)
        if lq is None:
            return await self._run(self._core.check_many, keys, cost, return_exceptions)
        return await _aio.check_many(loop, lq, self._core, keys, cost, return_exceptions)

    async def acheck_at_most(self, key: Key, max_cost: int) -> Decision:
        return await self._queued(self._core.check_at_most, self._core.submit_check_at_most, key, max_cost)

    async def acheck_limit(self, key: Key, cost: int, limit: int, window: Seconds) -> Decision:
        return await self._queued(
            self._core.check_limit, self._core.submit_check_limit, key, cost, limit, _window_ms(window)
        )

    async def arefund(self, key: Key, units: int) -> Decision:
        return await self._queued(self._core.refund, self._core.submit_refund, key, units)

    async def aacquire(self, key: Key, cost: int = 1, timeout: Optional[Seconds] = None) -> Decision:
        """acquire for asyncio: the same loop as the core's (check; if denied
        and admission fits in the timeout, wait retry_after and try again),
        but it waits with ``asyncio.sleep``, so no thread is held while it
        waits and cancelling the task stops it."""
        timeout_ms = _timeout_ms(timeout)
        lo, hi = _vocabulary.BOUNDS["timeout_ms"]
        if not lo <= timeout_ms <= hi:  # the core's check of acquire, for this loop of ours
            raise _out_of_range("timeout_ms", timeout_ms)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000.0
        while True:
            d = await self.acheck(key, cost)
            if d.allowed:
                return d
            wait = max(1, d.retry_after_ms) / 1000.0
            if loop.time() + wait > deadline:
                return d
            await asyncio.sleep(wait)

    # -- helpers ----------------------------------------------------------------
    def hit(self, key: Key, cost: int = 1) -> "Hit":
        """``with limiter.hit(key) as decision:`` (or ``async with``) checks on
        entry and raises RateLimited when denied."""
        return Hit(self, key, cost)

    def limit(self, key: Union[None, Key, Callable[..., Key]] = None, *, cost: int = 1) -> Callable[[F], F]:
        """Decorator that checks before each call and raises RateLimited when
        denied. ``key`` is a callable given the call's arguments
        (``@limiter.limit(lambda user, **kw: user)``), a fixed key, or None
        (one limit for the whole function). Works on ``async def`` too,
        through acheck."""

        def decorate(fn: F) -> F:
            def key_for(args: Any, kwargs: Any) -> Key:
                if key is None:
                    return fn.__module__ + "." + fn.__qualname__
                if isinstance(key, (str, bytes)):
                    return key
                return key(*args, **kwargs)

            if inspect.iscoroutinefunction(fn):

                @functools.wraps(fn)
                async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                    decision = await self.acheck(key_for(args, kwargs), cost)
                    if not decision.allowed:
                        raise RateLimited(decision)
                    return await fn(*args, **kwargs)

                return async_wrapper  # type: ignore[return-value]

            @functools.wraps(fn)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                decision = self._core.check(key_for(args, kwargs), cost)
                if not decision.allowed:
                    raise RateLimited(decision)
                return fn(*args, **kwargs)

            return wrapper  # type: ignore[return-value]

        return decorate


class Hit:
    """Context manager returned by Limiter.hit()."""

    def __init__(self, limiter: Limiter, key: Key, cost: int) -> None:
        self._limiter = limiter
        self._key = key
        self._cost = cost
        self.decision: Optional[Decision] = None

    def __enter__(self) -> Decision:
        d = self._limiter.check(self._key, self._cost)
        self.decision = d
        if not d.allowed:
            raise RateLimited(d)
        return d

    def __exit__(self, *exc: Any) -> None:
        return None

    async def __aenter__(self) -> Decision:
        d = await self._limiter.acheck(self._key, self._cost)
        self.decision = d
        if not d.allowed:
            raise RateLimited(d)
        return d

    async def __aexit__(self, *exc: Any) -> None:
        return None
