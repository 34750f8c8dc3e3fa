"""Rate specs such as ``"100/minute"``, ``"10/s"`` or ``"5 per 2 seconds"``.

Kept in one small function so that it can move into the core later.
"""

import re
from typing import Tuple

from ._errors import InvalidArgument

_UNIT_MS = {
    "ms": 1, "msec": 1, "millisecond": 1,
    "s": 1000, "sec": 1000, "second": 1000,
    "m": 60_000, "min": 60_000, "minute": 60_000,
    "h": 3_600_000, "hr": 3_600_000, "hour": 3_600_000,
    "d": 86_400_000, "day": 86_400_000,
}

_SPEC = re.compile(
    r"\s*(?P<limit>[0-9]+)\s*(?:/|\bper\b)\s*(?P<count>[0-9]+(?:\.[0-9]+)?)?\s*(?P<unit>[a-z]+)\s*",
    re.ASCII | re.IGNORECASE,
)

_EXPECTED = "expected '<limit>/<unit>' or '<limit> per <n> <unit>', e.g. '100/minute' or '5 per 2 seconds'"


def parse_rate(spec: str) -> Tuple[int, int]:
    """Returns (limit, window_ms). Ranges are left to the core to check."""
    if not isinstance(spec, str):
        raise TypeError("rate spec must be a str, not %s" % type(spec).__name__)
    m = _SPEC.fullmatch(spec)
    if m is None:
        raise InvalidArgument("rate spec %r: %s" % (spec, _EXPECTED))
    unit = m.group("unit").lower()
    if unit not in _UNIT_MS and unit.endswith("s") and unit[:-1] in _UNIT_MS:
        unit = unit[:-1]  # plural: seconds, mins, hrs
    if unit not in _UNIT_MS:
        raise InvalidArgument(
            "rate spec %r: unknown unit %r (use ms, s, m, h, d or second, minute, hour, day)" % (spec, m.group("unit"))
        )
    count = float(m.group("count")) if m.group("count") else 1.0
    window_ms = count * _UNIT_MS[unit]
    if window_ms < 1 or window_ms != int(window_ms):
        raise InvalidArgument("rate spec %r: the window must be a whole number of milliseconds, at least 1" % spec)
    return int(m.group("limit")), int(window_ms)
