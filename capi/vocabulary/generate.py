#!/usr/bin/env python3
"""Generates every language's constants from vocabulary.json.

The table beside this script is the only place where a status code, an enum
value or an option bound is written. This script writes:

  c       the block between the GENERATED markers in capi/include/polylimit.h
          (committed: the header is the C user's documentation)
  go      bindings/go/vocabulary_gen.go (committed, so `go build` works alone;
          `go generate` runs this)
  node    bindings/node/lib/vocabulary.js and vocabulary.d.ts (committed: the
          npm package ships them)
  cpp     <dir>/polylimit/vocabulary.h for the C++ core (build time)
  python  <dir>/_vocabulary.py for the Python package (build time)
  rust    bindings/rust/polylimit/src/vocabulary_gen.rs (committed, so `cargo build`
          of the binding works alone)
  java    <dir>/io/polylimit/*.java: Status, Vocabulary and one exception class
          per status (build time)

  generate.py c|go|node|rust [--check] rewrite (or, with --check, compare) the committed file(s)
  generate.py cpp|python|java DIR write into DIR (only files whose text changed)
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import BANNER, camel, errors_only, upper  # noqa: E402
from gen_go import go_file  # noqa: E402
from gen_java import java_files  # noqa: E402
from gen_node import node_file, node_types  # noqa: E402
from gen_python import python_module  # noqa: E402
from gen_rust import rust_file  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
def load():
    with open(os.path.join(HERE, "vocabulary.json"), encoding="utf-8") as f:
        return json.load(f)


# ---- C: the block inside the public header ---------------------------------

def c_enum(type_name, rows, indent="    "):
    width = max(len("POLYLIMIT_" + r["c"]) + len(str(r["value"])) for r in rows) + 5
    lines = ["typedef enum %s {" % type_name]
    for i, r in enumerate(rows):
        head = "%sPOLYLIMIT_%s = %d%s" % (indent, r["c"], r["value"], "," if i + 1 < len(rows) else "")
        lines.append("%s /**< %s */" % (head.ljust(width + len(indent)), r["doc"]))
    lines.append("} %s;" % type_name)
    return lines


def c_block(v):
    out = ["/* " + BANNER + " */", ""]
    out.append("/** Status codes. 0 is success; every error is negative. Treat an unknown")
    out.append(" * negative code like POLYLIMIT_ERROR. */")
    out += c_enum("polylimit_status", v["statuses"])
    out += ["", "/** Algorithms (polylimit_limiter_options.algorithm). */"]
    out += c_enum("polylimit_algorithm", v["algorithms"])
    out += ["", "/** Where time comes from (polylimit_limiter_options.clock). */"]
    out += c_enum("polylimit_clock", v["clocks"])
    out += ["", "/** What a check answers when Redis cannot answer in time (timeout, refused or",
            " * broken connection, pool exhausted, circuit breaker open; in failover-safe",
            " * mode also a write the replicas did not acknowledge in time). */"]
    out += c_enum("polylimit_failure_policy", v["failure_policies"])
    out += ["", "/* Option bounds: a value outside MIN..MAX is rejected with POLYLIMIT_EINVALID",
            " * and a message \"<name> = <value> is out of range MIN..MAX\". DEFAULT is what 0",
            " * (or NULL) selects where the field documents a default. */"]
    for b in v["bounds"]:
        n = upper(b["name"])
        out.append("/* %s: %s */" % (b["name"], b["doc"]))
        out.append("#define POLYLIMIT_MIN_%s %dLL" % (n, b["min"]))
        out.append("#define POLYLIMIT_MAX_%s %dLL" % (n, b["max"]))
        if "default" in b:
            out.append("#define POLYLIMIT_DEFAULT_%s %dLL" % (n, b["default"]))
    out += c_http(v["http"])
    out += ["", "#define POLYLIMIT_STATS_LATENCY_BUCKETS %d" % v["latency_buckets"], ""]
    out += ["/** One decision, filled by the check calls. */", "typedef struct polylimit_decision {"]
    flags = [f for f in v["decision_fields"] if f["type"] == "flag"]
    for f in v["decision_fields"]:
        if f["type"] != "flag":
            continue
        out.append("    uint8_t %s; /**< %s */" % (f["name"], f["doc"]))
    out.append("    uint8_t reserved_flags_[%d]; /**< zeroed; room for flags added in 1.x */" % (8 - len(flags)))
    for f in v["decision_fields"]:
        if f["type"] == "flag":
            continue
        out.append("    int64_t %s; /**< %s */" % (f["name"], f["doc"]))
    out += ["    int64_t reserved_[3]; /**< zeroed; room for fields added in 1.x */", "} polylimit_decision;", ""]
    out += ["/* X-macros over the fields, in struct order (packing for bindings):",
            " * X(name) for every field of polylimit_decision / every counter of polylimit_stats. */"]
    out.append("#define POLYLIMIT_DECISION_FIELDS(X) " + " ".join("X(%s)" % f["name"] for f in v["decision_fields"]))
    out.append("#define POLYLIMIT_STATS_COUNTERS(X) " + " ".join("X(%s)" % f["name"] for f in v["stats_counters"]))
    out.append("#define POLYLIMIT_DECISION_FIELD_COUNT %d" % len(v["decision_fields"]))
    out.append("#define POLYLIMIT_STATS_COUNTER_COUNT %d" % len(v["stats_counters"]))
    # Counters of version 1 come before the latency arrays; later versions
    # append theirs after them (a version-1 caller's struct is shorter).
    first = [f for f in v["stats_counters"] if f.get("since", 1) == 1]
    later = [f for f in v["stats_counters"] if f.get("since", 1) > 1]
    version = max([1] + [f["since"] for f in later])
    out += ["", "#define POLYLIMIT_STATS_VERSION %d" % version, "",
            "/** Counters of one client (all its limiters), since it was opened. Version 2",
            " * appended the counters after the latency arrays; version 1 structs stay accepted. */",
            "typedef struct polylimit_stats {",
            "    unsigned int version; /**< set by the caller: POLYLIMIT_STATS_VERSION (or an older one) */"]
    for f in first:
        out.append("    uint64_t %s; /**< %s */" % (f["name"], f["doc"]))
    out += ["    uint64_t latency_le_us[POLYLIMIT_STATS_LATENCY_BUCKETS];   /**< bucket upper bounds (us);",
            "                                                               the last is UINT64_MAX (+Inf) */",
            "    uint64_t latency_buckets[POLYLIMIT_STATS_LATENCY_BUCKETS]; /**< checks per bucket (not cumulative) */"]
    since = 1
    for f in later:
        if f["since"] != since:
            since = f["since"]
            out.append("    /* version %d */" % since)
        out.append("    uint64_t %s; /**< %s */" % (f["name"], f["doc"]))
    out += ["} polylimit_stats;", "",
            "#define POLYLIMIT_STATS_INIT { POLYLIMIT_STATS_VERSION, %s{ 0 }, { 0 }%s }"
            % ("0, " * len(first), ", 0" * len(later))]
    return "\n".join(out) + "\n"


BEGIN = "/* BEGIN GENERATED: vocabulary */\n"
END = "/* END GENERATED: vocabulary */\n"


def c_header_text(v, current):
    a = current.index(BEGIN) + len(BEGIN)
    b = current.index(END)
    return current[:a] + c_block(v) + current[b:]


# ---- C++: the core's error codes, names and bounds -------------------------

def cpp_header(v):
    out = ["// vocabulary.h - " + BANNER, "#pragma once", "", "#include <cstdint>", "", "namespace polylimit {", ""]
    out.append("// The error codes; each value is the C ABI status (POLYLIMIT_E*).")
    out.append("enum class ErrorCode : int {")
    for s in errors_only(v):
        out.append("  k%s = %d,  // %s" % (s["id"], s["value"], s["doc"]))
    out += ["};", ""]
    out += ["struct StatusInfo {",
            "  int status;           // the C ABI value",
            "  const char* c_name;   // \"POLYLIMIT_ETIMEOUT\"",
            "  const char* text;     // \"timed out\"",
            "  bool retryable;       // a later retry may succeed",
            "  bool outage;          // the server did not answer: the failure policy applies",
            "};", "",
            "inline constexpr StatusInfo kStatuses[] = {"]
    for s in v["statuses"]:
        out.append('    {%d, "POLYLIMIT_%s", "%s", %s, %s},' % (
            s["value"], s["c"], s["text"], str(s["retryable"]).lower(), str(s["outage"]).lower()))
    out += ["};", ""]
    for key, typ in (("algorithms", "Algorithm"), ("clocks", "ClockSource"), ("failure_policies", "FailurePolicy")):
        out.append("enum class %s : int {" % typ)
        for r in v[key]:
            out.append("  k%s = %d,  // %s" % (r["id"], r["value"], r["doc"]))
        out += ["};", ""]
    out += ["// Names of the algorithms, clocks and failure policies, indexed by value."]
    for key, ident in (("algorithms", "kAlgorithmNames"), ("clocks", "kClockNames"),
                       ("failure_policies", "kFailurePolicyNames")):
        out.append("inline constexpr const char* %s[] = {%s};" % (
            ident, ", ".join('"%s"' % r["name"] for r in sorted(v[key], key=lambda r: r["value"]))))
    out += ["", "// An option bound: a value outside min..max is rejected with",
            "// \"<name> = <value> is out of range <min>..<max>\".",
            "struct Bound {", "  const char* name;", "  int64_t min;", "  int64_t max;", "  int64_t def;  // the default where the option has one, else 0", "};", "",
            "namespace bounds {"]
    for b in v["bounds"]:
        out.append('inline constexpr Bound k%s{"%s", %d, %d, %d};  // %s' % (
            camel(b["name"]), b["name"], b["min"], b["max"], b.get("default", 0), b["doc"]))
    out += ["}  // namespace bounds", "", "inline constexpr int kLatencyBucketCount = %d;" % v["latency_buckets"], ""]
    out += cpp_http(v["http"])
    out += ["}  // namespace polylimit", ""]
    return "\n".join(out)


def c_string(s):
    return json.dumps(s)  # a JSON string is a valid C string literal for this text


def cpp_http(h):
    out = ["// The HTTP request policy (docs/integrations/contract.md).", "namespace http {",
           "inline constexpr const char* kContentType = %s;" % c_string(h["content_type"]),
           "// The bodies of the policy's answers."]
    for b in h["bodies"]:
        out.append("inline constexpr const char* kBody%s = %s;  // %d: %s" % (
            camel(b["name"]), c_string(b["body"]), b["status"], b["doc"]))
    out.append("// What a request is counted as, per rule (metrics), in this order.")
    out.append("inline constexpr const char* kOutcomeNames[] = {%s};" % ", ".join(
        c_string(o["name"]) for o in h["outcomes"]))
    out.append("inline constexpr int kOutcomeCount = %d;" % len(h["outcomes"]))
    out += ["}  // namespace http", ""]
    return out


def c_http(h):
    out = ["", "/** What a polylimit_http_step asks of the middleware (polylimit_http_step.action). */"]
    out += c_enum("polylimit_http_action", h["actions"])
    out.append("/* The HTTP policy's answers: plain text, in POLYLIMIT_HTTP_CONTENT_TYPE. */")
    out.append("#define POLYLIMIT_HTTP_CONTENT_TYPE %s" % c_string(h["content_type"]))
    for b in h["bodies"]:
        out.append("#define POLYLIMIT_HTTP_BODY_%s %s /* %d: %s */" % (
            upper(b["name"]), c_string(b["body"]), b["status"], b["doc"]))
    return out


# ---- driver ----------------------------------------------------------------

def write_if_changed(path, text):
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except FileNotFoundError:
        pass
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def committed(target, v):
    if target == "c":
        path = os.path.join(ROOT, "capi", "include", "polylimit.h")
        with open(path, encoding="utf-8") as f:
            return path, c_header_text(v, f.read())
    if target == "rust":
        return os.path.join(ROOT, "bindings", "rust", "polylimit", "src", "vocabulary_gen.rs"), rust_file(v)
    path = os.path.join(ROOT, "bindings", "go", "vocabulary_gen.go")
    return path, go_file(v)


def main(argv):
    if len(argv) < 2 or argv[1] not in ("c", "go", "node", "rust", "cpp", "python", "java"):
        sys.stderr.write(__doc__)
        return 2
    v = load()
    target = argv[1]
    if target in ("c", "go", "node", "rust"):
        if target == "node":
            lib = os.path.join(ROOT, "bindings", "node", "lib")
            files = [(os.path.join(lib, "vocabulary.js"), node_file(v)),
                     (os.path.join(lib, "vocabulary.d.ts"), node_types(v))]
        else:
            files = [committed(target, v)]
        for path, text in files:
            if "--check" in argv[2:]:
                with open(path, encoding="utf-8") as f:
                    if f.read() != text:
                        sys.stderr.write("%s is out of date: run capi/vocabulary/generate.py %s\n" % (path, target))
                        return 1
            else:
                write_if_changed(path, text)
        return 0
    if len(argv) != 3:
        sys.stderr.write("generate.py %s DIR\n" % target)
        return 2
    out = argv[2]
    if target == "cpp":
        write_if_changed(os.path.join(out, "polylimit", "vocabulary.h"), cpp_header(v))
    elif target == "python":
        write_if_changed(os.path.join(out, "_vocabulary.py"), python_module(v))
    else:
        for name, text in java_files(v).items():
            write_if_changed(os.path.join(out, "io", "polylimit", name), text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
