"""Java: Status, Vocabulary and the exception classes of io.polylimit.

bindings/swig/CMakeLists.txt runs `generate.py java DIR` at build time and the
Maven project in bindings/swig/java compiles DIR with the hand-written
sources. PolylimitException (the base class) stays hand-written; every
subclass, the status constants and the code -> exception mapping come from
here, so no status number is written by hand in the Java binding.
"""
from common import BANNER, camel, errors_only, upper  # noqa: F401


def _string(s):
    return '"%s"' % s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _doc(text):
    # Javadoc must not close early or start an HTML entity by accident.
    return text.replace("*/", "*&#47;").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _status(v):
    errs = errors_only(v)
    out = ["// " + BANNER, "package io.polylimit;", "",
           "/**",
           " * Status codes of the C ABI ({@code polylimit_status}): constants, names,",
           " * texts, and the exception class of each. A code this binding does not know",
           " * (from a newer C library) is treated like {@link #ERROR}.",
           " */",
           "public final class Status {", "    private Status() {}", ""]
    for s in v["statuses"]:
        out.append("    /** POLYLIMIT_%s: %s. */" % (s["c"], _doc(s["doc"])))
        out.append("    public static final int %s = %d;" % (s["c"], s["value"]))
    out += ["", "    /** Every code above, in the C header's order. */",
            "    public static final java.util.List<Integer> CODES = java.util.List.of(%s);"
            % ", ".join(str(s["value"]) for s in v["statuses"])]
    out += ["", "    /** The C constant name, e.g. \"POLYLIMIT_ETIMEOUT\" (as polylimit_status_name);",
            "     * \"POLYLIMIT_UNKNOWN(code)\" for a code this binding does not know. */",
            "    public static String name(int code) {", "        switch (code) {"]
    for s in v["statuses"]:
        out.append('            case %d: return "POLYLIMIT_%s";' % (s["value"], s["c"]))
    out += ['            default: return "POLYLIMIT_UNKNOWN(" + code + ")";', "        }", "    }", "",
            "    /** A short text for the code, e.g. \"timed out\". */",
            "    public static String text(int code) {", "        switch (code) {"]
    for s in v["statuses"]:
        out.append("            case %d: return %s;" % (s["value"], _string(s["text"])))
    out += ['            default: return "unknown status " + code;', "        }", "    }", "",
            "    /** Whether a later retry of the same call may succeed. */",
            "    public static boolean retryable(int code) {", "        switch (code) {"]
    for s in errs:
        if s["retryable"]:
            out.append("            case %d:" % s["value"])
    out += ["                return true;", "            default:", "                return false;", "        }",
            "    }", "",
            "    /** Whether the code means the server did not answer (the failure policy applies). */",
            "    public static boolean outage(int code) {", "        switch (code) {"]
    for s in errs:
        if s["outage"]:
            out.append("            case %d:" % s["value"])
    out += ["                return true;", "            default:", "                return false;", "        }",
            "    }", "",
            "    /** The exception class for an error code: a subclass of PolylimitException where",
            "     * the code has one, else PolylimitException itself (also for unknown codes). */",
            "    public static Class<? extends PolylimitException> exceptionClass(int code) {",
            "        switch (code) {"]
    for s in errs:
        out.append("            case %d: return %s.class;" % (s["value"], s["java"]))
    out += ["            default: return PolylimitException.class;", "        }", "    }", "",
            "    /** A new exception for an error code (see {@link #exceptionClass}). */",
            "    public static PolylimitException exception(int code, String message, int sysErrno) {",
            "        switch (code) {"]
    for s in errs:
        if s["java"] != "PolylimitException":
            out.append("            case %d: return new %s(message, sysErrno);" % (s["value"], s["java"]))
    out += ["            default: return new PolylimitException(code, message, sysErrno);", "        }", "    }",
            "}", ""]
    return "\n".join(out)


def _exception(s):
    return "\n".join([
        "// " + BANNER, "package io.polylimit;", "",
        "/** POLYLIMIT_%s: %s. */" % (s["c"], _doc(s["doc"])),
        "public class %s extends PolylimitException {" % s["java"],
        "    private static final long serialVersionUID = 1L;", "",
        "    public %s(String message) {" % s["java"], "        this(message, 0);", "    }", "",
        "    public %s(String message, int sysErrno) {" % s["java"],
        "        super(Status.%s, message, sysErrno);" % s["c"], "    }", "}", ""])


def _vocabulary(v):
    out = ["// " + BANNER, "package io.polylimit;", "",
           "/**",
           " * Option bounds and enum names, as the C core checks them. For reference only:",
           " * the binding passes values through and the core is the only checker; its",
           " * message is {@code \"<name> = <value> is out of range <min>..<max>\"}.",
           " */",
           "public final class Vocabulary {", "    private Vocabulary() {}", ""]
    for b in v["bounds"]:
        n = upper(b["name"])
        out.append("    /** %s: %s. */" % (b["name"], _doc(b["doc"])))
        out.append("    public static final long MIN_%s = %dL;" % (n, b["min"]))
        out.append("    public static final long MAX_%s = %dL;" % (n, b["max"]))
        if "default" in b:
            out.append("    public static final long DEFAULT_%s = %dL;" % (n, b["default"]))
    for key, ident in (("algorithms", "ALGORITHMS"), ("clocks", "CLOCKS"), ("failure_policies", "FAILURE_POLICIES")):
        out.append("    /** Names indexed by the C value. */")
        out.append("    public static final java.util.List<String> %s = java.util.List.of(%s);" % (
            ident, ", ".join(_string(r["name"]) for r in sorted(v[key], key=lambda r: r["value"]))))
    out += ["    /** polylimit_decision fields, in packing order. */",
            "    public static final java.util.List<String> DECISION_FIELDS = java.util.List.of(%s);" % ", ".join(
                _string(f["name"]) for f in v["decision_fields"]),
            "    /** polylimit_stats counters, in packing order. */",
            "    public static final java.util.List<String> STATS_COUNTERS = java.util.List.of(%s);" % ", ".join(
                _string(f["name"]) for f in v["stats_counters"]),
            "    public static final int LATENCY_BUCKETS = %d;" % v["latency_buckets"]]
    h = v["http"]
    out += ["    /** The HTTP request policy's answers: content type (docs/integrations/contract.md). */",
            "    public static final String HTTP_CONTENT_TYPE = %s;" % _string(h["content_type"])]
    for b in h["bodies"]:
        out.append("    /** %d: %s. */" % (b["status"], _doc(b["doc"])))
        out.append("    public static final String HTTP_BODY_%s = %s;" % (upper(b["name"]), _string(b["body"])))
    out += ["    /** What the per-rule metrics count, in order. */",
            "    public static final java.util.List<String> HTTP_OUTCOMES = java.util.List.of(%s);" % ", ".join(
                _string(o["name"]) for o in h["outcomes"]), "}", ""]
    return "\n".join(out)


def java_files(v):
    files = {"Status.java": _status(v), "Vocabulary.java": _vocabulary(v)}
    for s in errors_only(v):
        if s["java"] != "PolylimitException":
            files[s["java"] + ".java"] = _exception(s)
    return files
