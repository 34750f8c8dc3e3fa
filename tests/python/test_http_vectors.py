"""The HTTP contract's golden vectors (tests/http/vectors.json) through the
Python binding's public API: for every suite, its limiters (memory://, the
suite's rate specs) and its policy (Policy.from_document); for every case
the step (action, rule, key, cost), the answers to the given decisions or
failures (status, body, headers in order), count_when (`counts`), the
refunds, and the refusal of every invalid document with its message. The
same file is checked by every language's suite (tests/cpp/http_vectors_test.cpp
for C)."""

import json
import os

import polylimit
import pytest
from polylimit import _core
from polylimit.contrib.http import Policy, RequestView

VECTORS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "http", "vectors.json")

with open(VECTORS, encoding="utf-8") as f:
    DATA = json.load(f)

ACTIONS = {
    _core.HTTP_PROCEED: "proceed",
    _core.HTTP_CHECK: "check",
    _core.HTTP_RESPOND: "respond",
    _core.HTTP_NEED_APP_KEY: "need_app_key",
}


def _identity(name):
    """A hook that reads the case's identity (the view's native object is the case's request)."""
    return lambda view: view.native.get(name)


def _policy(suite):
    client = polylimit.Client("memory://")
    limiters = [client.limiter(spec) for spec in suite["limiters"]]
    policy = Policy.from_document(
        suite["policy"],
        limiters,
        user=_identity("user"),
        tenant=_identity("tenant"),
        app_key=_identity("app_key"),
    )
    return client, policy


def _view(request):
    headers = {k.lower(): v for k, v in (request.get("headers") or {}).items()}
    return RequestView(
        request["method"], request["path"], request.get("peer"), headers, native=request, route=request.get("route")
    )


def _step(policy, request):
    return policy.prepare(_view(request), app_key=request.get("app_key"), cost=request.get("cost"))


def _decision(d):
    return polylimit.Decision(
        allowed=d.get("allowed", False),
        shadowed=d.get("shadowed", False),
        degraded=d.get("degraded", False),
        limit=d.get("limit", 0),
        remaining=d.get("remaining", 0),
        retry_after_ms=d.get("retry_after_ms", 0),
        reset_after_ms=d.get("reset_after_ms", 0),
    )


def _expect_answer(outcome, want, where):
    assert (outcome.status or 0) == want["status"], where
    assert outcome.body == want["body"], where
    assert [list(h) for h in outcome.headers] == want["headers"], where


def _cases():
    for i, suite in enumerate(DATA["suites"]):
        for case in suite["cases"]:
            yield pytest.param(i, case, id="%s / %s" % (suite["name"], case["name"]))


@pytest.mark.parametrize("suite_index, case", list(_cases()))
def test_case(suite_index, case):
    client, policy = _policy(DATA["suites"][suite_index])
    try:
        step = _step(policy, case["request"])
        want = case["step"]
        assert ACTIONS[step.action] == want["action"]
        assert (policy.rule_name(step.rule) if step.rule >= 0 else "") == (want.get("rule") or "")
        if step.action == _core.HTTP_CHECK:
            assert step.key == want["key"]
            assert step.cost == want["cost"]
        if "answer" in want:
            _expect_answer(policy.answer(step), want["answer"], "respond")
        for a in case.get("answers") or ():
            d = a["decision"]
            _expect_answer(policy.answer(step, None if d is None else _decision(d)), a["answer"], "answer %r" % d)
        for status, counts in (case.get("counts") or {}).items():
            assert policy.refund_due(step, polylimit.Decision(allowed=True), int(status)) == (not counts), status
    finally:
        client.close()


def test_every_case_is_checked():
    assert sum(len(s["cases"]) for s in DATA["suites"]) >= 40


@pytest.mark.parametrize("refund", DATA["refunds"], ids=[r["name"] for r in DATA["refunds"]])
def test_refund(refund):
    suite = DATA["suites"][refund["suite"]]
    client, policy = _policy(suite)
    try:
        (request,) = [c["request"] for c in suite["cases"] if c["name"] == refund["case"]]
        step = _step(policy, request)
        assert policy.refund_due(step, _decision(refund["decision"]), refund["status"]) == refund["refund"]
    finally:
        client.close()


@pytest.mark.parametrize("invalid", DATA["invalid"], ids=[v["error"] for v in DATA["invalid"]])
def test_invalid_document(invalid):
    client = polylimit.Client("memory://")
    limiters = [client.limiter("5/minute"), client.limiter("10/second")]
    try:
        with pytest.raises(polylimit.InvalidArgument) as refused:
            Policy.from_document(invalid["document"], limiters)
        assert invalid["error"] in str(refused.value)
    finally:
        client.close()
