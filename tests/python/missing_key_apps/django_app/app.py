"""The Django middleware, configured in settings: python app.py PORT (waitress)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import django  # noqa: E402
from common import PREFIX, RATE, tenant  # noqa: E402
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
        "ROUTES": {
            "/credential": {"rate": RATE, "key": "api_key"},
            "/tenant": {"rate": RATE, "key": tenant},
            "/skip": {"rate": RATE, "key": "api_key", "on_missing_key": "skip"},
        },
        "EXEMPT": ["/health"],
    },
)
django.setup()


def ok(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok\n", content_type="text/plain")


urlpatterns = [path("credential", ok), path("tenant", ok), path("skip", ok), path("health", ok)]

from django.core.wsgi import get_wsgi_application  # noqa: E402  (after settings)

application = get_wsgi_application()

if __name__ == "__main__":
    import waitress

    waitress.serve(application, host="127.0.0.1", port=int(sys.argv[1]))
