"""The Node package's constants: bindings/node/lib/vocabulary.js and its
TypeScript declarations, lib/vocabulary.d.ts (both committed)."""
import json

from common import BANNER


def node_file(v):
    statuses = [{"value": s["value"], "code": s["c"], "name": s["id"], "text": s["text"],
                 "retryable": s["retryable"], "outage": s["outage"]} for s in v["statuses"]]
    enums = {
        "algorithms": {a["name"]: a["value"] for a in v["algorithms"]},
        "clocks": {c["name"]: c["value"] for c in v["clocks"]},
        "failurePolicies": {p["name"]: p["value"] for p in v["failure_policies"]},
    }
    bounds = {b["name"]: {"min": b["min"], "max": b["max"]} for b in v["bounds"]}
    out = ["// " + BANNER, "'use strict';", ""]
    out.append("// Status codes: value, C name without POLYLIMIT_ (PolylimitError.code), class stem,")
    out.append("// text, whether a retry can succeed, whether it is an outage (the failure policy's case).")
    out.append("exports.statuses = Object.freeze(%s.map(Object.freeze));" % json.dumps(statuses, indent=2))
    for key, table in enums.items():
        out.append("exports.%s = Object.freeze(%s);" % (key, json.dumps(table, indent=2)))
    out.append("exports.bounds = Object.freeze(%s);" % json.dumps(bounds, indent=2))
    out.append("exports.decisionFields = Object.freeze(%s);" % json.dumps([f["name"] for f in v["decision_fields"]]))
    h = v["http"]
    http = {
        "contentType": h["content_type"],
        "bodies": {b["name"]: {"status": b["status"], "body": b["body"]} for b in h["bodies"]},
        "keyParts": {k["name"]: k["format"] for k in h["key_parts"]},
        "outcomes": [o["name"] for o in h["outcomes"]],
    }
    out.append("// The HTTP request policy (docs/integrations/contract.md): bodies, key parts, outcomes.")
    out.append("exports.http = Object.freeze(%s);" % json.dumps(http, indent=2))
    return "\n".join(out) + "\n"


def node_types(v):
    errors = [s for s in v["statuses"] if s["value"] != 0]
    quote = lambda xs: " | ".join("'%s'" % x for x in xs)
    out = ["// " + BANNER, ""]
    out.append("/** PolylimitError.code: a status's C name without POLYLIMIT_. */")
    out.append("export type ErrorCode = %s;" % quote(s["c"] for s in errors))
    out.append("export type Algorithm = %s;" % quote(a["name"] for a in v["algorithms"]))
    out.append("export type ClockSource = %s;" % quote(c["name"] for c in v["clocks"]))
    out.append("export type FailurePolicy = %s;" % quote(p["name"] for p in v["failure_policies"]))
    out.append("")
    out.append("/** Every error the library reports. */")
    out.append("export declare class PolylimitError extends Error {")
    out.append("  readonly code: ErrorCode;")
    out.append("  /** the C status (a negative number) */")
    out.append("  readonly status: number;")
    out.append("  /** whether the same call can succeed later */")
    out.append("  readonly retryable: boolean;")
    out.append("  /** the call failed after it was sent: it may have consumed units */")
    out.append("  readonly outcomeUnknown: boolean;")
    out.append("}")
    for s in errors:
        out.append("/** %s */" % s["doc"])
        out.append("export declare class %sError extends PolylimitError {}" % s["id"])
    return "\n".join(out) + "\n"
