//! The HTTP contract's golden vectors (tests/http/vectors.json) through this
//! binding's public API: `Policy::from_document` with `memory://` limiters,
//! `prepare`, `answer` for each given decision or failure, `refund_due`,
//! and the documents that must be refused.

use polylimit::policy::{Action, Policy, Request, Step};
use polylimit::{Client, Decision, Limiter};
use serde_json::Value;

fn vectors() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../tests/http/vectors.json");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

struct Suite {
    limiters: Vec<Limiter>,
    policy: Policy,
}

impl Suite {
    fn new(s: &Value) -> Suite {
        let client = Client::open("memory://").unwrap();
        let limiters: Vec<Limiter> = s["limiters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|spec| client.limiter(spec.as_str().unwrap()).unwrap())
            .collect();
        let doc = serde_json::to_string(&s["policy"]).unwrap();
        let policy =
            Policy::from_document(&doc, limiters.clone()).unwrap_or_else(|e| panic!("suite {}: {e}", s["name"]));
        Suite { limiters, policy }
    }

    fn prepare(&self, r: &Value) -> Step {
        let str_of = |k: &str| r.get(k).and_then(Value::as_str);
        let given = r.get("headers").and_then(Value::as_object);
        // The policy's header names are lower case; the vectors' any case.
        let values = self.policy.header_values(|name| {
            given?
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .and_then(|(_, v)| v.as_str())
                .map(|v| v.as_bytes().to_vec())
        });
        let headers: Vec<Option<&[u8]>> = values.iter().map(|v| v.as_deref()).collect();
        let request = Request {
            method: str_of("method").unwrap_or(""),
            path: str_of("path").unwrap_or("").as_bytes(),
            route: str_of("route"),
            peer: str_of("peer"),
            headers: &headers,
            user: str_of("user"),
            tenant: str_of("tenant"),
            app_key: str_of("app_key").map(str::as_bytes),
            cost: r.get("cost").and_then(Value::as_i64).unwrap_or(0),
        };
        self.policy.prepare(&request).unwrap()
    }

    /// A decision of the step's rule's limiter (any limiter when none) with the vector's values.
    fn decision(&self, step: &Step, d: &Value) -> Decision {
        let l = self.policy.limiter(step).unwrap_or(&self.limiters[0]);
        let num = |k: &str| d.get(k).and_then(Value::as_i64).unwrap_or(0);
        let flag = |k: &str| d.get(k).and_then(Value::as_bool).unwrap_or(false);
        let mut out = l.decision(
            flag("allowed"),
            num("limit"),
            num("remaining"),
            num("retry_after_ms"),
            num("reset_after_ms"),
        );
        out.shadowed = flag("shadowed");
        out.degraded = flag("degraded");
        out
    }
}

fn action_name(a: Action) -> &'static str {
    match a {
        Action::Proceed => "proceed",
        Action::Check => "check",
        Action::Respond => "respond",
        Action::NeedAppKey => "need_app_key",
        Action::NeedPlan => "need_plan",
    }
}

fn expect_answer(policy: &Policy, step: &Step, decision: Option<&Decision>, want: &Value, at: &str) {
    let got = policy.answer(step, decision).unwrap();
    assert_eq!(i64::from(got.status), want["status"].as_i64().unwrap(), "{at}: status");
    assert_eq!(got.body, want["body"].as_str().unwrap(), "{at}: body");
    let headers: Vec<(String, String)> = want["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h[0].as_str().unwrap().to_string(), h[1].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(got.headers, headers, "{at}: headers");
}

#[test]
fn every_case() {
    let v = vectors();
    let mut cases = 0;
    for s in v["suites"].as_array().unwrap() {
        let suite = Suite::new(s);
        for c in s["cases"].as_array().unwrap() {
            cases += 1;
            let at = format!("{} / {}", s["name"].as_str().unwrap(), c["name"].as_str().unwrap());
            let step = suite.prepare(&c["request"]);
            let want = &c["step"];
            assert_eq!(
                action_name(step.action()),
                want["action"].as_str().unwrap(),
                "{at}: action"
            );
            let rule = step.rule().map_or("", |i| suite.policy.rule_names()[i].as_str());
            assert_eq!(
                rule,
                want.get("rule").and_then(Value::as_str).unwrap_or(""),
                "{at}: rule"
            );
            if step.action() == Action::Check {
                assert_eq!(
                    String::from_utf8_lossy(step.key()),
                    want["key"].as_str().unwrap(),
                    "{at}: key"
                );
                assert_eq!(step.cost(), want["cost"].as_i64().unwrap(), "{at}: cost");
                assert!(suite.policy.limiter(&step).is_some(), "{at}: the rule's limiter");
            }
            if let Some(a) = want.get("answer") {
                expect_answer(&suite.policy, &step, None, a, &at);
            }
            for a in c.get("answers").and_then(Value::as_array).into_iter().flatten() {
                let d = (!a["decision"].is_null()).then(|| suite.decision(&step, &a["decision"]));
                expect_answer(
                    &suite.policy,
                    &step,
                    d.as_ref(),
                    &a["answer"],
                    &format!("{at} / answer"),
                );
            }
            for (status, counts) in c.get("counts").and_then(Value::as_object).into_iter().flatten() {
                let admitted = suite.decision(&step, &serde_json::json!({"allowed": true, "limit": 1, "remaining": 0}));
                let status: u16 = status.parse().unwrap();
                assert_eq!(
                    suite.policy.refund_due(&step, &admitted, status),
                    !counts.as_bool().unwrap(),
                    "{at} / counts {status}"
                );
            }
        }
    }
    assert!(cases >= 40, "only {cases} cases");
}

#[test]
fn refunds() {
    let v = vectors();
    let suites = v["suites"].as_array().unwrap();
    let mut n = 0;
    for r in v["refunds"].as_array().unwrap() {
        let s = &suites[r["suite"].as_u64().unwrap() as usize];
        let suite = Suite::new(s);
        let case = s["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == r["case"])
            .unwrap_or_else(|| panic!("no case {}", r["case"]));
        let step = suite.prepare(&case["request"]);
        let d = suite.decision(&step, &r["decision"]);
        let status = r["status"].as_u64().unwrap() as u16;
        assert_eq!(
            suite.policy.refund_due(&step, &d, status),
            r["refund"].as_bool().unwrap(),
            "{}",
            r["name"]
        );
        n += 1;
    }
    assert!(n > 0);
}

#[test]
fn invalid_documents() {
    let client = Client::open("memory://").unwrap();
    let limiters = vec![
        client.limiter("5/minute").unwrap(),
        client.limiter("10/second").unwrap(),
    ];
    let v = vectors();
    let mut n = 0;
    for i in v["invalid"].as_array().unwrap() {
        let doc = i["document"].as_str().unwrap();
        let want = i["error"].as_str().unwrap();
        match Policy::from_document(doc, limiters.clone()) {
            Ok(_) => panic!("accepted: {doc}"),
            Err(e) => {
                assert!(matches!(e, polylimit::Error::InvalidArgument(_)), "{doc}: {e:?}");
                assert!(
                    e.message().contains(want),
                    "{doc}\nmessage: {}\nwanted: {want}",
                    e.message()
                );
            }
        }
        n += 1;
    }
    assert!(n > 0);
}
