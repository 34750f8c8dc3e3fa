# Type stubs for polylimit._core (the pybind11 module over the C ABI).
# Status codes, enum values and bounds are in polylimit._vocabulary (generated).
from typing import Dict, Iterable, List, Optional, Sequence, Tuple, Union

from ._errors import Error

_Key = Union[str, bytes]

VERSION_STRING: str
VERSION_NUMBER: int

def version_string() -> str: ...
def version_number() -> int: ...
def status_name(code: int) -> str: ...
def redact_url(url: str) -> str: ...

class Decision:
    def __init__(
        self,
        *,
        allowed: bool,
        limit: int = 0,
        remaining: int = 0,
        retry_after_ms: int = 0,
        reset_after_ms: int = 0,
        shadowed: bool = False,
        degraded: bool = False,
        cached: bool = False,
        granted: Optional[int] = None,
    ) -> None:
        """A decision made by hand (it has no limiter: headers() refuses)."""
    @property
    def allowed(self) -> bool: ...
    @property
    def limit(self) -> int: ...
    @property
    def remaining(self) -> int: ...
    @property
    def retry_after(self) -> float: ...
    @property
    def reset_after(self) -> float: ...
    @property
    def retry_after_ms(self) -> int: ...
    @property
    def reset_after_ms(self) -> int: ...
    @property
    def cached(self) -> bool:
        """Denied by the local deny cache, without a round trip."""
    @property
    def degraded(self) -> bool:
        """Answered by the failure policy (Redis did not answer)."""
    @property
    def shadowed(self) -> bool:
        """Would have been denied; admitted because the limiter is in shadow mode."""
    @property
    def granted(self) -> int:
        """Units admitted: the cost or 0; check_at_most: how many."""
    def headers(self) -> Dict[str, str]:
        """The HTTP rate-limit headers for this decision, as the limiter that
        made it formats them (polylimit_limiter_headers): {name: value}, in order."""
    def __bool__(self) -> bool: ...
    def __eq__(self, other: object) -> bool: ...

class Client:
    def __init__(
        self,
        url: Optional[str] = None,
        pool_size: int = 0,
        connect_timeout_ms: int = 0,
        command_timeout_ms: int = 0,
        acquire_timeout_ms: int = 0,
        keepalive_s: int = 0,
        disable_keepalive: bool = False,
        idle_check_ms: int = 0,
        name: Optional[str] = None,
        tls_ca_file: Optional[str] = None,
        tls_ca_dir: Optional[str] = None,
        tls_cert_file: Optional[str] = None,
        tls_key_file: Optional[str] = None,
        tls_server_name: Optional[str] = None,
        tls_insecure: bool = False,
        coalesce: bool = True,
    ) -> None: ...
    def close(self) -> None: ...
    def stats(self) -> Dict[str, object]: ...
    def stats_prometheus(self) -> str: ...
    @property
    def closed(self) -> bool: ...

def clients_stats_prometheus(clients: Iterable[Client]) -> str:
    """polylimit_clients_stats_prometheus: the clients' counters on one Prometheus page."""

class Queue:
    """polylimit_queue: completions of Limiter.submit_check, with an eventfd to watch."""
    def __init__(self) -> None: ...
    def fd(self) -> int:
        """The eventfd, readable while completions wait (do not read or close it); -1 once closed."""
    def poll(self, max: int = 256) -> List[Tuple[int, int, Union[Decision, Error]]]:
        """Up to max completions, oldest first, without waiting: [(token, status, Decision or Error)]."""
    def wake(self) -> None: ...
    def outstanding(self) -> int:
        """Checks submitted and not yet completed."""
    def close(self) -> None:
        """Frees the queue; completions still in flight are dropped. Idempotent."""
    @property
    def closed(self) -> bool: ...

class Limiter:
    def __init__(
        self,
        client: Client,
        *,
        spec: Optional[str] = None,
        limit: int = 0,
        window_ms: int = 0,
        burst: int = 0,
        algorithm: int = 0,
        prefix: str = "pl",
        clock: int = 0,
        deny_cache_size: int = 0,
        failure_policy: int = 0,
        breaker_failures: int = 0,
        breaker_cooldown_ms: int = 0,
        shadow: bool = False,
        block_ms: int = 0,
        durable_replicas: int = 0,
        durable_timeout_ms: int = 0,
        durable_aof: bool = False,
        lease_units: int = 0,
        lease_ms: int = 0,
    ) -> None: ...
    def check(self, key: _Key, cost: int = 1) -> Decision: ...
    def check_at(self, key: _Key, cost: int, now_us: int) -> Decision: ...
    def peek(self, key: _Key) -> Decision: ...
    def reset(self, key: _Key) -> None: ...
    def check_many(
        self, keys: Iterable[_Key], cost: int = 1, return_exceptions: bool = False
    ) -> List[Union[Decision, Error]]:
        """polylimit_limiter_check_many: one pipelined round trip; every key has
        its own status and message. With return_exceptions: a Decision or an
        Error (.index) per key. Without: a failed key raises the call's error
        ("keys[i]: ...", .index, .results). A call refused before any key
        always raises."""
    def check_at_most(self, key: _Key, max_cost: int) -> Decision: ...
    def acquire(self, key: _Key, cost: int, timeout_ms: int) -> Decision: ...
    def check_limit(self, key: _Key, cost: int, limit: int, window_ms: int) -> Decision: ...
    def refund(self, key: _Key, units: int) -> Decision: ...
    def headers(self, decision: Decision) -> Dict[str, str]: ...
    def submit_check(self, key: _Key, cost: int, queue: Queue, token: int) -> None:
        """polylimit_limiter_submit_check: the result arrives in queue as (token, ...).
        A refused submit raises what check would."""
    def submit_peek(self, key: _Key, queue: Queue, token: int) -> None: ...
    def submit_reset(self, key: _Key, queue: Queue, token: int) -> None: ...
    def submit_check_at_most(self, key: _Key, max_cost: int, queue: Queue, token: int) -> None: ...
    def submit_check_limit(
        self, key: _Key, cost: int, limit: int, window_ms: int, queue: Queue, token: int
    ) -> None: ...
    def submit_refund(self, key: _Key, units: int, queue: Queue, token: int) -> None: ...
    def submit_check_many(
        self, keys: Iterable[_Key], cost: int, queue: Queue, first_token: int
    ) -> List[Optional[Error]]:
        """submit_check per key (tokens first_token, first_token + 1, ...): None
        for a key submitted, its Error (.index) for one refused."""
    @property
    def spec(self) -> Optional[str]: ...
    @property
    def limit(self) -> int: ...
    @property
    def window_ms(self) -> int: ...
    @property
    def burst(self) -> int: ...
    @property
    def algorithm(self) -> int: ...
    @property
    def clock(self) -> int: ...
    @property
    def prefix(self) -> str: ...

HTTP_PROCEED: int
HTTP_CHECK: int
HTTP_RESPOND: int
HTTP_NEED_APP_KEY: int

class HttpStep:
    """What to do with one request (polylimit_http_step)."""
    @property
    def action(self) -> int: ...
    @property
    def status(self) -> int: ...
    @property
    def rule(self) -> int: ...
    @property
    def cost(self) -> int: ...
    @property
    def key(self) -> _Key: ...

_Value = Union[str, bytes, None]

class HttpPolicy:
    """polylimit_http_policy: the HTTP request policy of a JSON document."""
    def __init__(self, document: str, limiters: Iterable[Limiter]) -> None: ...
    def header_names(self) -> List[str]: ...
    def rule_count(self) -> int: ...
    def rule_name(self, rule: int) -> str: ...
    def rule_limiter(self, rule: int) -> int: ...
    def prepare(
        self,
        method: _Value,
        path: _Value,
        route: _Value = None,
        peer: _Value = None,
        headers: Optional[Sequence[_Value]] = None,
        user: _Value = None,
        tenant: _Value = None,
        app_key: _Value = None,
        cost: Optional[int] = None,
    ) -> HttpStep: ...
    def answer(self, step: HttpStep, decision: Optional[Decision] = None) -> Tuple[int, str, List[Tuple[str, str]]]: ...
    def refund_due(self, step: HttpStep, decision: Decision, status: int) -> bool: ...
    def counts(self, rule: int, status: int) -> bool: ...
    def metrics_prometheus(self) -> str: ...
