"""Code as a user writes it, type-checked by tests/python/run.sh with
mypy --strict against the installed wheel (not run by pytest): the types
that users see must be the precise ones."""

from typing import Dict, List, Optional, Union

import polylimit
from fastapi import Depends, FastAPI
from flask import Flask
from polylimit import Decision, Error
from polylimit.contrib.asgi import CountWhenMiddleware, RateLimitMiddleware
from polylimit.contrib.document import HeaderCost, Lists, PolicyDocument, ResolverOptions, Rule
from polylimit.contrib.fastapi import RateLimit
from polylimit.contrib.flask import FlaskRateLimit
from polylimit.contrib.http import (
    CountWhen,
    Limit,
    Outcome,
    Policy,
    RequestView,
    api_key,
    client_ip,
    count_failures,
    first_of,
    user,
)
from polylimit.contrib.live import LivePolicy
from polylimit.contrib.prometheus import PolylimitCollector
from prometheus_client import CollectorRegistry
from typing_extensions import assert_type


def checks(lim: polylimit.Limiter, keys: List[str], flag: bool) -> int:
    decisions = lim.check_many(keys)
    assert_type(decisions, List[Decision])
    mixed = lim.check_many(keys, return_exceptions=True)
    assert_type(mixed, List[Union[Decision, Error]])
    assert_type(lim.check_many(keys, return_exceptions=False), List[Decision])
    assert_type(lim.check_many(keys, 2, return_exceptions=flag), List[Union[Decision, Error]])
    admitted = 0
    for r in mixed:
        if isinstance(r, Error):
            index: Optional[int] = r.index
            assert index is not None
        else:
            admitted += r.granted
    headers = lim.headers(decisions[0])
    assert_type(headers, Dict[str, str])
    assert_type(decisions[0].headers(), Dict[str, str])
    return admitted


async def achecks(lim: polylimit.Limiter, keys: List[bytes]) -> None:
    assert_type(await lim.acheck_many(keys), List[Decision])
    assert_type(await lim.acheck_many(keys, return_exceptions=True), List[Union[Decision, Error]])


def setup() -> None:
    client = polylimit.Client(name="typed", command_timeout=0.2, tls_insecure=False)
    other = polylimit.Client("memory://", name="other")
    page: str = polylimit.prometheus_text(client, other)
    assert page
    per_ip = client.limiter("100/minute", prefix="typed")
    policy = Policy(
        Limit(per_ip, first_of(api_key(), user(), client_ip())), exempt=["/health"], trusted_proxies=["10.0.0.0/8"]
    )
    api = FastAPI()
    api.add_middleware(RateLimitMiddleware, policy=policy)

    @api.get("/search", dependencies=[Depends(RateLimit(per_ip, key=api_key()))])
    def search() -> Dict[str, str]:
        return {}

    web = Flask(__name__)
    rl = FlaskRateLimit(web, policy)

    @web.get("/ping")
    @rl.exempt
    def ping() -> str:
        return "pong"

    # Rate specs on routes and response-based counting.
    api.add_middleware(CountWhenMiddleware)

    @api.post(
        "/login",
        dependencies=[
            Depends(
                RateLimit("5/minute", client=client, count_when=count_failures, algorithm="gcra", on_failure="local")
            )
        ],
    )
    def api_login() -> Dict[str, str]:
        return {}

    route_limits = FlaskRateLimit(web, policy, client=client)

    @web.post("/login")
    @route_limits.limit("5/minute", api_key(), count_when=lambda status: status in (401, 403), prefix="web-login")
    def login() -> str:
        return "ok"

    teapot: CountWhen = lambda status: status == 418  # noqa: E731 (a lambda must fit the alias)
    outcome = policy.check(policy_view())
    assert_type(outcome, Outcome)
    refunded: bool = policy.settle(outcome, 200)
    assert refunded or not refunded
    Limit(per_ip, count_when=teapot)
    RateLimit("5/minute", client=client, algorithm="gcrax")  # type: ignore[arg-type]
    route_limits.limit("5/minute", count_when="failures")  # type: ignore[arg-type]

    registry = CollectorRegistry()
    registry.register(PolylimitCollector(client, other, policies=[policy]))

    # The contract's document, with the application's identities.
    doc = Policy.from_document(
        {"trusted_proxies": ["10.0.0.0/8"], "rules": [{"name": "all", "limiter": 0, "key": ["user", "ip"]}]},
        [per_ip],
        user=lambda view: view.header("X-User"),
        tenant=lambda view: None,
    )
    step = doc.prepare(policy_view(), cost=2)
    assert_type(doc.answer(step), Outcome)
    rules: str = doc.metrics_prometheus()
    assert rules


def policy_view() -> "RequestView":
    return RequestView("POST", "/login", "192.0.2.1", {})


def option_names(client: polylimit.Client) -> None:
    """Algorithm, clock and failure-policy names are Literal types: mypy
    rejects a misspelt one. Each ignore below must be needed (--strict warns
    about unused ones), so this fails if an option goes back to plain str."""
    lim = client.limiter("5/s", algorithm="gcra", clock="client", on_failure="local")
    assert_type(lim.algorithm, polylimit.AlgorithmName)
    assert_type(lim.clock, polylimit.ClockName)
    assert_type(lim.on_failure, polylimit.FailurePolicyName)
    client.limiter("5/s", algorithm="gcrax")  # type: ignore[arg-type]
    client.limiter("5/s", clock="wall")  # type: ignore[arg-type]
    client.limiter("5/s", on_failure="ignore")  # type: ignore[arg-type]


def policy_in_code(client: polylimit.Client) -> LivePolicy:
    doc = PolicyDocument(
        prefix="shop",
        plans={"free": {"api": "10/minute"}},
        default_plan="free",
        tenants={"acme": "free"},
        deny=Lists(ips=["203.0.113.0/24"]),
        resolver=ResolverOptions(timeout_ms=50),
        rules=[
            Rule(
                "login", paths=["/login"], methods=["POST"], limit="5/minute", algorithm="gcra", count_when="failures"
            ),
            Rule("upload", paths=["/upload"], key=["api_key", "ip"], limit="10/s", cost=HeaderCost("X-Cost", max=100)),
            Rule("api", paths=["/api/*"], key="tenant", limit="plan", count_when=[401, "5xx"], on_missing_key="skip"),
        ],
    )
    as_dict: Dict[str, object] = doc.to_dict()
    assert as_dict["rules"]
    assert_type(doc.to_json(), str)
    policy = LivePolicy(doc, client, resolver=lambda tenant: "free")
    policy.reload(doc)
    Policy.from_document(PolicyDocument(rules=[Rule("all", limiter=0)]), [client.limiter("1/s")])
    return policy
