"""polylimit in a FastAPI app: the ASGI middleware for every route, a
FastAPI dependency for one route, and the metrics on /metrics.

Run: POLYLIMIT_URL=redis://127.0.0.1:6379 uvicorn app:app --port 8000
(see README.md). Settings come from the environment:

- POLYLIMIT_URL: the Redis URL (required; memory:// for no server);
- EXAMPLE_PREFIX: the limiters' key prefix (default "example");
- EXAMPLE_TRUSTED_PROXIES: comma-separated proxies whose X-Forwarded-For is
  believed (default: none).
"""

import os

import polylimit
from fastapi import Depends, FastAPI
from fastapi.responses import PlainTextResponse
from polylimit.contrib.asgi import RateLimitMiddleware
from polylimit.contrib.fastapi import RateLimit, RateLimitRefusal, refusal_handler
from polylimit.contrib.http import Limit, Policy, api_key

prefix = os.environ.get("EXAMPLE_PREFIX", "example")
trusted = [p for p in os.environ.get("EXAMPLE_TRUSTED_PROXIES", "").split(",") if p]

client = polylimit.Client(name="fastapi")  # the URL comes from $POLYLIMIT_URL
per_ip = client.limiter("10/minute", prefix=prefix + ":default")  # every route, per client IP
login = client.limiter("3/minute", prefix=prefix + ":login")  # a stricter one for /login
search = client.limiter("5/minute", prefix=prefix + ":search")  # per API key, as a dependency

policy = Policy(
    Limit(per_ip),
    routes={"/login": Limit(login)},
    exempt=["/health", "/metrics", "/search"],  # /search has its own dependency
    trusted_proxies=trusted,
)
app = FastAPI()
app.add_middleware(RateLimitMiddleware, policy=policy)
# The dependency's refusals as the contract's plain-text answers (without
# this handler FastAPI answers them with a JSON "detail").
app.add_exception_handler(RateLimitRefusal, refusal_handler)


@app.get("/")
def index() -> dict:
    return {"hello": "world"}


@app.post("/login")
def do_login() -> dict:
    return {"logged_in": True}


# Without the header: 401 (an API key is a credential); on_missing_key="skip"
# would let such requests through unlimited instead.
@app.get("/search", dependencies=[Depends(RateLimit(search, key=api_key("X-API-Key")))])
def do_search(q: str = "") -> dict:
    return {"results": [], "q": q}


@app.get("/health")
def health() -> dict:
    return {"ok": True}


@app.get("/metrics", response_class=PlainTextResponse)
def metrics() -> str:
    # The client's counters, and the policy's requests per rule and outcome.
    return polylimit.prometheus_text(client) + policy.metrics_prometheus()
