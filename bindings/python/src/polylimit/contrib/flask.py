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

Or ``FlaskRateLimit(app)`` with ``app.config["POLYLIMIT"]`` holding the
same dict as Django's settings (:func:`polylimit.contrib.http.policy_from_config`).
Every request is checked in ``before_request``: a denial answers ``429 Too
Many Requests`` (text/plain) with the core's headers, a request without a
key 400 (401 for a credential) unless its limit says
``on_missing_key="skip"``; an allowed response
gets the same headers in ``after_request``. The decision is in
``flask.g.polylimit``. The user key reads ``flask.g.user_id`` when the app
sets it, else the HTTP Basic user name (``request.authorization``).
"""

from typing import Any, Callable, Dict, Iterable, Optional, TypeVar

import flask

from .._client import Client, Limiter
from .http import KeyFunc, Limit, Policy, RequestView, policy_from_config

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


class FlaskRateLimit:
    """Applies a :class:`polylimit.contrib.http.Policy` to a Flask app."""

    def __init__(self, app: Optional[flask.Flask] = None, policy: Optional[Policy] = None) -> None:
        self.policy = policy
        self.client: Optional[Client] = None  # made from app.config["POLYLIMIT"] (closed with the app's process)
        if app is not None:
            self.init_app(app)

    def init_app(self, app: flask.Flask) -> None:
        if self.policy is None:
            config = app.config.get("POLYLIMIT")
            if config is None:
                raise RuntimeError("FlaskRateLimit needs a Policy or app.config['POLYLIMIT']")
            self.policy, self.client = policy_from_config(config)
        app.extensions["polylimit"] = self
        app.before_request(self._before)
        app.after_request(self._after)

    # -- decorators -------------------------------------------------------------
    def limit(self, limiter: Limiter, key: Optional[KeyFunc] = None, *, cost: int = 1,
              methods: Optional[Iterable[str]] = None, on_missing_key: str = "reject") -> Callable[[F], F]:
        """This view's own limit, instead of the policy's rule for its path
        (``on_missing_key``: see :class:`polylimit.contrib.http.Limit`)."""
        rule = Limit(limiter, key, cost=cost, methods=methods, on_missing_key=on_missing_key)

        def decorate(fn: F) -> F:
            setattr(fn, _ATTR, rule)
            return fn
        return decorate

    def exempt(self, fn: F) -> F:
        """This view is never limited."""
        setattr(fn, _ATTR, _EXEMPT)
        return fn

    # -- hooks ----------------------------------------------------------------
    def _view(self, policy: Policy) -> RequestView:
        req = flask.request
        headers: Dict[str, str] = {}
        for name, value in req.headers.items():
            name = name.lower()
            headers[name] = headers[name] + ", " + value if name in headers else value
        route = req.url_rule.rule if req.url_rule is not None else None
        return RequestView(req.method, req.path, req.remote_addr, headers, native=req, route=route,
                           user=_flask_user, trusted=policy.trusted)

    def _before(self) -> Optional[flask.Response]:
        policy = self.policy
        assert policy is not None
        view_fn = flask.current_app.view_functions.get(flask.request.endpoint or "")
        marked = getattr(view_fn, _ATTR, None)
        view = self._view(policy)
        if marked is _EXEMPT:
            return None
        if isinstance(marked, Limit):
            rule: Optional[Limit] = marked
            if marked.methods is not None and view.method not in marked.methods:
                rule = None
            outcome = policy.check(view, rule)
        else:
            outcome = policy.check(view)
        flask.g.polylimit = outcome.decision
        if outcome.status is not None:
            return flask.Response(outcome.body, status=outcome.status, headers=outcome.headers,
                                  mimetype="text/plain")
        flask.g._polylimit_headers = outcome.headers
        return None

    def _after(self, response: flask.Response) -> flask.Response:
        for name, value in flask.g.pop("_polylimit_headers", None) or ():
            response.headers[name] = value
        return response
