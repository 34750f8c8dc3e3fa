"""Java: Status, Vocabulary and the exception classes of io.polylimit."""
from common import BANNER, camel, errors_only, upper  # noqa: F401


def java_files(v):
    files = {}
    errs = errors_only(v)
    status = ["// " + BANNER, "package io.polylimit;", "",
              "/** Status codes of the C ABI: names, texts and the exception for each. */",
              "public final class Status {", "    private Status() {}", ""]
    for s in v["statuses"]:
        status.append("    /** %s */" % s["doc"])
        status.append("    public static final int %s = %d;" % (s["c"], s["value"]))
    status += ["", "    /** The C constant name, e.g. \"POLYLIMIT_ETIMEOUT\". */",
               "    public static String name(int code) {", "        switch (code) {"]
    for s in v["statuses"]:
        status.append('            case %d: return "POLYLIMIT_%s";' % (s["value"], s["c"]))
    status += ['            default: return "POLYLIMIT_UNKNOWN(" + code + ")";', "        }", "    }", "",
               "    /** Whether a later retry may succeed. */", "    public static boolean retryable(int code) {",
               "        switch (code) {"]
    for s in errs:
        if s["retryable"]:
            status.append("            case %d: return true;" % s["value"])
    status += ["            default: return false;", "        }", "    }", "",
               "    /** The exception for a status code (PolylimitException for unknown codes). */",
               "    public static PolylimitException exception(int code, String message, int sysErrno) {",
               "        switch (code) {"]
    for s in errs:
        if s["java"] != "PolylimitException":
            status.append("            case %d: return new %s(message, sysErrno);" % (s["value"], s["java"]))
    status += ["            default: return new PolylimitException(code, message, sysErrno);", "        }", "    }", "}", ""]
    files["Status.java"] = "\n".join(status)
    for s in errs:
        if s["java"] == "PolylimitException":
            continue
        files[s["java"] + ".java"] = "\n".join([
            "// " + BANNER, "package io.polylimit;", "",
            "/** POLYLIMIT_%s: %s. */" % (s["c"], s["doc"]),
            "public class %s extends PolylimitException {" % s["java"],
            "    private static final long serialVersionUID = 1L;", "",
            "    public %s(String message) {" % s["java"], "        this(message, 0);", "    }", "",
            "    public %s(String message, int sysErrno) {" % s["java"],
            "        super(Status.%s, message, sysErrno);" % s["c"], "    }", "}", ""])
    bounds = ["// " + BANNER, "package io.polylimit;", "",
              "/** Option bounds and enum names, as the C core checks them (the core is the only checker). */",
              "public final class Vocabulary {", "    private Vocabulary() {}", ""]
    for b in v["bounds"]:
        bounds.append("    /** %s */" % b["doc"])
        bounds.append("    public static final long MIN_%s = %dL;" % (upper(b["name"]), b["min"]))
        bounds.append("    public static final long MAX_%s = %dL;" % (upper(b["name"]), b["max"]))
    for key, ident in (("algorithms", "ALGORITHMS"), ("clocks", "CLOCKS"), ("failure_policies", "FAILURE_POLICIES")):
        bounds.append("    /** Names indexed by the C value. */")
        bounds.append("    public static final java.util.List<String> %s = java.util.List.of(%s);" % (
            ident, ", ".join('"%s"' % r["name"] for r in sorted(v[key], key=lambda r: r["value"]))))
    bounds += ["    /** polylimit_decision fields, in packing order. */",
               "    public static final int DECISION_FIELD_COUNT = %d;" % len(v["decision_fields"]),
               "    /** polylimit_stats counters, in packing order. */",
               "    public static final java.util.List<String> STATS_COUNTERS = java.util.List.of(%s);" % ", ".join(
                   '"%s"' % f["name"] for f in v["stats_counters"]),
               "    public static final int LATENCY_BUCKETS = %d;" % v["latency_buckets"], "}", ""]
    files["Vocabulary.java"] = "\n".join(bounds)
    return files


