"""The Python service of the cross-language HTTP suite (tests/http/cross_language.py):
FastAPI behind polylimit's ASGI middleware, served by uvicorn on loopback.

    python service.py CONFIG_FILE PORT      (POLYLIMIT_URL in the environment)

CONFIG_FILE: {"limiters": [{"rate": ..., "prefix": ..., "algorithm": ...}, ...],
"policy": {...the contract's document...}}, or {"policy_file": PATH,
"watch_ms": 100}: a live policy opened from that file (TOML or JSON, its own
limits and plans), watched for changes. The user id is the request's
X-User header and the tenant the X-Tenant header, read by the service's own
hooks (not as policy headers). Every path and method answers 200 "ok\\n" when
the request goes on. Prints "ready" once it accepts connections; SIGTERM
stops it.
"""

import contextlib
import json
import signal
import sys
from typing import Any, Iterator, List, Optional

import polylimit
import uvicorn
from fastapi import FastAPI
from fastapi.responses import PlainTextResponse
from polylimit.contrib.asgi import RateLimitMiddleware
from polylimit.contrib.http import Policy, RequestView
from polylimit.contrib.live import LivePolicy

METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def user(view: RequestView) -> Optional[str]:
    return view.header("X-User")


def tenant(view: RequestView) -> Optional[str]:
    return view.header("X-Tenant")


def make_policy(config: Any, client: polylimit.Client) -> Policy:
    if "policy_file" in config:
        watch = int(config.get("watch_ms", 100)) / 1000.0
        return LivePolicy.open(config["policy_file"], client, watch=watch, user=user, tenant=tenant)
    limiters: List[polylimit.Limiter] = []
    for spec in config["limiters"]:
        options = {"prefix": spec["prefix"]} if "prefix" in spec else {}
        if "algorithm" in spec:
            options["algorithm"] = spec["algorithm"]
        limiters.append(client.limiter(spec["rate"], **options))
    return Policy.from_document(config["policy"], limiters, user=user, tenant=tenant)


def make_app(config: Any, client: polylimit.Client) -> Any:
    policy = make_policy(config, client)

    api = FastAPI()

    @api.api_route("/{path:path}", methods=METHODS, response_class=PlainTextResponse)
    def ok(path: str) -> str:
        return "ok\n"

    # Around the app (not added to it): the route template is unknown, so
    # "route" keys and route rules see the path, as every language's service.
    return RateLimitMiddleware(api, policy)


class Server(uvicorn.Server):
    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            print("ready", flush=True)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """SIGTERM/SIGINT: a graceful stop and exit status 0 (uvicorn's own
        handler raises the signal again once stopped)."""

        def stop(signum: int, frame: Any) -> None:
            self.should_exit = True

        previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            yield
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: service.py CONFIG_FILE PORT")
    with open(sys.argv[1], encoding="utf-8") as f:
        config = json.load(f)
    client = polylimit.Client(name="python")  # the URL from $POLYLIMIT_URL
    app = make_app(config, client)
    # --no-proxy-headers: X-Forwarded-For is the policy's to read, not uvicorn's.
    server = Server(
        uvicorn.Config(
            app, host="127.0.0.1", port=int(sys.argv[2]), proxy_headers=False, log_level="warning", lifespan="off"
        )
    )
    server.run()
    client.close()


if __name__ == "__main__":
    main()
