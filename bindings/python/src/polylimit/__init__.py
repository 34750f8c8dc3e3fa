"""polylimit: a distributed rate limiter on Redis.

    import polylimit

    with polylimit.Client("redis://localhost:6379") as client:
        per_user = client.limiter("100/minute")
        decision = per_user.check("user:42")
        if not decision:
            print("retry in", decision.retry_after, "s")

Every decision is one atomic Lua script inside Redis (an exact sliding-window
log by default; sliding counter, fixed window and GCRA too), so many processes
and hosts share one limit exactly. ``memory://`` runs the same algorithms in
this process, without a server (ask for it: ``Client()`` without a URL reads
``POLYLIMIT_URL``, and refuses when that is unset). Rate specs (``"10/s; 1000/hour"``) are parsed
by the core, the same way in every language.
"""

from . import _core, _vocabulary
from ._client import Client, Hit, Limiter, Rate, Stats, prometheus_text, redact_url
from ._core import Decision
from ._errors import (
    AuthError,
    ClosedError,
    Error,
    InvalidArgument,
    NoMemory,
    NotDurable,
    PermissionDenied,
    PoolExhausted,
    RateLimited,
    ScriptError,
    ServerError,
    Timeout,
    Unavailable,
)
from ._vocabulary import AlgorithmName, ClockName, FailurePolicyName

__version__: str = _core.VERSION_STRING

#: Algorithm names that Client.limiter() accepts.
ALGORITHMS = tuple(sorted(_vocabulary.ALGORITHMS))
#: Clock names that Client.limiter(clock=...) accepts.
CLOCKS = tuple(sorted(_vocabulary.CLOCKS))
#: Failure policies that Client.limiter(on_failure=...) accepts.
FAILURE_POLICIES = tuple(sorted(_vocabulary.FAILURE_POLICIES))

__all__ = [
    "ALGORITHMS",
    "AlgorithmName",
    "AuthError",
    "CLOCKS",
    "Client",
    "ClockName",
    "ClosedError",
    "Decision",
    "Error",
    "FAILURE_POLICIES",
    "FailurePolicyName",
    "Hit",
    "InvalidArgument",
    "Limiter",
    "NoMemory",
    "NotDurable",
    "PermissionDenied",
    "PoolExhausted",
    "Rate",
    "RateLimited",
    "ScriptError",
    "ServerError",
    "Stats",
    "Timeout",
    "Unavailable",
    "__version__",
    "prometheus_text",
    "redact_url",
]

# Tracebacks name the public module, not the private one that defines them.
for _cls in (
    AuthError,
    ClosedError,
    Error,
    InvalidArgument,
    NoMemory,
    NotDurable,
    PermissionDenied,
    PoolExhausted,
    RateLimited,
    ScriptError,
    ServerError,
    Timeout,
    Unavailable,
    Client,
    Hit,
    Limiter,
    Rate,
):
    _cls.__module__ = __name__
del _cls
