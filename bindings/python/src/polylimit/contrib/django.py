"""A Django middleware configured in settings::

    MIDDLEWARE = [
        ...,
        "django.contrib.auth.middleware.AuthenticationMiddleware",   # before it, for the "user" key
        "polylimit.contrib.django.RateLimitMiddleware",
        ...,
    ]
    POLYLIMIT = {
        "URL": "redis://127.0.0.1:6379",          # None or absent: $POLYLIMIT_URL
        "CLIENT": {"name": "web", "command_timeout": 0.2},
        "DEFAULT": "100/minute",                  # every request, per client IP
        "ROUTES": {
            "/login": {"rate": "5/minute", "methods": ["POST"], "count_when": "failures"},  # failed logins
            "/api/*": {"rate": "1000/hour", "key": "api_key", "on_failure": "local"},  # no key: 401
        },
        "EXEMPT": ["/health"],
        "TRUSTED_PROXIES": ["10.0.0.0/8"],
        "HEADERS": True,
        "ON_ERROR": "unavailable",                # or "allow"
    }

The settings are read once, when Django makes the middleware (see
:func:`polylimit.contrib.http.policy_from_config` for every option). A
denial answers ``429 Too Many Requests`` (text/plain) with the core's
headers, a request without a key 400 (401 for a credential: ``"api_key"``,
``"user"``) unless its rule says ``"on_missing_key": "skip"``; allowed
responses get the same headers. The decision is in ``request.polylimit``. The user key is ``request.user.pk`` of an
authenticated user; the route key uses the URL pattern when the path
resolves. A rule with ``"count_when"`` counts only the responses whose
status matches (``"failures"``: 400 and above, a function of the status,
or a dotted path to one): the others get their units back after the view
(see :class:`polylimit.contrib.http.Limit`).

Django is imported when the middleware is made (this module imports without
it); no Django stubs are needed to type-check an app that uses it.
"""

import importlib
from typing import Any, Callable, Dict, Optional

from .http import Outcome, Policy, RequestView, policy_from_config

__all__ = ["RateLimitMiddleware"]


def _user(request: Any) -> Optional[str]:
    u = getattr(request, "user", None)
    if u is None or not getattr(u, "is_authenticated", False):
        return None
    return str(u.pk)


class RateLimitMiddleware:
    """Applies ``settings.POLYLIMIT`` to every request (sync; Django runs it
    under ASGI too, in a thread)."""

    def __init__(self, get_response: Callable[[Any], Any], policy: Optional[Policy] = None) -> None:
        self.get_response = get_response
        self._http = importlib.import_module("django.http")
        self._urls = importlib.import_module("django.urls")
        self.client = None
        if policy is None:
            settings = importlib.import_module("django.conf").settings
            config = getattr(settings, "POLYLIMIT", None)
            if config is None:
                raise importlib.import_module("django.core.exceptions").ImproperlyConfigured(
                    "polylimit.contrib.django.RateLimitMiddleware needs settings.POLYLIMIT"
                )
            policy, self.client = policy_from_config(config)
        self.policy = policy

    def _route(self, request: Any) -> Optional[str]:
        try:
            match = self._urls.resolve(request.path_info)
        except Exception:  # Resolver404: no route
            return None
        route = getattr(match, "route", None)
        return "/" + str(route) if route is not None else None

    def _view(self, request: Any) -> RequestView:
        headers: Dict[str, str] = {}
        for name, value in request.headers.items():
            headers[name.lower()] = value
        return RequestView(
            request.method or "GET",
            request.path,
            request.META.get("REMOTE_ADDR"),
            headers,
            native=request,
            route=self._route(request) if self.policy.needs_route else None,
            user=lambda: _user(request),
        )

    def __call__(self, request: Any) -> Any:
        outcome: Outcome = self.policy.check(self._view(request))
        request.polylimit = outcome.decision
        if outcome.status is not None:
            response = self._http.HttpResponse(outcome.body, status=outcome.status)
        else:
            response = self.get_response(request)
            # A rule with "count_when": the units back when the status does not count.
            self.policy.settle(outcome, response.status_code)
        for name, value in outcome.headers:
            response[name] = value
        return response
