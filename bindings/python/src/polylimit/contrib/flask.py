"""A Flask extension::

    from flask import Flask
    from polylimit.contrib.flask import FlaskRateLimit
    from polylimit.contrib.http import Limit, Policy

    app = Flask(__name__)
    client = polylimit.Client("redis://127.0.0.1:6379", name="web")
    rl = FlaskRateLimit(app, Policy(Limit(client.limiter("100/minute", prefix="web")),
                                    exempt=["/health"], trusted_proxies=["10.0.0.0/8"]))

    @app.post("/login")
    @rl.limit(client.limiter("5/minute", prefix="login"))      # this route's own limit
    def login(): ...

    @app.get("/ping")
    @rl.exempt                                                 # never limited
    def ping(): ...

    rl = FlaskRateLimit(app, policy, client=client)            # to give rates as specs:
    @app.get("/report")
    @rl.limit("5/minute", key=api_key())                       # a limiter of its own, made once
    def report(): ...

    @app.post("/login")
    @rl.limit("5/minute", count_when=count_failures)           # only failed logins count
    def login(): ...

Or ``FlaskRateLimit(app)`` with ``app.config["POLYLIMIT"]`` holding the
same dict as Django's settings (:func:`polylimit.contrib.http.policy_from_config`).
Every request is checked in ``before_request``: a denial answers ``429 Too
Many Requests`` (text/plain) with the core's headers, a request without a
key 400 (401 for a credential) unless its limit says
``on_missing_key="skip"``; an allowed response
gets the same headers in ``after_request``. The decision is in
``flask.g.polylimit``. The user key reads ``flask.g.user_id`` when the app
sets it, else the HTTP Basic user name (``request.authorization``).

A rate spec in ``@rl.limit("5/minute")`` makes a limiter for that view
alone (prefix ``<PREFIX>:view:<module.qualname>:<spec>``, see
:class:`polylimit.contrib.http.RateLimiters`): made when the decorator runs
if the extension has its client by then (``client=``, or
``app.config["POLYLIMIT"]`` read by ``init_app``), else on the view's first
request, and kept. Two views with the same rate count apart unless given
the same ``prefix``. ``count_when`` limits are settled in
``after_request`` with the response's status (an unhandled exception is a
500 there).
"""

import threading
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple, TypeVar, Union

import flask

from .._client import Client, Limiter
from .._vocabulary import AlgorithmName, FailurePolicyName
from .http import (
    Cost,
    CountWhen,
    KeyFunc,
    Limit,
    Outcome,
    Policy,
    RateLimiters,
    RequestView,
    _check_on_missing_key,
    policy_from_config,
    view_name,
)

__all__ = ["FlaskRateLimit"]

F = TypeVar("F", bound=Callable[..., Any])
_ATTR = "_polylimit_rule"
_EXEMPT = object()


def _flask_user() -> Optional[str]:
    uid = flask.g.get("user_id")
    if uid is not None:
        return str(uid)
    auth = flask.request.authorization
    return auth.username if auth is not None and auth.username else None


class _SpecRule:
    """A view's limit given as a rate spec, until its limiter is made."""

    __slots__ = ("spec", "prefix", "view", "algorithm", "on_failure", "key", "options")

    def __init__(
        self,
        spec: str,
        prefix: Optional[str],
        view: str,
        algorithm: Optional[AlgorithmName],
        on_failure: Optional[FailurePolicyName],
        key: Optional[KeyFunc],
        options: Dict[str, Any],
    ) -> None:
        self.spec, self.prefix, self.view, self.algorithm, self.on_failure = spec, prefix, view, algorithm, on_failure
        self.key, self.options = key, options


class FlaskRateLimit:
    """Applies a :class:`polylimit.contrib.http.Policy` to a Flask app.
    ``client``: the client of the limits given as rate specs, and of
    ``app.config["POLYLIMIT"]``'s rules (which then has no ``URL`` or
    ``CLIENT``); without it, the one made from that config."""

    def __init__(
        self, app: Optional[flask.Flask] = None, policy: Optional[Policy] = None, *, client: Optional[Client] = None
    ) -> None:
        self.policy = policy
        # Given, or made from app.config["POLYLIMIT"] (closed with the app's process).
        self.client: Optional[Client] = client
        self._limiters = RateLimiters(client)
        self._lock = threading.Lock()
        self._resolved: Dict[_SpecRule, Limit] = {}
        # Each view's own limit as a policy of its own (the app's settings, that rule).
        self._derived: Dict[int, Policy] = {}
        if app is not None:
            self.init_app(app)

    def init_app(self, app: flask.Flask) -> None:
        if self.policy is None:
            config = app.config.get("POLYLIMIT")
            if config is None:
                raise RuntimeError("FlaskRateLimit needs a Policy or app.config['POLYLIMIT']")
            if self.client is not None and ("URL" in config or "CLIENT" in config):
                # Either would be ignored: the given client is the one used.
                raise ValueError("FlaskRateLimit: give client= or POLYLIMIT's URL/CLIENT settings, not both")
            self.policy, self.client = policy_from_config(config, self.client)
            self._limiters.base = config.get("PREFIX", "pl")
        self._limiters.client = self.client
        app.extensions["polylimit"] = self
        app.before_request(self._before)
        app.after_request(self._after)

    # -- decorators -------------------------------------------------------------
    def limit(
        self,
        limiter: Union[Limiter, str],
        key: Optional[KeyFunc] = None,
        *,
        cost: Cost = 1,
        methods: Optional[Iterable[str]] = None,
        on_missing_key: str = "reject",
        count_when: Optional[CountWhen] = None,
        prefix: Optional[str] = None,
        algorithm: Optional[AlgorithmName] = None,
        on_failure: Optional[FailurePolicyName] = None,
    ) -> Callable[[F], F]:
        """This view's own limit, instead of the policy's rule for its path
        (``on_missing_key``, ``count_when``: see
        :class:`polylimit.contrib.http.Limit`). ``limiter`` may be a rate
        spec (``"5/minute"``): a limiter for this view alone, unless views
        share a ``prefix``; ``algorithm`` and ``on_failure`` are its options."""
        options: Dict[str, Any] = dict(cost=cost, methods=methods, on_missing_key=on_missing_key, count_when=count_when)
        if not isinstance(limiter, str):
            if prefix is not None or algorithm is not None or on_failure is not None:
                raise TypeError("prefix, algorithm and on_failure go with a rate spec, not a Limiter")
            rule = Limit(limiter, key, **options)

            def decorate(fn: F) -> F:
                setattr(fn, _ATTR, rule)
                return fn

            return decorate
        spec = limiter
        _check_on_missing_key(on_missing_key)

        def decorate_spec(fn: F) -> F:
            pending = _SpecRule(spec, prefix, view_name(fn), algorithm, on_failure, key, options)
            setattr(fn, _ATTR, pending)
            if self._limiters.client is not None:
                self._resolve(pending)  # now: a bad spec fails where the view is declared
            return fn

        return decorate_spec

    def _resolve(self, pending: _SpecRule) -> Limit:
        """The Limit of a view's rate spec, made once."""
        with self._lock:
            found = self._resolved.get(pending)
            if found is None:
                # The base prefix is known only once init_app read the config.
                prefix = pending.prefix or self._limiters.prefix_for(pending.view, pending.spec)
                lim = self._limiters.get(pending.spec, prefix, pending.algorithm, pending.on_failure)
                found = Limit(lim, pending.key, **pending.options)
                self._resolved[pending] = found
            return found

    def exempt(self, fn: F) -> F:
        """This view is never limited."""
        setattr(fn, _ATTR, _EXEMPT)
        return fn

    def policies(self) -> List[Policy]:
        """The app's policy and those of the views with a limit of their own
        (for :class:`polylimit.contrib.prometheus.PolylimitCollector`)."""
        with self._lock:
            derived = list(self._derived.values())
        return ([self.policy] if self.policy is not None else []) + derived

    def _policy_of(self, policy: Policy, limit: Limit, route: str) -> Policy:
        """The policy of a view's own limit, made once; its rule is named
        after the view's route (as Policy names its routes' rules)."""
        with self._lock:
            found = self._derived.get(id(limit))
            if found is None:
                found = policy.derive(limit, name=route.lstrip("/") or "root")
                self._derived[id(limit)] = found
            return found

    # -- hooks ----------------------------------------------------------------
    def _view(self, policy: Policy) -> RequestView:
        req = flask.request
        headers: Dict[str, str] = {}
        for name, value in req.headers.items():
            name = name.lower()
            headers[name] = headers[name] + ", " + value if name in headers else value
        route = req.url_rule.rule if req.url_rule is not None else None
        return RequestView(req.method, req.path, req.remote_addr, headers, native=req, route=route, user=_flask_user)

    def _before(self) -> Optional[flask.Response]:
        policy = self.policy
        assert policy is not None
        endpoint = flask.request.endpoint or ""
        view_fn = flask.current_app.view_functions.get(endpoint)
        marked = getattr(view_fn, _ATTR, None)
        if marked is _EXEMPT:
            return None
        if isinstance(marked, _SpecRule):
            marked = self._resolve(marked)
        if isinstance(marked, Limit):
            rule = flask.request.url_rule
            policy = self._policy_of(policy, marked, rule.rule if rule is not None else endpoint)
        outcome = policy.check(self._view(policy))
        flask.g.polylimit = outcome.decision
        if outcome.decision is not None:
            flask.g._polylimit_outcome = (policy, outcome)
        if outcome.status is not None:
            return flask.Response(outcome.body, status=outcome.status, headers=outcome.headers)
        flask.g._polylimit_headers = outcome.headers
        return None

    def _after(self, response: flask.Response) -> flask.Response:
        for name, value in flask.g.pop("_polylimit_headers", None) or ():
            response.headers[name] = value
        pending: Optional[Tuple[Policy, Outcome]] = flask.g.pop("_polylimit_outcome", None)
        if pending is not None:
            pending[0].settle(pending[1], response.status_code)
        return response
