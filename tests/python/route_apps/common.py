"""What the four apps share: the limit, the key, the login check."""

import os
from typing import Optional

from polylimit.contrib.http import RequestView

PREFIX = os.environ.get("EXAMPLE_PREFIX", "route-limits")
RATE = "2/minute"


def user_key(request: RequestView) -> Optional[str]:
    """The X-User header (not a credential: 400 without it)."""
    value = request.header("X-User")
    return "user:" + value if value else None


def login_ok(query: str) -> bool:
    return query == "password=right"
