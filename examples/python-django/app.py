"""polylimit in a Django project (one file): the settings-driven middleware.

Run: POLYLIMIT_URL=redis://127.0.0.1:6379 python app.py 8000 (waitress; see
README.md), or serve ``app:application`` with any WSGI server. Settings come from the environment:

- POLYLIMIT_URL: the Redis URL (required; memory:// for no server);
- EXAMPLE_PREFIX: the limiters' key prefix (default "example");
- EXAMPLE_TRUSTED_PROXIES: comma-separated proxies whose X-Forwarded-For is
  believed (default: none).
"""

import os

import django
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path

settings.configure(
    DEBUG=False,
    ALLOWED_HOSTS=["*"],
    ROOT_URLCONF=__name__,
    SECRET_KEY="example-only-not-secret",
    MIDDLEWARE=["polylimit.contrib.django.RateLimitMiddleware"],
    POLYLIMIT={
        "URL": None,  # from $POLYLIMIT_URL
        "CLIENT": {"name": "django"},
        "PREFIX": os.environ.get("EXAMPLE_PREFIX", "example"),
        "DEFAULT": "10/minute",  # every route, per client IP
        "ROUTES": {"/login": {"rate": "3/minute", "methods": ["POST"]}},
        "EXEMPT": ["/health"],
        "TRUSTED_PROXIES": [p for p in os.environ.get("EXAMPLE_TRUSTED_PROXIES", "").split(",") if p],
    },
)
django.setup()


def index(request: HttpRequest) -> HttpResponse:
    return JsonResponse({"hello": "world"})


def login(request: HttpRequest) -> HttpResponse:
    return JsonResponse({"logged_in": request.method == "POST"})


def health(request: HttpRequest) -> HttpResponse:
    return JsonResponse({"ok": True})


urlpatterns = [path("", index), path("login", login), path("health", health)]

from django.core.wsgi import get_wsgi_application  # noqa: E402  (after settings)

application = get_wsgi_application()


if __name__ == "__main__":
    # python app.py [port]: served by waitress. waitress drops X-Forwarded-*
    # headers from peers it does not trust itself; here the middleware
    # decides whom to trust (POLYLIMIT["TRUSTED_PROXIES"]), so they are kept.
    import sys

    import waitress

    waitress.serve(
        application,
        host="127.0.0.1",
        port=int(sys.argv[1]) if len(sys.argv) > 1 else 8000,
        clear_untrusted_proxy_headers=False,
    )
