"""polylimit in a Flask app: the FlaskRateLimit extension.

Run: POLYLIMIT_URL=redis://127.0.0.1:6379 flask --app app run --port 8000
(see README.md). Settings come from the environment:

- POLYLIMIT_URL: the Redis URL (required; memory:// for no server);
- EXAMPLE_PREFIX: the limiters' key prefix (default "example");
- EXAMPLE_TRUSTED_PROXIES: comma-separated proxies whose X-Forwarded-For is
  believed (default: none).
"""

import os

import polylimit
from flask import Flask, Response
from polylimit.contrib.flask import FlaskRateLimit
from polylimit.contrib.http import Limit, Policy, client_ip, first_of, user

prefix = os.environ.get("EXAMPLE_PREFIX", "example")
trusted = [p for p in os.environ.get("EXAMPLE_TRUSTED_PROXIES", "").split(",") if p]

client = polylimit.Client(name="flask")  # the URL comes from $POLYLIMIT_URL
per_ip = client.limiter("10/minute", prefix=prefix + ":default")
login = client.limiter("3/minute", prefix=prefix + ":login")
per_user = client.limiter("4/minute", prefix=prefix + ":user")

app = Flask(__name__)
rl = FlaskRateLimit(app, Policy(Limit(per_ip), exempt=["/metrics"], trusted_proxies=trusted))


@app.get("/")
def index() -> dict:
    return {"hello": "world"}


@app.post("/login")
@rl.limit(login)
def do_login() -> dict:
    return {"logged_in": True}


@app.get("/me")
@rl.limit(per_user, key=first_of(user(), client_ip()))  # HTTP Basic user, else the IP
def me() -> dict:
    return {"me": True}


@app.get("/health")
@rl.exempt
def health() -> dict:
    return {"ok": True}


@app.get("/metrics")
def metrics() -> Response:
    return Response(polylimit.prometheus_text(client), mimetype="text/plain")
