"""The Django middleware, configured in settings: python app.py PORT (waitress)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import django  # noqa: E402
from common import PREFIX, RATE, login_ok, user_key  # noqa: E402
from django.conf import settings  # noqa: E402
from django.http import HttpRequest, HttpResponse  # noqa: E402
from django.urls import path  # noqa: E402

settings.configure(
    DEBUG=False,
    ALLOWED_HOSTS=["*"],
    ROOT_URLCONF=__name__,
    SECRET_KEY="test-only-not-secret",
    MIDDLEWARE=["polylimit.contrib.django.RateLimitMiddleware"],
    POLYLIMIT={
        "URL": None,  # from $POLYLIMIT_URL
        "CLIENT": {"name": "django"},
        "PREFIX": PREFIX,
        "ROUTES": {"/login": {"rate": RATE, "key": user_key, "count_when": "failures"}},
        "EXEMPT": ["/health"],
    },
)
django.setup()


def login(request: HttpRequest) -> HttpResponse:
    if not login_ok(request.META.get("QUERY_STRING", "")):
        return HttpResponse("wrong password\n", status=401, content_type="text/plain")
    return HttpResponse("ok\n", content_type="text/plain")


def ok(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok\n", content_type="text/plain")


urlpatterns = [path("login", login), path("health", ok)]

from django.core.wsgi import get_wsgi_application  # noqa: E402  (after settings)

application = get_wsgi_application()

if __name__ == "__main__":
    import waitress

    waitress.serve(application, host="127.0.0.1", port=int(sys.argv[1]))
