"""The policy document in code (polylimit.contrib.document): the builder
makes the same policy as docs/examples/policy.toml, every field reaches the
core, and the core is the one that refuses a wrong document."""

import json
import os

import polylimit
import pytest
from polylimit.contrib.document import HeaderCost, Lists, PolicyDocument, ResolverOptions, Rule
from polylimit.contrib.http import Policy, RequestView
from polylimit.contrib.live import LivePolicy

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLE = os.path.join(ROOT, "docs", "examples", "policy.toml")
PLAN_ENTERPRISE = '"api-1000-per-60s";q=1000;w=60, "api-50-per-1s";q=50;w=1'


def example() -> PolicyDocument:
    """docs/examples/policy.toml, in code."""
    return PolicyDocument(
        prefix="shop",
        trusted_proxies=["10.0.0.0/8"],
        default_plan="free",
        plans={
            "free": {"api": "10/minute", "search": "2/second"},
            "pro": {"api": "100/minute", "search": "10/second"},
            "enterprise": {"api": "1000/minute; 50/second", "search": "100/second"},
        },
        tenants={"acme": "pro", "initech": "enterprise"},
        deny=Lists(ips=["203.0.113.0/24"]),
        rules=[
            Rule("health", paths=["/healthz"], limit="none"),
            Rule("login", paths=["/login"], methods=["POST"], key="ip", limit="5/minute", count_when="failures"),
            Rule("search", paths=["/api/search*"], key="tenant", limit="plan", algorithm="gcra"),
            Rule("api", paths=["/api/*"], key="tenant", limit="plan"),
        ],
    )


def tenant(view):
    return view.header("X-Tenant")


def requests():
    """(what, RequestView): the requests both policies are asked."""
    out = []
    for t in ("acme", "initech", "globex", None):
        for path in ("/api/orders", "/api/search"):
            headers = {"x-tenant": t} if t else {}
            out.append(("%s %s" % (t, path), RequestView("GET", path, "192.0.2.1", headers)))
    xff = {"x-forwarded-for": "198.51.100.7"}
    out += [
        ("login", RequestView("POST", "/login", "10.0.0.1", xff)),
        ("login again", RequestView("POST", "/login", "10.0.0.1", xff)),
        ("login from the proxy", RequestView("POST", "/login", "10.0.0.1", {})),
        ("login GET", RequestView("GET", "/login", "10.0.0.1", xff)),
        ("healthz", RequestView("GET", "/healthz", "10.0.0.1", {"x-tenant": "acme"})),
        ("denied", RequestView("GET", "/api/orders", "10.0.0.1", {"x-forwarded-for": "203.0.113.9"})),
        ("denied peer", RequestView("GET", "/api/orders", "203.0.113.9", {"x-tenant": "acme"})),
    ]
    return out


def what_it_does(policy, view):
    """The step, the limit of the step's limiter (its plan's), and the answer.
    Not the limiter's index: the core numbers a document's limiters in the
    order it reads the plans, which TOML and JSON need not share."""
    step = policy.prepare(view)
    limit = None
    if step.action == polylimit._core.HTTP_CHECK:
        limit = policy._limiter(step).peek(step.key).limit
    outcome = policy.check(view)
    policy.settle(outcome, 200)
    return {
        "action": step.action,
        "status": step.status,
        "rule": policy.rule_name(step.rule) if step.rule >= 0 else None,
        "key": step.key,
        "cost": step.cost,
        "limit": limit,
        "answer": (outcome.status, outcome.body, outcome.headers, outcome.rule, outcome.key),
    }


def test_the_builder_makes_the_example_policy():
    with open(EXAMPLE) as f:
        text = f.read()
    file_client, code_client = polylimit.Client("memory://"), polylimit.Client("memory://")
    from_file = LivePolicy(text, file_client, tenant=tenant)
    from_code = LivePolicy(example(), code_client, tenant=tenant)
    assert from_code.rule_names() == from_file.rule_names() == ["health", "login", "search", "api"]
    actions = set()
    for what, view in requests():
        a, b = what_it_does(from_file, view), what_it_does(from_code, view)
        assert a == b, what
        actions.add(a["action"])
    # Each kind of answer was compared: checks (admitted, with headers), a
    # request that goes on unchecked, refusals (401 and the deny list's 403).
    assert actions == {polylimit._core.HTTP_CHECK, polylimit._core.HTTP_PROCEED, polylimit._core.HTTP_RESPOND}
    last = what_it_does(from_code, RequestView("GET", "/api/orders", "192.0.2.1", {"x-tenant": "initech"}))
    assert last["limit"] == 50 and last["key"] == "tenant:initech"  # 50/second binds first
    assert ("RateLimit-Policy", PLAN_ENTERPRISE) in last["answer"][2], last
    # The JSON the builder hands over is the document itself.
    assert json.loads(example().to_json()) == example().to_dict()
    file_client.close()
    code_client.close()


def test_a_document_with_an_error_is_refused_with_the_cores_message():
    client = polylimit.Client("memory://")
    broken = example()
    broken.rules[1].limit = "5/fortnight"
    with pytest.raises(polylimit.InvalidArgument, match=r'rules\[1\] \("login"\)\.limit'):
        LivePolicy(broken, client, tenant=tenant)
    live = LivePolicy(example(), client, tenant=tenant)
    with pytest.raises(polylimit.InvalidArgument, match=r'rules\[1\] \("login"\)\.limit') as raised:
        live.reload(broken)
    assert str(raised.value).startswith("policy line ")
    no_default = example()
    no_default.default_plan = "gold"
    with pytest.raises(polylimit.InvalidArgument, match="default_plan: must name one of the plans"):
        live.reload(no_default)
    assert live.generation == 1
    with pytest.raises(polylimit.InvalidArgument, match=r'rules\[0\] \("a"\)\.key: unknown key part "ipv7"'):
        Policy.from_document(PolicyDocument(rules=[Rule("a", key="ipv7", limiter=0)]), [client.limiter("1/s")])
    client.close()


def test_every_field_reaches_the_core():
    client = polylimit.Client("memory://")
    doc = PolicyDocument(
        version=1,
        prefix="every",
        trusted_proxies=["10.0.0.0/8", "::1"],
        ipv4_prefix=24,
        ipv6_prefix=56,
        api_key_header="X-Key",
        exempt=["/metrics"],
        allow=Lists(ips=["192.0.2.7"], users=["root"]),
        deny=Lists(ips=["203.0.113.0/24"], api_keys=["stolen"], users=["mallory"], tenants=["evil"]),
        send_headers=False,
        on_error="allow",
        plans={"free": {"api": "2/minute"}, "pro": {"api": "5/minute"}},
        default_plan="free",
        tenants={"acme": "pro"},
        resolver=ResolverOptions(timeout_ms=20, cache_ttl_ms=1000, cache_size=10),
        rules=[
            Rule(
                "upload",
                routes=["/upload/{id}"],
                methods=["PUT"],
                key=["api_key", "ip"],
                limit="100/minute",
                cost=HeaderCost("X-Cost", default=2, max=10),
                credential=True,
            ),
            Rule(
                "search",
                paths=["/search"],
                key="user+route",
                limit="3/second",
                algorithm="fixed_window",
                on_missing_key="skip",
                count_when=[401, "5xx", "400-403"],
                cost=2,
            ),
            Rule("api", paths=["/api/*"], key="tenant", limit="plan:api"),
        ],
    )
    assert doc.to_dict()["rules"][0] == {
        "name": "upload",
        "routes": ["/upload/{id}"],
        "methods": ["PUT"],
        "limit": "100/minute",
        "key": ["api_key", "ip"],
        "credential": True,
        "cost": {"header": "X-Cost", "default": 2, "max": 10},
    }
    live = LivePolicy(doc, client, resolver=lambda t: "pro", tenant=tenant)
    assert live.rule_names() == ["upload", "search", "api"]
    assert "x-cost" in live.header_names() and "x-key" in live.header_names()
    step = live.prepare(RequestView("PUT", "/x", "192.0.2.200", {"x-cost": "7"}, route="/upload/{id}"))
    assert (step.key, step.cost) == ("ip:192.0.2.0/24", 7)
    outcome = live.check(RequestView("GET", "/search", "192.0.2.9", {}))  # no user: skipped
    assert outcome.status is None and outcome.key is None
    assert live.check(RequestView("GET", "/api/x", "198.51.100.1", {}, user=lambda: "mallory")).status == 403
    assert live.counts("search", 502) and not live.counts("search", 200)
    client.close()
