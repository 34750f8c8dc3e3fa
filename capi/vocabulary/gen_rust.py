"""Rust: vocabulary_gen.rs for bindings/rust/polylimit.

Committed like the Go file, so `cargo build` needs no Python for the
binding itself (the bundled C++ build still runs generate.py cpp). The
output is what rustfmt leaves unchanged for the crate's rustfmt.toml
(max_width 120), so `cargo fmt --check` stays quiet.

It gives the Error enum (one variant per error status, each carrying the
call's detail), the Algorithm, Clock and FailurePolicy enums with their
names, and the option bounds; nothing in bindings/rust writes a code, a
value or a bound.
"""
from common import BANNER, errors_only, upper  # noqa: F401

ENUMS = (
    ("algorithms", "Algorithm", "polylimit_algorithm"),
    ("clocks", "Clock", "polylimit_clock"),
    ("failure_policies", "FailurePolicy", "polylimit_failure_policy"),
)


def rust_string(s):
    if any(c in s for c in '"\\\n') or not s.isascii():
        raise ValueError("cannot write %r as a Rust string literal" % s)
    return '"%s"' % s


def doc(s):
    s = s.replace("`", "'")
    return s[0].upper() + s[1:] + ("" if s.endswith(".") else ".")


def rust_file(v):
    errs = errors_only(v)
    out = ["// " + BANNER.replace("Do not edit.", "DO NOT EDIT."), ""]

    out += ["/// An error from the library: one variant per `POLYLIMIT_E*` status code, each",
            "/// with the call's detail. A code this binding does not know (from a newer",
            "/// library) is `Internal`, as polylimit.h asks; `Detail::code` keeps it.",
            "#[derive(Debug, Clone, PartialEq, Eq)]",
            "#[non_exhaustive]",
            "pub enum Error {"]
    for s in errs:
        out.append("    /// `POLYLIMIT_%s` (%d): %s" % (s["c"], s["value"], doc(s["doc"])))
        out.append("    %s(Detail)," % s["id"])
    out += ["}", "", "impl Error {",
            "    /// The error for a status code and its detail.",
            "    pub(crate) fn from_detail(detail: Detail) -> Error {",
            "        match detail.code {"]
    for s in errs:
        if s["id"] == "Internal":
            continue
        out.append("            %d => Error::%s(detail)," % (s["value"], s["id"]))
    out += ["            _ => Error::Internal(detail),", "        }", "    }", "",
            "    /// The call's detail: message, errno, outcome.",
            "    pub fn detail(&self) -> &Detail {",
            "        match self {"]
    for s in errs:
        out.append("            Error::%s(d) => d," % s["id"])
    out += ["        }", "    }", "",
            "    /// The C constant of the code, e.g. `\"POLYLIMIT_ETIMEOUT\"`.",
            "    pub fn code_name(&self) -> &'static str {",
            "        match self {"]
    for s in errs:
        out.append("            Error::%s(_) => %s," % (s["id"], rust_string("POLYLIMIT_" + s["c"])))
    out += ["        }", "    }", "",
            "    /// What the code means, e.g. `\"timed out\"`.",
            "    pub fn code_text(&self) -> &'static str {",
            "        match self {"]
    for s in errs:
        out.append("            Error::%s(_) => %s," % (s["id"], rust_string(s["text"])))
    out += ["        }", "    }", "",
            "    /// True when a later retry of the same call may succeed.",
            "    pub fn is_retryable(&self) -> bool {",
            "        matches!(self, %s)" % " | ".join("Error::%s(_)" % s["id"] for s in errs if s["retryable"]),
            "    }", "",
            "    /// True when the server did not answer (the failure policy applies to these).",
            "    pub fn is_outage(&self) -> bool {",
            "        matches!(self, %s)" % " | ".join("Error::%s(_)" % s["id"] for s in errs if s["outage"]),
            "    }", "}", ""]

    for key, typ, ctype in ENUMS:
        rows = sorted(v[key], key=lambda r: r["value"])
        out += ["/// The `%s` values of polylimit.h." % ctype,
                "#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]",
                "#[non_exhaustive]",
                "pub enum %s {" % typ]
        for i, r in enumerate(rows):
            out.append("    /// %s" % doc(r["doc"]))
            if i == 0:
                out.append("    #[default]")
            out.append("    %s = %d," % (r["id"], r["value"]))
        out += ["}", "", "impl %s {" % typ,
                "    /// Every value, in numeric order.",
                "    pub const ALL: [%s; %d] = [%s];" % (typ, len(rows), ", ".join("%s::%s" % (typ, r["id"]) for r in rows)),
                "",
                "    /// The name the other languages use, e.g. `%s`." % rows[0]["name"],
                "    pub fn name(self) -> &'static str {",
                "        match self {"]
        for r in rows:
            out.append("            %s::%s => %s," % (typ, r["id"], rust_string(r["name"])))
        out += ["        }", "    }", "",
                "    /// The value for a name, as `name()` spells it.",
                "    pub fn from_name(name: &str) -> Option<%s> {" % typ,
                "        Self::ALL.into_iter().find(|v| v.name() == name)",
                "    }", "}", ""]

    out += ["/// Option bounds: a value outside `MIN..=MAX` is refused with",
            "/// `Error::InvalidArgument` before any I/O; `DEFAULT` is what 0 selects.",
            "pub mod bounds {"]
    for b in v["bounds"]:
        n = upper(b["name"])
        out.append("    /// `%s`: %s" % (b["name"], doc(b["doc"])))
        out.append("    pub const MIN_%s: i64 = %d;" % (n, b["min"]))
        out.append("    /// Upper bound of `%s`." % b["name"])
        out.append("    pub const MAX_%s: i64 = %d;" % (n, b["max"]))
        if "default" in b:
            out.append("    /// Default of `%s`." % b["name"])
            out.append("    pub const DEFAULT_%s: i64 = %d;" % (n, b["default"]))
    out += ["}", ""]
    return "\n".join(out)
