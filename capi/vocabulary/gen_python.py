"""Python: _vocabulary.py for the polylimit package.

The module is written at build time (bindings/python/CMakeLists.txt runs
`generate.py python DIR`) and installed into the wheel next to _core. The
package reads every status code, exception mapping, enum name and bound from
it; nothing in bindings/python writes one by hand.
"""
import json

from common import BANNER, errors_only


def _literal(value):
    """A Python literal for a str, bool or int of the table. A JSON string is
    a valid Python string literal (quotes and backslashes escaped)."""
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (bool, int)):
        return repr(value)
    raise TypeError("unexpected value in the vocabulary: %r" % (value,))


def python_module(v):
    out = ['"""' + BANNER + '"""', "", "from typing import Dict, Literal, Tuple", ""]
    out += ["# status -> (C name, text, retryable, outage, exception class name in polylimit)",
            "STATUSES: Dict[int, Tuple[str, str, bool, bool, str]] = {"]
    for s in errors_only(v):
        out.append("    %d: (%s, %s, %s, %s, %s)," % (
            s["value"], _literal("POLYLIMIT_" + s["c"]), _literal(s["text"]), _literal(bool(s["retryable"])),
            _literal(bool(s["outage"])), _literal(s["python"])))
    out += ["}", ""]
    out += ["# exception class name -> (built-in exception it also derives from, or \"\"; what the status means)",
            "EXCEPTION_CLASSES: Dict[str, Tuple[str, str]] = {"]
    for s in errors_only(v):
        out.append("    %s: (%s, %s)," % (_literal(s["python"]), _literal(s.get("python_base", "")), _literal(s["doc"])))
    out += ["}", ""]
    out.append("# name -> value of the C enums polylimit_algorithm, polylimit_clock, polylimit_failure_policy")
    for key, ident in (("algorithms", "ALGORITHMS"), ("clocks", "CLOCKS"), ("failure_policies", "FAILURE_POLICIES")):
        out.append("%s: Dict[str, int] = {%s}" % (
            ident, ", ".join("%s: %d" % (_literal(r["name"]), r["value"]) for r in v[key])))
    out += ["", "# The same names as types: a misspelt name is a type error (mypy), not only a",
            "# run-time InvalidArgument."]
    for key, ident in (("algorithms", "AlgorithmName"), ("clocks", "ClockName"),
                       ("failure_policies", "FailurePolicyName")):
        out.append("%s = Literal[%s]" % (ident, ", ".join(_literal(r["name"]) for r in v[key])))
    out += ["", "# option name (as the core names it in messages) -> (min, max); the core checks them",
            "BOUNDS: Dict[str, Tuple[int, int]] = {"]
    for b in v["bounds"]:
        out.append("    %s: (%d, %d)," % (_literal(b["name"]), b["min"], b["max"]))
    out += ["}", "", "# option name -> what 0 selects, for the options that have a default",
            "DEFAULTS: Dict[str, int] = {"]
    for b in v["bounds"]:
        if "default" in b:
            out.append("    %s: %d," % (_literal(b["name"]), b["default"]))
    out += ["}", ""]
    out += ["# Fields of polylimit_decision and counters of polylimit_stats, in struct order",
            "DECISION_FIELDS: Tuple[str, ...] = (%s,)" % ", ".join(_literal(f["name"]) for f in v["decision_fields"]),
            "STATS_COUNTERS: Tuple[str, ...] = (%s,)" % ", ".join(_literal(f["name"]) for f in v["stats_counters"]),
            "LATENCY_BUCKETS = %d" % v["latency_buckets"], ""]
    h = v["http"]
    out += ["# The HTTP request policy (docs/integrations/contract.md): the answers' bodies",
            "# and content type, the key parts and what the per-rule metrics count.",
            "HTTP_CONTENT_TYPE = %s" % _literal(h["content_type"]),
            "# body name -> (status, body)",
            "HTTP_BODIES: Dict[str, Tuple[int, str]] = {"]
    for b in h["bodies"]:
        out.append("    %s: (%d, %s)," % (_literal(b["name"]), b["status"], _literal(b["body"])))
    out += ["}",
            "# key part -> its format in the key",
            "HTTP_KEY_PARTS: Dict[str, str] = {%s}" % ", ".join(
                "%s: %s" % (_literal(k["name"]), _literal(k["format"])) for k in h["key_parts"]),
            "HTTP_OUTCOMES: Tuple[str, ...] = (%s,)" % ", ".join(_literal(o["name"]) for o in h["outcomes"]),
            "HTTP_ON_MISSING_KEY: Tuple[str, ...] = (%s,)" % ", ".join(
                _literal(o["name"]) for o in h["on_missing_key"]),
            "HTTP_ON_ERROR: Tuple[str, ...] = (%s,)" % ", ".join(_literal(o["name"]) for o in h["on_error"]), ""]
    return "\n".join(out)
