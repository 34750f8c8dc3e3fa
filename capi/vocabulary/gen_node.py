"""The Node package's constants: bindings/node/lib/vocabulary.js (committed)."""
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
    return "\n".join(out) + "\n"
