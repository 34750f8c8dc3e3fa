"""The Flask extension: flask --app app run."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import polylimit  # noqa: E402
from common import limiters, tenant  # noqa: E402
from flask import Flask  # noqa: E402
from polylimit.contrib.flask import FlaskRateLimit  # noqa: E402
from polylimit.contrib.http import Policy, api_key  # noqa: E402

client = polylimit.Client(name="flask")
lim = limiters(client)
app = Flask(__name__)
rl = FlaskRateLimit(app, Policy(None, exempt=["/health"]))


@app.get("/credential")
@rl.limit(lim["credential"], key=api_key("X-API-Key"))
def credential() -> str:
    return "ok\n"


@app.get("/tenant")
@rl.limit(lim["tenant"], key=tenant)
def by_tenant() -> str:
    return "ok\n"


@app.get("/skip")
@rl.limit(lim["skip"], key=api_key("X-API-Key"), on_missing_key="skip")
def skip() -> str:
    return "ok\n"


@app.get("/health")
def health() -> str:
    return "ok\n"
