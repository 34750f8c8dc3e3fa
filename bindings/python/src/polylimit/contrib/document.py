"""The policy document in code: what a policy file can say, typed.

:class:`PolicyDocument` and its parts are dataclasses that make the same
structure as a TOML or JSON policy (docs/policy.md,
docs/integrations/contract.md); :meth:`PolicyDocument.to_dict` gives the
document, :meth:`PolicyDocument.to_json` its JSON text. Every place that takes
a document takes one (:class:`polylimit.contrib.live.LivePolicy`, its
``reload``, :meth:`polylimit.contrib.http.Policy.from_document`)::

    from polylimit.contrib.document import Lists, PolicyDocument, Rule

    doc = PolicyDocument(
        prefix="shop",
        trusted_proxies=["10.0.0.0/8"],
        plans={"free": {"api": "10/minute"}, "pro": {"api": "100/minute"}},
        default_plan="free",
        tenants={"acme": "pro"},
        deny=Lists(ips=["203.0.113.0/24"]),
        rules=[
            Rule("login", paths=["/login"], methods=["POST"], key="ip",
                 limit="5/minute", count_when="failures"),
            Rule("api", paths=["/api/*"], key="tenant", limit="plan"),
        ],
    )
    policy = LivePolicy(doc, client, tenant=lambda view: view.header("X-Tenant"))

Nothing here checks the values: the core reads the document and refuses
one with an error (:class:`polylimit.InvalidArgument`, naming the field),
as it does a file. A field left ``None`` (or an empty list or table) is not
written: the document's default applies.
"""

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Union

from .._vocabulary import AlgorithmName

__all__ = [
    "Algorithm",
    "CountWhen",
    "HeaderCost",
    "Key",
    "Lists",
    "PolicyDocument",
    "ResolverOptions",
    "Rule",
]

#: A rule's ``algorithm`` (with ``limit``): the core's algorithm names.
Algorithm = AlgorithmName
#: A rule's ``key``: one composition (``"user+route"``) or alternatives
#: (``["api_key", "ip"]``: the first whose parts are all present).
Key = Union[str, Sequence[str]]
#: A rule's ``count_when``: ``"all"``, ``"failures"``, ``"successes"``, or
#: statuses, classes and ranges (``[401, "5xx", "400-403"]``).
CountWhen = Union[str, Sequence[Union[int, str]]]


def _listed(values: Sequence[Any]) -> List[Any]:
    if isinstance(values, (str, bytes)):
        return [values]  # one glob, address, name...: a list of one
    return list(values)


def _put(out: Dict[str, Any], name: str, value: Any) -> None:
    """Writes ``value`` unless it is unset (None, an empty list or table)."""
    if value is None:
        return
    if isinstance(value, Mapping):
        if value:
            out[name] = {str(k): v for k, v in value.items()}
        return
    if isinstance(value, (list, tuple)):
        if value:
            out[name] = list(value)
        return
    out[name] = value


@dataclass
class Lists:
    """``allow`` / ``deny``: client addresses and networks, API keys
    (``sha256:<hex>`` or the key itself), user and tenant ids."""

    ips: Sequence[str] = ()
    api_keys: Sequence[str] = ()
    users: Sequence[str] = ()
    tenants: Sequence[str] = ()

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for name in ("ips", "api_keys", "users", "tenants"):
            _put(out, name, _listed(getattr(self, name)))
        return out


@dataclass
class HeaderCost:
    """A rule's ``cost`` read from a request header: a value that is not a
    whole number from 1 to ``max`` is answered 400; ``default`` when absent."""

    header: str
    default: Optional[int] = None
    max: Optional[int] = None

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"header": self.header}
        _put(out, "default", self.default)
        _put(out, "max", self.max)
        return out


@dataclass
class ResolverOptions:
    """The ``resolver`` table: the application's plan resolver places the
    tenants the document does not name (the live policy needs one)."""

    timeout_ms: Optional[int] = None
    cache_ttl_ms: Optional[int] = None
    cache_size: Optional[int] = None

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        _put(out, "timeout_ms", self.timeout_ms)
        _put(out, "cache_ttl_ms", self.cache_ttl_ms)
        _put(out, "cache_size", self.cache_size)
        return out


@dataclass
class Rule:
    """One rule (the first whose ``paths``/``routes`` and ``methods`` match
    decides). Its limit is ``limit`` (``"10/minute"``, ``"plan"``,
    ``"plan:<name>"``, ``"none"``) with ``algorithm``, or ``limiter``: the
    index of one of the application's limiters."""

    name: str
    paths: Sequence[str] = ()
    routes: Sequence[str] = ()
    methods: Sequence[str] = ()
    limit: Optional[str] = None
    algorithm: Optional[Algorithm] = None
    limiter: Optional[int] = None
    key: Optional[Key] = None
    credential: Optional[bool] = None
    cost: Union[None, int, HeaderCost] = None
    on_missing_key: Optional[Literal["reject", "skip"]] = None
    count_when: Optional[CountWhen] = None

    def to_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"name": self.name}
        _put(out, "paths", _listed(self.paths))
        _put(out, "routes", _listed(self.routes))
        _put(out, "methods", _listed(self.methods))
        _put(out, "limiter", self.limiter)
        _put(out, "limit", self.limit)
        _put(out, "algorithm", self.algorithm)
        if self.key is not None:
            out["key"] = self.key if isinstance(self.key, str) else list(self.key)
        _put(out, "credential", self.credential)
        if isinstance(self.cost, HeaderCost):
            out["cost"] = self.cost.to_dict()
        else:
            _put(out, "cost", self.cost)
        _put(out, "on_missing_key", self.on_missing_key)
        if self.count_when is not None:
            cw = self.count_when
            out["count_when"] = cw if isinstance(cw, str) else list(cw)
        return out


@dataclass
class PolicyDocument:
    """A whole policy document: the fields of a policy file, by the same
    names. ``plans``: plan -> {limit name -> rate spec}; ``tenants``:
    tenant id -> plan."""

    rules: Sequence[Rule] = ()
    version: int = 1
    prefix: Optional[str] = None
    trusted_proxies: Sequence[str] = ()
    ipv4_prefix: Optional[int] = None
    ipv6_prefix: Optional[int] = None
    api_key_header: Optional[str] = None
    exempt: Sequence[str] = ()
    allow: Optional[Lists] = None
    deny: Optional[Lists] = None
    send_headers: Optional[bool] = None
    on_error: Optional[Literal["unavailable", "allow"]] = None
    plans: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    default_plan: Optional[str] = None
    tenants: Mapping[str, str] = field(default_factory=dict)
    resolver: Optional[ResolverOptions] = None

    def to_dict(self) -> Dict[str, Any]:
        """The document as a dict (what ``json.dumps`` makes a JSON policy of)."""
        out: Dict[str, Any] = {"version": self.version}
        _put(out, "prefix", self.prefix)
        _put(out, "trusted_proxies", _listed(self.trusted_proxies))
        _put(out, "ipv4_prefix", self.ipv4_prefix)
        _put(out, "ipv6_prefix", self.ipv6_prefix)
        _put(out, "api_key_header", self.api_key_header)
        _put(out, "exempt", _listed(self.exempt))
        if self.allow is not None:
            out["allow"] = self.allow.to_dict()
        if self.deny is not None:
            out["deny"] = self.deny.to_dict()
        _put(out, "send_headers", self.send_headers)
        _put(out, "on_error", self.on_error)
        if self.plans:
            out["plans"] = {str(p): dict(limits) for p, limits in self.plans.items()}
        _put(out, "default_plan", self.default_plan)
        _put(out, "tenants", self.tenants)
        if self.resolver is not None:
            out["resolver"] = self.resolver.to_dict()
        out["rules"] = [r.to_dict() for r in self.rules]
        return out

    def to_json(self) -> str:
        """The document's JSON text, as the core reads it."""
        return json.dumps(self.to_dict(), indent=2)
