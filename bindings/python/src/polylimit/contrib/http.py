"""What the web integrations share; no framework is imported here.

A :class:`Policy` decides, for one request, which :class:`Limit` applies
(per-route rules, exempt routes, a default), computes the key with the
limit's key function, checks it and turns the outcome into an HTTP answer:

- allowed: the request goes on; the core's rate-limit headers
  (``decision.headers()``) are added to its response;
- denied: ``429 Too Many Requests`` with the same headers (``Retry-After``
  among them);
- the limiter raised (Redis did not answer and the limiter's
  ``on_failure`` is ``"error"``, or any other polylimit error): what
  ``on_error`` says, ``"unavailable"`` (``503``, the default) or ``"allow"``
  (the request goes on without headers); either way it is logged on the
  ``polylimit.contrib`` logger. The limiter's own failure policies
  (``on_failure="open"``, ``"closed"``, ``"local"``) answer before that,
  with a decision (``decision.degraded``), which is handled as above.

Key functions take a :class:`RequestView` and return the key (str or bytes)
or None when the request has none (no API key header, an anonymous user).
They are plain functions of the request, computed before any I/O. The key
names what is limited; limiters with different prefixes never share counts,
so give each limiter of a policy a prefix of its own (``policy_from_config``
does).

A request without a key is never let through unlimited unless the limit
says so by name: ``Limit(..., on_missing_key="reject")``, the default,
answers ``400 Bad Request``, or ``401 Unauthorized`` when the key function
is a credential (:func:`api_key`, :func:`user`, or one marked with
:func:`credential`); ``on_missing_key="skip"`` lets the request go on
without a check. docs/integrations/README.md states the rule for every
language.

A limit can count only some requests, by the status of their response
(``Limit(..., count_when=lambda status: status >= 400)``: failed logins,
the brute-force pattern). The check runs before the handler as usual, so
a key over its limit is refused at once (even a request that would have
succeeded); when the response does not match, the units are refunded
(:meth:`Policy.settle`). Checking first means that at most the limit's
worth of requests run at once per key: a burst of concurrent attempts
cannot all pass before their failures are counted, as they would if the
count were taken after each response. The price is that a request holds
its unit until its response is known, and that the rate-limit headers of
an admitted response are those of the check (before any refund).
"""

import fnmatch
import hashlib
import importlib
import ipaddress
import logging
import threading
from typing import Any, Callable, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from .._client import Client, Limiter
from .._core import Decision
from .._errors import Error
from .._vocabulary import AlgorithmName, FailurePolicyName

__all__ = [
    "CountWhen",
    "KeyFunc",
    "Limit",
    "RateLimiters",
    "Outcome",
    "Policy",
    "RequestView",
    "api_key",
    "client_ip",
    "compose",
    "count_failures",
    "credential",
    "is_credential",
    "first_of",
    "policy_from_config",
    "route",
    "user",
]

log = logging.getLogger("polylimit.contrib")

Key = Union[str, bytes]
IPNetwork = Union[ipaddress.IPv4Network, ipaddress.IPv6Network]

#: The body of a 429 (text/plain).
TOO_MANY_REQUESTS = "Too Many Requests\n"
#: The body of a 503 answered because the limiter failed (on_error="unavailable").
UNAVAILABLE = "Rate limiter unavailable\n"
#: The body of a 400 answered because the request has no key (on_missing_key="reject").
NO_KEY = "no rate-limit key in the request\n"
#: The body of a 401 answered because the request has no credential to key it by.
NO_CREDENTIAL = "no credential to rate-limit the request by\n"

ON_ERROR = ("unavailable", "allow")
#: What a limit does with a request whose key function finds no key; the
#: first is the default. The same names in every language.
ON_MISSING_KEY = ("reject", "skip")

# The attribute that marks a key function as a credential (see credential()).
_CREDENTIAL = "polylimit_credential"


def parse_networks(trusted_proxies: Iterable[str]) -> Tuple[IPNetwork, ...]:
    """``["127.0.0.1", "10.0.0.0/8", "::1"]`` as networks (an address is a /32
    or /128). A bad entry raises ValueError when the policy is made."""
    if isinstance(trusted_proxies, str):
        trusted_proxies = [trusted_proxies]
    return tuple(ipaddress.ip_network(p.strip(), strict=False) for p in trusted_proxies)


def _ip(text: str) -> Optional[Union[ipaddress.IPv4Address, ipaddress.IPv6Address]]:
    """An address from a peer or a forwarded hop: ``1.2.3.4``, ``1.2.3.4:80``,
    ``::1``, ``[::1]:80``; None when it is none of those."""
    text = text.strip()
    if text.startswith("["):
        text = text[1:].split("]", 1)[0]
    elif text.count(":") == 1:
        text = text.split(":", 1)[0]
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped
    return addr


def _trusted(addr: Union[ipaddress.IPv4Address, ipaddress.IPv6Address], networks: Sequence[IPNetwork]) -> bool:
    return any(addr.version == n.version and addr in n for n in networks)


def resolve_client_ip(peer: Optional[str], forwarded_for: Optional[str], trusted: Sequence[IPNetwork]) -> str:
    """The client's address. ``X-Forwarded-For`` is read only when the peer
    (the socket's other end) is a trusted proxy, and then from the right: each
    hop that is itself a trusted proxy passes the question on to the hop before
    it; the first untrusted hop is the client. So a client cannot choose its
    address by sending the header itself (what it writes ends up left of what
    the proxies append), and without trusted proxies the header is ignored."""
    peer_ip = _ip(peer) if peer else None
    if peer_ip is None:
        return peer or "unknown"
    if not forwarded_for or not trusted or not _trusted(peer_ip, trusted):
        return str(peer_ip)
    addr = peer_ip
    for hop in reversed(forwarded_for.split(",")):
        hop_ip = _ip(hop)
        if hop_ip is None:  # garbage: nothing left of it can be trusted either
            break
        addr = hop_ip
        if not _trusted(addr, trusted):
            break
    return str(addr)


class RequestView:
    """One request, as the key functions see it, whatever the framework.

    ``headers`` maps lower-case names to values (repeated headers joined with
    ``", "``); ``peer`` is the socket's remote address; ``route`` the route
    template when the framework knows it before the view runs (else None);
    ``native`` the framework's own request object (or ASGI scope)."""

    __slots__ = ("method", "path", "route", "peer", "headers", "native", "_user", "_trusted", "_client_ip")

    def __init__(
        self,
        method: str,
        path: str,
        peer: Optional[str],
        headers: Mapping[str, str],
        native: Any = None,
        route: Optional[str] = None,
        user: Optional[Callable[[], Optional[str]]] = None,
        trusted: Sequence[IPNetwork] = (),
    ) -> None:
        self.method = method.upper()
        self.path = path
        self.route = route
        self.peer = peer
        self.headers = headers
        self.native = native
        self._user = user
        self._trusted = trusted
        self._client_ip: Optional[str] = None

    def header(self, name: str) -> Optional[str]:
        return self.headers.get(name.lower())

    @property
    def client_ip(self) -> str:
        """The client's address, X-Forwarded-For honoured from trusted proxies
        only (see :func:`resolve_client_ip`)."""
        if self._client_ip is None:
            self._client_ip = resolve_client_ip(self.peer, self.header("x-forwarded-for"), self._trusted)
        return self._client_ip

    @property
    def user(self) -> Optional[str]:
        """The authenticated user's id as the framework knows it (None when
        anonymous); see each integration for where it comes from."""
        return self._user() if self._user is not None else None


KeyFunc = Callable[[RequestView], Optional[Key]]


def credential(key: KeyFunc) -> KeyFunc:
    """Marks a key function as a credential (an API key, a token, a user):
    a request it finds no key in is answered ``401 Unauthorized`` instead of
    ``400 Bad Request`` (with ``on_missing_key="reject"``). Returns ``key``
    itself, so it also works as a decorator. :func:`api_key` and
    :func:`user` are credentials."""
    setattr(key, _CREDENTIAL, True)
    return key


def is_credential(key: KeyFunc) -> bool:
    """Whether a missing key of this function is a missing credential (401)."""
    return bool(getattr(key, _CREDENTIAL, False))


def client_ip() -> KeyFunc:
    """``"ip:<address>"``: the client's IP (X-Forwarded-For only from the
    policy's trusted proxies). The default key."""

    def key(request: RequestView) -> Optional[Key]:
        return "ip:" + request.client_ip

    return key


def user(get: Optional[Callable[[Any], Optional[Any]]] = None) -> KeyFunc:
    """``"user:<id>"`` for an authenticated user, None for an anonymous one
    (a credential: 401 unless the limit skips missing keys); combine with
    :func:`first_of` to fall back to the IP.
    ``get`` takes the framework's request and returns the id (or None);
    without it, the integration's notion of the user is used."""

    def key(request: RequestView) -> Optional[Key]:
        uid = get(request.native) if get is not None else request.user
        return None if uid is None or uid == "" else "user:%s" % (uid,)

    return credential(key)


def api_key(header: str = "X-API-Key") -> KeyFunc:
    """``"apikey:<sha256 of the key>"`` from a request header; None when the
    header is missing (a credential: 401 unless the limit skips missing
    keys). The key is hashed so that no secret is stored in Redis key
    names."""
    name = header.lower()

    def key(request: RequestView) -> Optional[Key]:
        value = request.headers.get(name)
        if not value:
            return None
        return "apikey:" + hashlib.sha256(value.encode("utf-8", "surrogateescape")).hexdigest()

    return credential(key)


def route() -> KeyFunc:
    """``"route:<METHOD> <route>"``: one budget per route for all clients
    together (the route template when the framework has it, else the path)."""

    def key(request: RequestView) -> Optional[Key]:
        return "route:%s %s" % (request.method, request.route or request.path)

    return key


def compose(*keys: KeyFunc) -> KeyFunc:
    """Several keys joined: ``compose(user(), route())`` is one budget per
    user and route. None when any part is None; a credential when any part
    is one."""

    def key(request: RequestView) -> Optional[Key]:
        parts: List[str] = []
        for k in keys:
            part = k(request)
            if part is None:
                return None
            parts.append(part.decode("utf-8", "surrogateescape") if isinstance(part, bytes) else part)
        return "|".join(parts)

    return credential(key) if any(is_credential(k) for k in keys) else key


def first_of(*keys: KeyFunc) -> KeyFunc:
    """The first key that is not None: ``first_of(api_key(), user(),
    client_ip())``. A credential when any part is one (giving it would have
    given a key)."""

    def key(request: RequestView) -> Optional[Key]:
        for k in keys:
            part = k(request)
            if part is not None:
                return part
        return None

    return credential(key) if any(is_credential(k) for k in keys) else key


#: A response-status test: True when the request counts (see Limit's count_when).
CountWhen = Callable[[int], bool]


def count_failures(status: int) -> bool:
    """``count_when`` for the brute-force pattern: count the responses with a
    status of 400 or more (a failed login answers 401), not the successes."""
    return status >= 400


def _check_on_missing_key(value: str) -> str:
    if value not in ON_MISSING_KEY:
        raise ValueError("on_missing_key %r is unknown; use %s" % (value, " or ".join(repr(o) for o in ON_MISSING_KEY)))
    return value


class Limit:
    """A limiter applied to requests: the key function (default: the client
    IP), the cost of one request, the methods it applies to (None: all), and
    what a request without a key gets (``on_missing_key``): ``"reject"``
    (the default: 400, or 401 when the key function is a credential) or
    ``"skip"`` (the request goes on, not limited).

    ``count_when``: which responses count, by status (None: all of them).
    An admitted request whose response status it answers False for gets its
    units back (e.g. :func:`count_failures`: only failed logins count)."""

    __slots__ = ("limiter", "key", "cost", "methods", "on_missing_key", "count_when")

    def __init__(
        self,
        limiter: Limiter,
        key: Optional[KeyFunc] = None,
        *,
        cost: int = 1,
        methods: Optional[Iterable[str]] = None,
        on_missing_key: str = "reject",
        count_when: Optional[CountWhen] = None,
    ) -> None:
        if not isinstance(limiter, Limiter):
            raise TypeError("limiter must be a polylimit.Limiter, not %s" % type(limiter).__name__)
        self.limiter = limiter
        self.key: KeyFunc = key if key is not None else client_ip()
        self.cost = cost
        self.methods = None if methods is None else frozenset(m.upper() for m in methods)
        self.on_missing_key = _check_on_missing_key(on_missing_key)
        if count_when is not None and not callable(count_when):
            raise TypeError("count_when must be a function of the response status, not %s" % type(count_when).__name__)
        self.count_when = count_when

    def __repr__(self) -> str:
        return "Limit(%r, cost=%d)" % (self.limiter, self.cost)


RuleLike = Union[Limit, Limiter, None]


def _as_limit(rule: RuleLike) -> Optional[Limit]:
    if rule is None or isinstance(rule, Limit):
        return rule
    return Limit(rule)


class Outcome(NamedTuple):
    """What a policy answered for one request. ``status`` is None when the
    request goes on (then ``headers`` go on its response), else 429, 503,
    or 400/401 for a request without a key (then ``headers`` and ``body``
    are the response). ``limit`` and ``key`` are what was checked (None
    when nothing was), for :meth:`Policy.settle`."""

    status: Optional[int]
    headers: List[Tuple[str, str]]
    body: str
    decision: Optional[Decision]
    error: Optional[Error]
    limit: Optional[Limit] = None
    key: Optional[Key] = None


_PASS = Outcome(None, [], "", None, None)


class Policy:
    """Which limit applies to which request, and what to answer.

    - ``default``: the limit for every request no rule below names (None: no
      limit). A :class:`polylimit.Limiter` alone is ``Limit(limiter)``: keyed
      by client IP, cost 1.
    - ``routes``: ``{pattern: limit}``, patterns matched against the request
      path with shell-style wildcards (``"/api/*"`` matches everything below
      ``/api/``), the first match in order wins and replaces the default; a
      rule of None exempts the route.
    - ``exempt``: path patterns never limited (health checks, metrics).
    - ``trusted_proxies``: addresses or networks of the reverse proxies whose
      ``X-Forwarded-For`` is believed (see :func:`resolve_client_ip`).
    - ``send_headers``: the core's rate-limit headers on allowed responses
      too (a 429 always carries them).
    - ``on_error``: when the limiter raises: ``"unavailable"`` (503) or
      ``"allow"``.

    A request whose key function finds no key gets what its limit's
    ``on_missing_key`` says (see :class:`Limit`): 400/401 by default.
    """

    def __init__(
        self,
        default: RuleLike = None,
        *,
        routes: Optional[Mapping[str, RuleLike]] = None,
        exempt: Iterable[str] = (),
        trusted_proxies: Iterable[str] = (),
        send_headers: bool = True,
        on_error: str = "unavailable",
    ) -> None:
        if on_error not in ON_ERROR:
            raise ValueError("on_error %r is unknown; use %s" % (on_error, " or ".join(repr(o) for o in ON_ERROR)))
        self.default = _as_limit(default)
        self.routes: List[Tuple[str, Optional[Limit]]] = [(p, _as_limit(r)) for p, r in (routes or {}).items()]
        self.exempt = tuple([exempt] if isinstance(exempt, str) else exempt)
        self.trusted = parse_networks(trusted_proxies)
        self.send_headers = send_headers
        self.on_error = on_error

    def rule_for(self, method: str, path: str) -> Optional[Limit]:
        """The limit that applies to a request, or None."""
        for pattern in self.exempt:
            if fnmatch.fnmatchcase(path, pattern):
                return None
        rule = self.default
        for pattern, r in self.routes:
            if fnmatch.fnmatchcase(path, pattern):
                rule = r
                break
        if rule is not None and rule.methods is not None and method.upper() not in rule.methods:
            return None
        return rule

    def _prepare(self, request: RequestView, rule: Optional[Limit]) -> Union[Tuple[Limit, Key], Outcome]:
        """The limit and key to check, or the outcome without a check."""
        if rule is None:
            return _PASS
        key = rule.key(request)
        if key is None:
            if rule.on_missing_key == "skip":
                return _PASS
            if is_credential(rule.key):
                return Outcome(401, [], NO_CREDENTIAL, None, None)
            return Outcome(400, [], NO_KEY, None, None)
        return rule, key

    def _answer(self, rule: Limit, key: Key, decision: Decision) -> Outcome:
        if decision.allowed:
            headers = list(decision.headers().items()) if self.send_headers else []
            return Outcome(None, headers, "", decision, None, rule, key)
        return Outcome(429, list(decision.headers().items()), TOO_MANY_REQUESTS, decision, None, rule, key)

    def _failed(self, rule: Limit, error: Error) -> Outcome:
        log.warning(
            "polylimit: the check for %r failed (%s: %s); on_error=%r",
            rule.limiter,
            getattr(error, "code", None),
            error,
            self.on_error,
        )
        if self.on_error == "allow":
            return Outcome(None, [], "", None, error)
        return Outcome(503, [], UNAVAILABLE, None, error)

    def check(self, request: RequestView, rule: Union[Limit, None, str] = "auto") -> Outcome:
        """Decides a request (blocking). ``rule``: the limit to apply instead
        of :meth:`rule_for`'s (None: none)."""
        chosen = self.rule_for(request.method, request.path) if isinstance(rule, str) else rule
        prepared = self._prepare(request, chosen)
        if isinstance(prepared, Outcome):
            return prepared
        limit, key = prepared
        try:
            decision = limit.limiter.check(key, limit.cost)
        except Error as e:
            return self._failed(limit, e)
        return self._answer(limit, key, decision)

    async def acheck(self, request: RequestView, rule: Union[Limit, None, str] = "auto") -> Outcome:
        """:meth:`check` for asyncio (the event loop is never blocked)."""
        chosen = self.rule_for(request.method, request.path) if isinstance(rule, str) else rule
        prepared = self._prepare(request, chosen)
        if isinstance(prepared, Outcome):
            return prepared
        limit, key = prepared
        try:
            decision = await limit.limiter.acheck(key, limit.cost)
        except Error as e:
            return self._failed(limit, e)
        return self._answer(limit, key, decision)

    @staticmethod
    def _to_refund(outcome: Outcome, status: int) -> Optional[Tuple[Limit, Key]]:
        limit, key, decision = outcome.limit, outcome.key, outcome.decision
        if limit is None or key is None or decision is None or limit.count_when is None:
            return None
        # Only units Redis took: a denial took none, a shadowed would-be
        # denial none either, and a degraded decision came from the failure
        # policy (Redis may be down; the local limiter is not refunded).
        if not decision.allowed or decision.shadowed or decision.degraded:
            return None
        if limit.count_when(status):
            return None
        return limit, key

    def settle(self, outcome: Outcome, status: int) -> bool:
        """After the response: gives the units of an admitted request back
        when its limit's ``count_when`` says its response ``status`` does not
        count. Returns whether it refunded. A failed refund is logged, never
        raised (the response is already made)."""
        todo = self._to_refund(outcome, status)
        if todo is None:
            return False
        limit, key = todo
        try:
            limit.limiter.refund(key, limit.cost)
        except Error as e:
            log.warning("polylimit: the refund for %r failed (%s: %s)", limit.limiter, getattr(e, "code", None), e)
            return False
        return True

    async def asettle(self, outcome: Outcome, status: int) -> bool:
        """:meth:`settle` for asyncio."""
        todo = self._to_refund(outcome, status)
        if todo is None:
            return False
        limit, key = todo
        try:
            await limit.limiter.arefund(key, limit.cost)
        except Error as e:
            log.warning("polylimit: the refund for %r failed (%s: %s)", limit.limiter, getattr(e, "code", None), e)
            return False
        return True


# -- limiters from a rate spec on a route (the decorators) ----------------------


def _short(pattern: str) -> str:
    """A route pattern as a prefix part: itself when short and plain, else a digest."""
    if len(pattern) <= 32 and all(c.isalnum() or c in "/_-.*" for c in pattern):
        return pattern
    return hashlib.sha256(pattern.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def view_name(fn: Any) -> str:
    """``module.qualname`` of a view function: the same in every process
    that serves the app, so it can name the route in a Redis prefix."""
    return "%s.%s" % (getattr(fn, "__module__", "?"), getattr(fn, "__qualname__", getattr(fn, "__name__", "?")))


class RateLimiters:
    """The limiters of the route decorators that take a rate spec
    (``@rl.limit("5/minute")``): each is made once, on first use, and kept.

    Each route counts on its own: without an explicit ``prefix`` the
    limiter's prefix is ``<base>:view:<route>:<spec>`` (the route is the
    view's ``module.qualname``; each part a digest when long or not plain),
    as :func:`policy_from_config` gives each rule a prefix of its own. The
    spec is part of it because two limits on one route (``"5/minute"`` and
    ``"100/hour"``) must not share a stored key: it does not carry the rate.
    Routes that should share one budget say so with the same ``prefix``
    (and the same rate and options: then they share one limiter)."""

    def __init__(self, client: Optional[Client] = None, base: str = "pl") -> None:
        self.client = client
        self.base = base
        self._lock = threading.Lock()
        self._made: Dict[Tuple[Any, ...], Limiter] = {}

    def prefix_for(self, route_name: str, spec: str) -> str:
        return "%s:view:%s:%s" % (self.base, _short(route_name), _short(spec))

    def get(
        self,
        spec: str,
        prefix: str,
        algorithm: Optional[AlgorithmName] = None,
        on_failure: Optional[FailurePolicyName] = None,
    ) -> Limiter:
        """The limiter for ``spec`` under ``prefix`` (made now if new)."""
        if self.client is None:
            raise RuntimeError("a limit given as a rate spec (%r) needs a polylimit.Client: pass client=..." % spec)
        ident = (spec, prefix, algorithm, on_failure)
        with self._lock:
            found = self._made.get(ident)
            if found is None:
                found = self.client.limiter(
                    spec, algorithm=algorithm or "sliding_log", prefix=prefix, on_failure=on_failure or "error"
                )
                self._made[ident] = found
            return found


# -- configuration as data (Django settings, Flask config) ----------------------

_KEYS: Dict[str, Callable[[], KeyFunc]] = {
    "ip": client_ip,
    "user": user,
    "api_key": api_key,
    "route": route,
}


def _key_from_config(value: Any) -> KeyFunc:
    """A key function from configuration: a name (``"ip"``, ``"user"``,
    ``"api_key"``, ``"route"``, or several joined with ``"+"``, e.g.
    ``"user+route"``), a dotted path to a key function (``"myapp.keys.tenant"``),
    or a callable."""
    if callable(value):
        return value  # type: ignore[no-any-return]
    if not isinstance(value, str):
        raise TypeError("a key must be a name, a dotted path or a callable, not %s" % type(value).__name__)
    names = value.split("+")
    if all(n in _KEYS for n in names):
        funcs = [_KEYS[n]() for n in names]
        return funcs[0] if len(funcs) == 1 else compose(*funcs)
    module, _, attr = value.rpartition(".")
    if not module:
        raise ValueError("key %r is unknown; use %s, or a dotted path" % (value, ", ".join(sorted(_KEYS))))
    found = getattr(importlib.import_module(module), attr)
    if not callable(found):
        raise TypeError("key %r is not callable" % value)
    return found  # type: ignore[no-any-return]


_LIMITER_OPTIONS = (
    "algorithm",
    "prefix",
    "clock",
    "deny_cache",
    "on_failure",
    "breaker_failures",
    "breaker_cooldown",
    "shadow",
    "block",
)


def _limit_from_config(client: Client, value: Any, default_prefix: str, where: str) -> Optional[Limit]:
    """A rule from configuration: None (exempt), a rate spec (``"10/minute"``:
    keyed by IP), or a dict ``{"rate": spec, "key": ..., "cost": n,
    "methods": [...], <limiter options>}``."""
    if value is None:
        return None
    if isinstance(value, str):
        value = {"rate": value}
    if not isinstance(value, Mapping):
        raise TypeError("%s: a limit is a rate spec, a dict or None, not %s" % (where, type(value).__name__))
    unknown = set(value) - {"rate", "key", "cost", "methods", "on_missing_key", "count_when"} - set(_LIMITER_OPTIONS)
    if unknown:
        raise ValueError("%s: unknown option(s) %s" % (where, ", ".join(sorted(unknown))))
    if "rate" not in value:
        raise ValueError('%s: a limit needs a "rate" (e.g. "100/minute")' % where)
    options = {k: value[k] for k in _LIMITER_OPTIONS if k in value}
    # Each rule counts on its own: limiters with one prefix would share the
    # keys' state (the stored key does not carry the rate).
    options.setdefault("prefix", default_prefix)
    limiter = client.limiter(value["rate"], **options)
    key = _key_from_config(value["key"]) if "key" in value else None
    return Limit(
        limiter,
        key,
        cost=value.get("cost", 1),
        methods=value.get("methods"),
        on_missing_key=value.get("on_missing_key", "reject"),
        count_when=_count_when_from_config(value.get("count_when"), where),
    )


def _count_when_from_config(value: Any, where: str) -> Optional[CountWhen]:
    """``count_when`` from configuration: None, ``"failures"`` (status >= 400),
    a dotted path to a function of the status, or a callable."""
    if value is None or callable(value):
        return value  # type: ignore[no-any-return]
    if value == "failures":
        return count_failures
    if isinstance(value, str) and "." in value:
        module, _, attr = value.rpartition(".")
        found = getattr(importlib.import_module(module), attr)
        if callable(found):
            return found  # type: ignore[no-any-return]
    raise ValueError('%s: count_when %r is unknown; use "failures", a dotted path or a callable' % (where, value))


def policy_from_config(config: Mapping[str, Any], client: Optional[Client] = None) -> Tuple[Policy, Client]:
    """A Policy (and the Client it uses) from a dict, as Django's
    ``settings.POLYLIMIT`` holds it::

        {
            "URL": "redis://127.0.0.1:6379",   # None or absent: $POLYLIMIT_URL
            "CLIENT": {"name": "web", "command_timeout": 0.2},  # Client options
            "PREFIX": "pl",                    # limiters' key prefix
            "DEFAULT": "100/minute",           # or {"rate": ..., "key": ..., ...}; None: no default
            "ROUTES": {"/login": {"rate": "5/minute", "methods": ["POST"]}, "/health": None},
            "EXEMPT": ["/metrics"],
            "TRUSTED_PROXIES": ["10.0.0.0/8"],
            "HEADERS": True,
            "ON_ERROR": "unavailable",         # or "allow"
        }

    A limit's options: ``rate`` (a rate spec), ``key`` (``"ip"`` (default),
    ``"user"``, ``"api_key"``, ``"route"``, several joined with ``+``, or a
    dotted path), ``cost``, ``methods``, ``on_missing_key`` (``"reject"``,
    the default, or ``"skip"``), ``count_when`` (``"failures"``: only
    responses with a status >= 400 count; a dotted path or a callable of the
    status) and the limiter options of
    ``Client.limiter`` (``algorithm``, ``on_failure``, ...)."""
    known = {"URL", "CLIENT", "PREFIX", "DEFAULT", "ROUTES", "EXEMPT", "TRUSTED_PROXIES", "HEADERS", "ON_ERROR"}
    unknown = set(config) - known
    if unknown:
        raise ValueError(
            "POLYLIMIT: unknown setting(s) %s; known: %s" % (", ".join(sorted(unknown)), ", ".join(sorted(known)))
        )
    if client is None:
        client = Client(config.get("URL"), **dict(config.get("CLIENT") or {}))
    prefix = config.get("PREFIX", "pl")
    default = _limit_from_config(client, config.get("DEFAULT"), prefix + ":default", "DEFAULT")
    routes = {
        pattern: _limit_from_config(client, rule, "%s:route:%s" % (prefix, _short(pattern)), "ROUTES[%r]" % pattern)
        for pattern, rule in (config.get("ROUTES") or {}).items()
    }
    policy = Policy(
        default,
        routes=routes,
        exempt=config.get("EXEMPT", ()),
        trusted_proxies=config.get("TRUSTED_PROXIES", ()),
        send_headers=config.get("HEADERS", True),
        on_error=config.get("ON_ERROR", "unavailable"),
    )
    return policy, client
