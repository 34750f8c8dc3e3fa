"""What the four apps share: the limits and the non-credential key."""

import os
from typing import Optional

import polylimit
from polylimit.contrib.http import RequestView

PREFIX = os.environ.get("EXAMPLE_PREFIX", "missing-key")
RATE = "2/minute"


def tenant(request: RequestView) -> Optional[str]:
    """A key that is no credential: a tenant id header (None without it)."""
    value = request.header("X-Tenant")
    return "tenant:" + value if value else None


def limiters(client: polylimit.Client) -> "dict[str, polylimit.Limiter]":
    """One limiter per route, each with a prefix of its own."""
    return {name: client.limiter(RATE, prefix="%s:%s" % (PREFIX, name)) for name in ("credential", "tenant", "skip")}
