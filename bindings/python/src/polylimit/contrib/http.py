"""What the web integrations share; no framework is imported here.

Every decision about a request is the core's HTTP request policy
(docs/integrations/contract.md), the same in every language: a JSON policy
document and the limiters its rules name by index. An integration only
describes the request (:class:`RequestView`), asks the policy what to do,
runs the check on the rule's limiter (``Limiter.check``, or ``acheck``
under asyncio), and applies the answer the core gives:

- the request goes on: the core's rate-limit headers go on its response
  (unless ``send_headers`` is off);
- ``429 Too Many Requests``, ``503`` when the check failed (``on_error``),
  ``400``/``401`` for a request without a key, ``403`` for the deny list:
  status, plain-text body and headers as the core words them.

Two ways to make a :class:`Policy`:

- ``Policy.from_document(doc, limiters)``: the contract's document (JSON
  text or a dict), its rules naming ``limiters`` by index;
- ``Policy(default, routes=..., exempt=..., trusted_proxies=...)`` with
  :class:`Limit` objects and the key helpers below, which this module
  translates into such a document (``policy.document`` shows it).

Key helpers name what the core computes: :func:`client_ip` (``"ip"``),
:func:`api_key` (``"api_key:<Header>"``, hashed), :func:`header`,
:func:`user`, :func:`tenant`, :func:`route`, and their combinations
:func:`compose` (``"a+b"``) and :func:`first_of` (alternatives). Any other
callable of a :class:`RequestView` is the application's own key (the
``"app"`` key part): the core asks for it only when its rule matches, and
stores it as given.

A limit can count only some responses, by status (``count_when``; e.g.
:func:`count_failures`): the check runs before the handler, and after the
response the core says whether its units go back (:meth:`Policy.settle`).
"""

import hashlib
import importlib
import json
import logging
import threading
from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Set,
    Tuple,
    Union,
)

from .. import _core
from .._client import Client, Limiter
from .._core import Decision, HttpStep
from .._errors import Error
from .._vocabulary import AlgorithmName, FailurePolicyName

__all__ = [
    "CountWhen",
    "KeyFunc",
    "Key",
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
    "header",
    "policy_from_config",
    "route",
    "tenant",
    "user",
]

log = logging.getLogger("polylimit.contrib")

#: A key an application function returns.
AppKey = Union[str, bytes]

ON_ERROR = ("unavailable", "allow")
#: What a limit does with a request that has no key; the first is the
#: default. The same names in every language.
ON_MISSING_KEY = ("reject", "skip")

# The attribute that marks a key function as a credential (see credential()).
_CREDENTIAL = "polylimit_credential"


class RequestView:
    """One request, as the application's hooks (key, user, tenant, cost
    functions) see it, whatever the framework.

    ``headers`` maps lower-case names to values (repeated headers joined with
    ``", "``); ``peer`` is the socket's remote address as the server gives
    it; ``route`` the route template when the framework knows it (else
    None); ``native`` the framework's own request object (or ASGI scope)."""

    __slots__ = ("method", "path", "route", "peer", "headers", "native", "_user")

    def __init__(
        self,
        method: str,
        path: str,
        peer: Optional[str],
        headers: Mapping[str, str],
        native: Any = None,
        route: Optional[str] = None,
        user: Optional[Callable[[], Optional[str]]] = None,
    ) -> None:
        self.method = method.upper()
        self.path = path
        self.route = route
        self.peer = peer
        self.headers = headers
        self.native = native
        self._user = user

    def header(self, name: str) -> Optional[str]:
        return self.headers.get(name.lower())

    @property
    def user(self) -> Optional[str]:
        """The authenticated user's id as the framework knows it (None when
        anonymous); see each integration for where it comes from."""
        return self._user() if self._user is not None else None


#: The application's own key function: the request -> its key, or None
#: when the request has none.
AppKeyFunc = Callable[[RequestView], Optional[AppKey]]


class Key:
    """A rate-limit key, as the core computes it: alternatives (the first
    whose parts are all present wins), each a composition of key parts
    (``"ip"``, ``"api_key:X-API-Key"``, ``"user"``, ...) or application key
    functions. Made by the helpers (:func:`client_ip`, :func:`api_key`,
    :func:`compose`, ...), not directly."""

    __slots__ = ("alternatives", "credential", "user_get", "tenant_get")

    def __init__(
        self,
        alternatives: Sequence[Sequence[Union[str, AppKeyFunc]]],
        credential: bool,
        user_get: Optional[Callable[[Any], Optional[Any]]] = None,
        tenant_get: Optional[Callable[[Any], Optional[Any]]] = None,
    ) -> None:
        self.alternatives: Tuple[Tuple[Union[str, AppKeyFunc], ...], ...] = tuple(tuple(a) for a in alternatives)
        self.credential = credential
        self.user_get = user_get
        self.tenant_get = tenant_get

    def __repr__(self) -> str:
        def text(alt: Tuple[Union[str, AppKeyFunc], ...]) -> str:
            return "+".join(p if isinstance(p, str) else "app" for p in alt)

        return "Key(%s)" % ", ".join(repr(text(a)) for a in self.alternatives)


#: What a key argument may be: a :class:`Key` from the helpers, or the
#: application's own function of the request.
KeyFunc = Union[Key, AppKeyFunc]


def _as_key(key: KeyFunc) -> Key:
    if isinstance(key, Key):
        return key
    if not callable(key):
        raise TypeError("a key is a polylimit key (client_ip(), api_key(), ...) or a function of the request")
    return Key([[key]], is_credential(key))


def credential(key: AppKeyFunc) -> AppKeyFunc:
    """Marks an application key function as a credential (an API key, a
    token): a request it finds no key in is answered ``401 Unauthorized``
    instead of ``400 Bad Request`` (with ``on_missing_key="reject"``).
    Returns ``key`` itself, so it also works as a decorator."""
    setattr(key, _CREDENTIAL, True)
    return key


def is_credential(key: KeyFunc) -> bool:
    """Whether a missing key of this kind is a missing credential (401)."""
    if isinstance(key, Key):
        return key.credential
    return bool(getattr(key, _CREDENTIAL, False))


def client_ip() -> Key:
    """``ip:<address>``: the client's address (``X-Forwarded-For`` only from
    the policy's trusted proxies; IPv6 by its /64). The default key."""
    return Key([["ip"]], False)


def user(get: Optional[Callable[[Any], Optional[Any]]] = None) -> Key:
    """``user:<id>`` for an authenticated user; an anonymous request has no
    key (a credential: 401 unless the limit skips missing keys). ``get``
    takes the framework's request and returns the id (or None); without it,
    the policy's ``user`` hook, else the integration's notion of the user."""
    return Key([["user"]], True, user_get=get)


def tenant(get: Optional[Callable[[Any], Optional[Any]]] = None) -> Key:
    """``tenant:<id>``, the tenant the application names (a credential);
    ``get`` takes the framework's request and returns the id (or None);
    without it, the policy's ``tenant`` hook."""
    return Key([["tenant"]], True, tenant_get=get)


def api_key(header: str = "X-API-Key") -> Key:
    """``apikey:<SHA-256 of the key>`` from a request header (a credential:
    401 when missing unless the limit skips missing keys). The secret never
    reaches Redis, a log line or a metric."""
    return Key([["api_key:" + header]], True)


def header(name: str) -> Key:
    """``header:<lower-case name>:<SHA-256 of the value>``: any header's
    value (absent or empty: no key)."""
    return Key([["header:" + name]], False)


def route() -> Key:
    """``route:<METHOD> <route>``: one budget per route for all clients
    together (the route template when the framework has it, else the path)."""
    return Key([["route"]], False)


def _merge_getters(keys: Sequence[Key]) -> Tuple[Optional[Callable[[Any], Any]], Optional[Callable[[Any], Any]]]:
    users = {k.user_get for k in keys if k.user_get is not None}
    tenants = {k.tenant_get for k in keys if k.tenant_get is not None}
    if len(users) > 1 or len(tenants) > 1:
        raise ValueError("one key may name one user(get=...) and one tenant(get=...) function")
    return (next(iter(users)) if users else None), (next(iter(tenants)) if tenants else None)


def compose(*keys: KeyFunc) -> Key:
    """Several keys joined (``|``): ``compose(user(), route())`` is one
    budget per user and route. Missing when any part is; a credential when
    any part is one."""
    if not keys:
        raise ValueError("compose() needs at least one key")
    parts = [_as_key(k) for k in keys]
    alternatives: List[Tuple[Union[str, AppKeyFunc], ...]] = [()]
    for p in parts:
        alternatives = [a + b for a in alternatives for b in p.alternatives]
    u, t = _merge_getters(parts)
    return Key(alternatives, any(p.credential for p in parts), u, t)


def first_of(*keys: KeyFunc) -> Key:
    """The first key that is present: ``first_of(api_key(), user(),
    client_ip())``. A credential when any part is one."""
    if not keys:
        raise ValueError("first_of() needs at least one key")
    parts = [_as_key(k) for k in keys]
    u, t = _merge_getters(parts)
    return Key([a for p in parts for a in p.alternatives], any(p.credential for p in parts), u, t)


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


#: A limit's cost: a number, the contract's header cost
#: (``{"header": "X-Cost", "default": 1, "max": 100}``) or the application's
#: function of the request.
Cost = Union[int, Mapping[str, Any], Callable[[RequestView], int]]


class Limit:
    """A limiter applied to requests: the key (default: the client IP), the
    cost of one request, the methods it applies to (None: all), what a
    request without a key gets (``on_missing_key``: ``"reject"``, the
    default: 400, or 401 when the key is a credential; ``"skip"``: the
    request goes on unchecked), and which responses count (``count_when``, a
    function of the status; None: all). ``name`` names the rule in the
    ``RateLimit-Policy`` header and the metrics (default: from its route
    pattern, ``"default"`` for the default limit)."""

    __slots__ = ("limiter", "key", "cost", "methods", "on_missing_key", "count_when", "name")

    def __init__(
        self,
        limiter: Limiter,
        key: Optional[KeyFunc] = None,
        *,
        cost: Cost = 1,
        methods: Optional[Iterable[str]] = None,
        on_missing_key: str = "reject",
        count_when: Optional[CountWhen] = None,
        name: Optional[str] = None,
    ) -> None:
        if not isinstance(limiter, Limiter):
            raise TypeError("limiter must be a polylimit.Limiter, not %s" % type(limiter).__name__)
        self.limiter = limiter
        self.key: Key = _as_key(key) if key is not None else client_ip()
        if isinstance(cost, bool) or not (isinstance(cost, (int, Mapping)) or callable(cost)):
            raise TypeError("cost must be an int, a header cost dict or a function of the request")
        self.cost = cost
        self.methods = None if methods is None else frozenset(m.upper() for m in methods)
        self.on_missing_key = _check_on_missing_key(on_missing_key)
        if count_when is not None and not callable(count_when):
            raise TypeError("count_when must be a function of the response status, not %s" % type(count_when).__name__)
        self.count_when = count_when
        self.name = name

    def __repr__(self) -> str:
        return "Limit(%r, key=%r)" % (self.limiter, self.key)


RuleLike = Union[Limit, Limiter, None]


def _as_limit(rule: RuleLike) -> Optional[Limit]:
    if rule is None or isinstance(rule, Limit):
        return rule
    return Limit(rule)


class Outcome(NamedTuple):
    """What a policy answered for one request. ``status`` is None when the
    request goes on (then ``headers`` go on its response), else the status
    to answer with ``body`` and ``headers`` (429, 503, 400, 401, 403).
    ``decision`` is the check's (None when there was none), ``error`` the
    failed check's; ``limit``, ``key`` and ``step`` what was checked, for
    :meth:`Policy.settle`; ``rule`` the name of the rule that matched."""

    status: Optional[int]
    headers: List[Tuple[str, str]]
    body: str
    decision: Optional[Decision]
    error: Optional[Error]
    limit: Optional[Limit] = None
    key: Optional[AppKey] = None
    step: Optional[HttpStep] = None
    rule: Optional[str] = None


_PASS = Outcome(None, [], "", None, None)


def _count_when_doc(fn: CountWhen) -> Union[str, List[Union[int, str]]]:
    """A count_when function as the document's list of statuses and ranges:
    it is a function of the status alone, so its answers for 100..999 are
    all of it."""
    if fn is count_failures:
        return "failures"
    counted = [s for s in range(100, 1000) if fn(s)]
    if len(counted) == 900:
        return "all"
    if not counted:
        raise ValueError("count_when counts no response status (100 to 999): every request would be refunded")
    if counted == list(range(400, 1000)):
        return "failures"
    if counted == list(range(100, 400)):
        return "successes"
    out: List[Union[int, str]] = []
    start = prev = counted[0]
    for s in counted[1:] + [0]:
        if s == prev + 1:
            prev = s
            continue
        out.append(start if start == prev else "%d-%d" % (start, prev))
        start = prev = s
    return out


def _rule_name(text: str, taken: Dict[str, bool]) -> str:
    """A rule name (printable ASCII, no space, '"' or '\\', at most 64) from
    a route pattern, unique in the policy."""
    base = "".join(c if 0x21 <= ord(c) <= 0x7E and c not in '"\\' else "_" for c in text.lstrip("/")) or "root"
    base = base[:56]
    name, n = base, 2
    while name in taken:
        name, n = "%s-%d" % (base, n), n + 1
    taken[name] = True
    return name


class _Rule:
    """What the binding keeps of a rule: the Limit it came from, the
    application's key function and cost function."""

    __slots__ = ("limit", "app", "cost")

    def __init__(
        self,
        limit: Optional[Limit] = None,
        app: Optional[AppKeyFunc] = None,
        cost: Optional[Callable[[RequestView], int]] = None,
    ) -> None:
        self.limit, self.app, self.cost = limit, app, cost


_CORE_CREDENTIALS = ("api_key", "user", "tenant")


def _key_doc(key: Key) -> Tuple[Union[str, List[str]], Optional[AppKeyFunc], bool]:
    """A Key as the document's key, the one application function its "app"
    part stands for, and whether the rule must say ``"credential": true``
    (the key is a credential only through an application function the core
    cannot see: a missing key is then answered 401)."""
    apps: List[AppKeyFunc] = []
    for alt in key.alternatives:
        for p in alt:
            if not isinstance(p, str) and p not in apps:
                apps.append(p)
    all_app = all(not isinstance(p, str) for alt in key.alternatives for p in alt)
    app: Optional[AppKeyFunc] = None
    if len(apps) == 1:
        app = apps[0]
    elif apps and all_app:
        # Several application functions and nothing else: one "app" key,
        # the first alternative they all give, joined as the core joins.
        alternatives = key.alternatives

        def joined(request: RequestView) -> Optional[AppKey]:
            for alt in alternatives:
                parts: List[str] = []
                for p in alt:
                    assert not isinstance(p, str)
                    v = p(request)
                    if v is None or v == "" or v == b"":
                        break
                    parts.append(v.decode("utf-8", "surrogateescape") if isinstance(v, bytes) else v)
                else:
                    return "|".join(parts)
            return None

        app = joined
        return "app", app, key.credential
    elif apps:
        raise ValueError("a key can combine one application key function with the core's parts, not %d" % len(apps))
    texts = ["+".join(p if isinstance(p, str) else "app" for p in alt) for alt in key.alternatives]
    core_credential = any(
        p.split(":")[0] in _CORE_CREDENTIALS for alt in key.alternatives for p in alt if isinstance(p, str)
    )
    doc: Union[str, List[str]] = texts[0] if len(texts) == 1 else texts
    return doc, app, key.credential and not core_credential


def _parts(doc: Mapping[str, Any]) -> Tuple[bool, bool, bool]:
    """Whether a policy document reads the user, the tenant, the route."""
    kinds: Set[str] = set()
    routes = False
    for r in doc.get("rules") or ():
        key = r.get("key", "ip") if isinstance(r, Mapping) else "ip"
        for comp in key if isinstance(key, list) else [key]:
            if isinstance(comp, str):
                kinds.update(p.split(":")[0] for p in comp.split("+"))
        routes = routes or bool(isinstance(r, Mapping) and r.get("routes"))
    lists = [doc.get("allow") or {}, doc.get("deny") or {}]
    users = "user" in kinds or any(isinstance(li, Mapping) and li.get("users") for li in lists)
    tenants = "tenant" in kinds or any(isinstance(li, Mapping) and li.get("tenants") for li in lists)
    return users, tenants, routes or "route" in kinds


def _wire(value: Optional[str]) -> Optional[bytes]:
    """A header value as the bytes the client sent (servers decode them as
    Latin-1)."""
    if value is None:
        return None
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogateescape")


def _text(value: Any) -> Optional[str]:
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else str(value)


Hook = Callable[[RequestView], Any]


class Policy:
    """The HTTP request policy: which rule applies to a request, its key,
    cost and answer, decided by the core (docs/integrations/contract.md).

    ``Policy(default, routes=..., exempt=..., trusted_proxies=...,
    send_headers=..., on_error=...)`` translates :class:`Limit` objects into
    the contract's document:

    - ``default``: the limit for every request no route names (None: no
      limit). A :class:`polylimit.Limiter` alone is ``Limit(limiter)``:
      keyed by client IP, cost 1.
    - ``routes``: ``{pattern: limit}``, path globs (``*`` any run of
      characters, ``?`` one), the first match in order wins and replaces
      the default; a limit of None exempts the route, and a route's limit
      with ``methods`` leaves its other methods unlimited.
    - ``exempt``: path globs never limited (health checks, metrics).
    - ``trusted_proxies``: addresses or networks (CIDR) of the reverse
      proxies whose ``X-Forwarded-For`` is believed.
    - ``send_headers``: the rate-limit headers on admitted responses too
      (a 429 always carries them).
    - ``on_error``: when the check fails: ``"unavailable"`` (503) or
      ``"allow"`` (on, without headers).
    - ``user``, ``tenant``: functions of the :class:`RequestView` giving the
      user / tenant id (default: the integration's notion of the user; no
      tenant).

    :meth:`from_document` takes the document itself.
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
        user: Optional[Hook] = None,
        tenant: Optional[Hook] = None,
    ) -> None:
        if on_error not in ON_ERROR:
            raise ValueError("on_error %r is unknown; use %s" % (on_error, " or ".join(repr(o) for o in ON_ERROR)))
        limiters: List[Limiter] = []
        rules: List[Dict[str, Any]] = []
        kept: List[_Rule] = []
        taken: Dict[str, bool] = {}
        keys: List[Key] = []

        def index(lim: Limiter) -> int:
            for i, known in enumerate(limiters):
                if known is lim:
                    return i
            limiters.append(lim)
            return len(limiters) - 1

        def add(limit: Optional[Limit], pattern: Optional[str]) -> None:
            name = _rule_name(
                limit.name if limit is not None and limit.name else (pattern if pattern is not None else "default"),
                taken,
            )
            rule: Dict[str, Any] = {"name": name}
            if pattern is not None:
                rule["paths"] = [pattern]
            if limit is None:
                rule["limiter"] = None
                rules.append(rule)
                kept.append(_Rule())
                return
            if limit.methods is not None:
                rule["methods"] = sorted(limit.methods)
            rule["limiter"] = index(limit.limiter)
            key, app, credential = _key_doc(limit.key)
            keys.append(limit.key)
            if key != "ip":
                rule["key"] = key
            if credential:
                rule["credential"] = True
            cost_fn: Optional[Callable[[RequestView], int]] = None
            if isinstance(limit.cost, Mapping):
                rule["cost"] = dict(limit.cost)
            elif callable(limit.cost):
                cost_fn = limit.cost
            elif limit.cost != 1:
                rule["cost"] = limit.cost
            if limit.on_missing_key != "reject":
                rule["on_missing_key"] = limit.on_missing_key
            if limit.count_when is not None:
                rule["count_when"] = _count_when_doc(limit.count_when)
            rules.append(rule)
            kept.append(_Rule(limit, app, cost_fn))
            if limit.methods is not None and pattern is not None:
                # The route's other methods are not limited (not the default's).
                rules.append({"name": _rule_name(name + ":other-methods", taken), "paths": [pattern], "limiter": None})
                kept.append(_Rule())

        for pattern, r in (routes or {}).items():
            add(_as_limit(r), pattern)
        default_limit = _as_limit(default)
        if default_limit is not None:
            add(default_limit, None)
        doc: Dict[str, Any] = {}
        proxies = [trusted_proxies] if isinstance(trusted_proxies, str) else list(trusted_proxies)
        if proxies:
            doc["trusted_proxies"] = [p.strip() for p in proxies]
        exempt_list = [exempt] if isinstance(exempt, str) else list(exempt)
        if exempt_list:
            doc["exempt"] = exempt_list
        if not send_headers:
            doc["send_headers"] = False
        if on_error != "unavailable":
            doc["on_error"] = on_error
        doc["rules"] = rules
        u, t = _merge_getters(keys)
        if user is None and u is not None:
            user = _native(u)
        if tenant is None and t is not None:
            tenant = _native(t)
        self._setup(doc, limiters, kept, user, tenant, None, None)
        self.default = default_limit
        self.routes: List[Tuple[str, Optional[Limit]]] = [(p, _as_limit(r)) for p, r in (routes or {}).items()]

    @classmethod
    def from_document(
        cls,
        doc: Union[str, Mapping[str, Any]],
        limiters: Sequence[Limiter],
        *,
        user: Optional[Hook] = None,
        tenant: Optional[Hook] = None,
        app_key: Optional[Callable[[RequestView], Optional[AppKey]]] = None,
        cost: Optional[Callable[[RequestView], Optional[int]]] = None,
    ) -> "Policy":
        """A policy from the contract's document (docs/integrations/contract.md):
        JSON text, or a dict turned into JSON. ``limiters[i]`` is the limiter
        of the rules that say ``"limiter": i``. A document the core refuses
        raises :class:`polylimit.InvalidArgument` naming the line and field.

        The identities the application supplies, each a function of the
        :class:`RequestView`: ``user`` (default: the integration's notion of
        the user), ``tenant``, ``app_key`` (for rules keyed by ``"app"``; None
        or ``""``: no key) and ``cost`` (None: the rule's)."""
        for lim in limiters:
            if not isinstance(lim, Limiter):
                raise TypeError("limiters must be polylimit.Limiter objects, not %s" % type(lim).__name__)
        self = cls.__new__(cls)
        text = doc if isinstance(doc, str) else json.dumps(doc)
        core = _core.HttpPolicy(text, [lim._core for lim in limiters])
        parsed = json.loads(text)
        kept = [_Rule(app=app_key) for _ in range(core.rule_count())]
        self._setup(parsed, list(limiters), kept, user, tenant, cost, core, text)
        self.default = None
        self.routes = []
        return self

    def _setup(
        self,
        doc: Mapping[str, Any],
        limiters: List[Limiter],
        rules: List[_Rule],
        user: Optional[Hook],
        tenant: Optional[Hook],
        cost: Optional[Callable[[RequestView], Optional[int]]],
        core: Optional["_core.HttpPolicy"] = None,
        text: Optional[str] = None,
    ) -> None:
        self.document: str = text if text is not None else json.dumps(doc)
        self.limiters: List[Limiter] = limiters
        self._core = core if core is not None else _core.HttpPolicy(self.document, [lim._core for lim in limiters])
        self._rules = rules
        self._names = [self._core.rule_name(i) for i in range(self._core.rule_count())]
        self._limiter_of = [self._core.rule_limiter(i) for i in range(self._core.rule_count())]
        self._headers = self._core.header_names()
        self._needs_user, self._needs_tenant, self.needs_route = _parts(doc)
        self._user_hook = user
        self._tenant_hook = tenant
        self._cost_hook = cost
        self.on_error = str(doc.get("on_error", "unavailable"))
        self._doc = doc
        for i, r in enumerate(rules):
            if r.app is None and any(
                "app" in comp.split("+") for comp in _compositions(doc["rules"][i]) if isinstance(comp, str)
            ):
                raise ValueError(
                    'rule %r is keyed by "app": give app_key=... (a function of the request)' % self._names[i]
                )

    # -- introspection --------------------------------------------------------
    def header_names(self) -> List[str]:
        """The request headers the policy reads (lower case)."""
        return list(self._headers)

    def rule_names(self) -> List[str]:
        return list(self._names)

    def metrics_prometheus(self) -> str:
        """Requests decided per rule and outcome, Prometheus text
        (``polylimit_http_requests_total{rule,outcome}``): never per key."""
        return self._core.metrics_prometheus()

    def derive(self, limit: Limit, name: Optional[str] = None) -> "Policy":
        """A policy with this one's settings (proxies, lists, headers,
        on_error, hooks) and ``limit`` as its only rule: a route's own limit
        (Flask's ``@rl.limit``). ``name`` names the rule."""
        settings = {k: v for k, v in self._doc.items() if k not in ("rules", "exempt")}
        if name is not None and limit.name is None:
            limit = Limit(
                limit.limiter,
                limit.key,
                cost=limit.cost,
                methods=limit.methods,
                on_missing_key=limit.on_missing_key,
                count_when=limit.count_when,
                name=name,
            )
        derived = Policy(limit, user=self._user_hook, tenant=self._tenant_hook)
        doc = dict(settings)
        doc.update({k: v for k, v in derived._doc.items() if k not in settings})
        doc["rules"] = derived._doc["rules"]
        derived._setup(doc, derived.limiters, derived._rules, derived._user_hook, derived._tenant_hook, self._cost_hook)
        return derived

    # -- per request ----------------------------------------------------------
    def prepare(
        self, request: RequestView, *, app_key: Optional[AppKey] = None, cost: Optional[int] = None
    ) -> HttpStep:
        """The core's step for a request, as described: the user and tenant
        from the policy's hooks (or the integration's user), ``app_key`` and
        ``cost`` as given. A step asking for the application's key
        (``HTTP_NEED_APP_KEY``) comes back as it is; :meth:`check` handles
        it with the ``app_key`` hook."""
        return self._core.prepare(**self._describe(request), app_key=app_key, cost=cost)

    def _describe(self, request: RequestView) -> Dict[str, Any]:
        user = None
        if self._needs_user:
            user = _text(self._user_hook(request) if self._user_hook is not None else request.user)
        tenant = _text(self._tenant_hook(request)) if self._needs_tenant and self._tenant_hook is not None else None
        headers = [_wire(request.headers.get(n)) for n in self._headers]
        return dict(
            method=request.method,
            path=request.path,
            route=request.route,
            peer=request.peer,
            headers=headers,
            user=user,
            tenant=tenant,
        )

    def _prepare(self, request: RequestView) -> HttpStep:
        """prepare(), with the application's hooks: its cost, its key when
        the rule asks for it, a rule's own cost function."""
        args = self._describe(request)
        cost = self._cost_hook(request) if self._cost_hook is not None else None
        step = self._core.prepare(**args, cost=cost)
        app_key: Optional[AppKey] = None
        if step.action == _core.HTTP_NEED_APP_KEY:
            fn = self._rules[step.rule].app
            app_key = (fn(request) if fn is not None else None) or ""
            step = self._core.prepare(**args, app_key=app_key, cost=cost)
        if step.action == _core.HTTP_CHECK and cost is None:
            fn_cost = self._rules[step.rule].cost
            if fn_cost is not None:
                step = self._core.prepare(**args, app_key=app_key, cost=fn_cost(request))
        return step

    def answer(self, step: HttpStep, decision: Optional[Decision] = None) -> Outcome:
        """The core's answer to a step: a RESPOND step's (``decision`` None),
        or a CHECK step's with the check's decision (None: the check failed)."""
        if step.action == _core.HTTP_RESPOND:
            return self._responded(step)
        status, body, headers = self._core.answer(step, decision)
        return self._outcome(step, status, body, headers, decision, None)

    def refund_due(self, step: HttpStep, decision: Decision, status: int) -> bool:
        """Whether the units of a checked request go back now that its
        response has ``status`` (the rule's count_when; only units Redis took)."""
        return self._core.refund_due(step, decision, status)

    def rule_name(self, rule: int) -> str:
        """The name of rule number ``rule`` (a step's ``rule``)."""
        return self._names[rule]

    def _responded(self, step: HttpStep) -> Outcome:
        status, body, headers = self._core.answer(step, None)
        return self._outcome(step, status, body, headers, None, None)

    def _outcome(
        self,
        step: HttpStep,
        status: int,
        body: str,
        headers: List[Tuple[str, str]],
        decision: Optional[Decision],
        error: Optional[Error],
    ) -> Outcome:
        rule = self._rules[step.rule] if step.rule >= 0 else None
        return Outcome(
            status or None,
            headers,
            body,
            decision,
            error,
            rule.limit if rule is not None else None,
            step.key if step.action == _core.HTTP_CHECK else None,
            step,
            self._names[step.rule] if step.rule >= 0 else None,
        )

    def _limiter(self, step: HttpStep) -> Limiter:
        return self.limiters[self._limiter_of[step.rule]]

    def _rule_of(self, step: HttpStep) -> str:
        """The name of the rule a step matched."""
        return self._names[step.rule]

    def _failed(self, step: HttpStep, error: Error) -> Outcome:
        log.warning(
            "polylimit: the check of rule %r failed (%s: %s); on_error=%r",
            self._rule_of(step),
            getattr(error, "code", None),
            error,
            self.on_error,
        )
        status, body, headers = self._core.answer(step, None)
        return self._outcome(step, status, body, headers, None, error)

    def check(self, request: RequestView) -> Outcome:
        """Decides a request: the core's step, the check on the rule's
        limiter (blocking), the core's answer."""
        step = self._prepare(request)
        if step.action == _core.HTTP_RESPOND:
            return self._responded(step)
        if step.action != _core.HTTP_CHECK:
            return _PASS if step.rule < 0 else self._outcome(step, 0, "", [], None, None)
        try:
            decision = self._limiter(step).check(step.key, step.cost)
        except Error as e:
            return self._failed(step, e)
        return self.answer(step, decision)

    async def acheck(self, request: RequestView) -> Outcome:
        """:meth:`check` for asyncio: the check is ``Limiter.acheck`` (the
        event loop is never blocked)."""
        step = self._prepare(request)
        if step.action == _core.HTTP_RESPOND:
            return self._responded(step)
        if step.action != _core.HTTP_CHECK:
            return _PASS if step.rule < 0 else self._outcome(step, 0, "", [], None, None)
        try:
            decision = await self._limiter(step).acheck(step.key, step.cost)
        except Error as e:
            return self._failed(step, e)
        return self.answer(step, decision)

    def _refund_due(self, outcome: Outcome, status: int) -> bool:
        step, decision = outcome.step, outcome.decision
        if step is None or decision is None or step.action != _core.HTTP_CHECK:
            return False
        return self._core.refund_due(step, decision, status)

    def counts(self, rule: str, status: int) -> bool:
        """Whether a response with ``status`` of the rule named ``rule``
        keeps its units (its ``count_when``)."""
        return self._core.counts(self._names.index(rule), status)

    def settle(self, outcome: Outcome, status: int) -> bool:
        """After the response: gives the units of an admitted request back
        when its rule's ``count_when`` does not count the response's
        ``status`` (the core says). Returns whether it refunded. A failed
        refund is logged, never raised (the response is already made)."""
        if not self._refund_due(outcome, status):
            return False
        assert outcome.step is not None
        step = outcome.step
        try:
            self._limiter(step).refund(step.key, step.cost)
        except Error as e:
            log.warning("polylimit: the refund of rule %r failed (%s: %s)", self._rule_of(step), e.code, e)
            return False
        return True

    async def asettle(self, outcome: Outcome, status: int) -> bool:
        """:meth:`settle` for asyncio."""
        if not self._refund_due(outcome, status):
            return False
        assert outcome.step is not None
        step = outcome.step
        try:
            await self._limiter(step).arefund(step.key, step.cost)
        except Error as e:
            log.warning("polylimit: the refund of rule %r failed (%s: %s)", self._rule_of(step), e.code, e)
            return False
        return True


def _compositions(rule: Any) -> List[Any]:
    if not isinstance(rule, Mapping):
        return []
    key = rule.get("key", "ip")
    return list(key) if isinstance(key, list) else [key]


def _native(get: Callable[[Any], Optional[Any]]) -> Hook:
    """A user(get=...) / tenant(get=...) function of the framework's request
    as a hook of the RequestView."""

    def hook(request: RequestView) -> Optional[Any]:
        return get(request.native)

    return hook


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

_KEYS: Dict[str, Callable[[], Key]] = {
    "ip": client_ip,
    "user": user,
    "tenant": tenant,
    "api_key": api_key,
    "route": route,
}


def _key_part_from_config(name: str) -> Optional[Key]:
    if name in _KEYS:
        return _KEYS[name]()
    kind, _, arg = name.partition(":")
    if arg and kind == "api_key":
        return api_key(arg)
    if arg and kind == "header":
        return header(arg)
    return None


def _key_from_config(value: Any) -> KeyFunc:
    """A key from configuration: the contract's key text (``"ip"``,
    ``"user"``, ``"tenant"``, ``"api_key"``, ``"api_key:<Header>"``,
    ``"header:<Header>"``, ``"route"``, several joined with ``"+"``, e.g.
    ``"user+route"``), a list of such alternatives, a dotted path to a key
    function (``"myapp.keys.tenant"``), or a callable."""
    if callable(value):
        return value  # type: ignore[no-any-return]
    if isinstance(value, (list, tuple)):
        return first_of(*[_key_from_config(v) for v in value])
    if not isinstance(value, str):
        raise TypeError("a key must be a name, a dotted path or a callable, not %s" % type(value).__name__)
    parts = [_key_part_from_config(n) for n in value.split("+")]
    if all(p is not None for p in parts):
        found_parts = [p for p in parts if p is not None]
        return found_parts[0] if len(found_parts) == 1 else compose(*found_parts)
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
    unknown = (
        set(value) - {"rate", "key", "cost", "methods", "on_missing_key", "count_when", "name"} - set(_LIMITER_OPTIONS)
    )
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
        name=value.get("name"),
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

    or, instead of DEFAULT/ROUTES/EXEMPT/TRUSTED_PROXIES/HEADERS/ON_ERROR,
    the contract's document itself with the rate specs of its limiters::

        {"DOCUMENT": {"rules": [...], ...}, "LIMITERS": ["5/minute", {"rate": "100/hour", "prefix": "api"}]}

    A limit's options: ``rate`` (a rate spec), ``key`` (``"ip"`` (default),
    ``"user"``, ``"tenant"``, ``"api_key"``, ``"api_key:<Header>"``,
    ``"header:<Header>"``, ``"route"``, several joined with ``+``, a list of
    alternatives, or a dotted path to a function), ``cost``, ``methods``,
    ``on_missing_key`` (``"reject"``, the default, or ``"skip"``),
    ``count_when`` (``"failures"``: only responses with a status >= 400
    count; a dotted path or a callable of the status), ``name`` and the
    limiter options of ``Client.limiter`` (``algorithm``, ``on_failure``,
    ...)."""
    known = {
        "URL",
        "CLIENT",
        "PREFIX",
        "DEFAULT",
        "ROUTES",
        "EXEMPT",
        "TRUSTED_PROXIES",
        "HEADERS",
        "ON_ERROR",
        "DOCUMENT",
        "LIMITERS",
    }
    unknown = set(config) - known
    if unknown:
        raise ValueError(
            "POLYLIMIT: unknown setting(s) %s; known: %s" % (", ".join(sorted(unknown)), ", ".join(sorted(known)))
        )
    if client is None:
        client = Client(config.get("URL"), **dict(config.get("CLIENT") or {}))
    prefix = config.get("PREFIX", "pl")
    if "DOCUMENT" in config:
        both = {"DEFAULT", "ROUTES", "EXEMPT", "TRUSTED_PROXIES", "HEADERS", "ON_ERROR"} & set(config)
        if both:
            raise ValueError("POLYLIMIT: DOCUMENT replaces %s: give one or the other" % ", ".join(sorted(both)))
        made = []
        for i, spec in enumerate(config.get("LIMITERS") or ()):
            options = {"rate": spec} if isinstance(spec, str) else dict(spec)
            rate = options.pop("rate")
            options.setdefault("prefix", "%s:%d" % (prefix, i))
            made.append(client.limiter(rate, **options))
        return Policy.from_document(config["DOCUMENT"], made), client
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
