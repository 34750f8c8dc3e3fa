"""The Flask extension: flask --app app run."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import polylimit  # noqa: E402
from common import PREFIX, RATE, login_ok, user_key  # noqa: E402
from flask import Flask, request  # noqa: E402
from polylimit.contrib.flask import FlaskRateLimit  # noqa: E402
from polylimit.contrib.http import Policy, api_key, count_failures  # noqa: E402

client = polylimit.Client(name="flask")
app = Flask(__name__)
rl = FlaskRateLimit(app, Policy(None, exempt=["/health"]), client=client)


@app.get("/login")
@rl.limit(RATE, user_key, prefix=PREFIX + ":login", count_when=count_failures)
def login() -> "tuple[str, int]":
    if not login_ok(request.query_string.decode()):
        return "wrong password\n", 401
    return "ok\n", 200


@app.get("/spec-a")
@rl.limit(RATE, api_key("X-API-Key"))
def spec_a() -> str:
    return "ok\n"


@app.get("/spec-b")
@rl.limit(RATE, api_key("X-API-Key"))
def spec_b() -> str:
    return "ok\n"


@app.get("/shared-1")
@rl.limit(RATE, user_key, prefix=PREFIX + ":shared")
def shared_1() -> str:
    return "ok\n"


@app.get("/shared-2")
@rl.limit(RATE, user_key, prefix=PREFIX + ":shared")
def shared_2() -> str:
    return "ok\n"


@app.get("/health")
def health() -> str:
    return "ok\n"
