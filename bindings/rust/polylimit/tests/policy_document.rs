//! The policy document in code (polylimit::policy::PolicyDocument): the
//! guide's example policy built in code decides every request as the file
//! does; a built document with an error is refused with the core's message;
//! a live policy without a plan resolver refuses a reload that adds a
//! resolver table and keeps its policy. On memory:// clients.

use polylimit::policy::{Action, CountWhen, Lists, PolicyDocument, Request, Rule};
use polylimit::{Algorithm, Client, LivePolicy, Policy};

/// docs/examples/policy.toml, in code.
fn example() -> PolicyDocument {
    PolicyDocument::new()
        .version(1)
        .prefix("shop")
        .trusted_proxies(["10.0.0.0/8"])
        .default_plan("free")
        .plan("free", [("api", "10/minute"), ("search", "2/second")])
        .plan("pro", [("api", "100/minute"), ("search", "10/second")])
        .plan(
            "enterprise",
            [("api", "1000/minute; 50/second"), ("search", "100/second")],
        )
        .tenant("acme", "pro")
        .tenant("initech", "enterprise")
        .deny(Lists::new().ips(["203.0.113.0/24"]))
        .rule(Rule::new("health").paths(["/healthz"]).limit("none"))
        .rule(
            Rule::new("login")
                .paths(["/login"])
                .methods(["POST"])
                .key("ip")
                .limit("5/minute")
                .count_when(CountWhen::Failures),
        )
        .rule(
            Rule::new("search")
                .paths(["/api/search*"])
                .key("tenant")
                .limit("plan")
                .algorithm(Algorithm::Gcra),
        )
        .rule(Rule::new("api").paths(["/api/*"]).key("tenant").limit("plan"))
}

fn example_file() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../docs/examples/policy.toml");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// One request: method, path, peer, X-Forwarded-For, tenant.
type Case = (
    &'static str,
    &'static str,
    &'static str,
    Option<&'static str>,
    Option<&'static str>,
);

/// What a policy does with a request: the step (action, status, rule name,
/// key, cost, the limiter's plan) and, for a checked one, the answer's
/// status and headers after two checks.
fn decide(policy: &Policy, case: Case) -> String {
    let (method, path, peer, forwarded, tenant) = case;
    let headers = policy.header_values(|name| {
        (name == "x-forwarded-for")
            .then_some(forwarded)
            .flatten()
            .map(|v| v.as_bytes().to_vec())
    });
    let headers: Vec<Option<&[u8]>> = headers.iter().map(|h| h.as_deref()).collect();
    let request = Request {
        method,
        path: path.as_bytes(),
        peer: Some(peer),
        headers: &headers,
        tenant,
        ..Request::default()
    };
    let step = policy.prepare(&request).unwrap();
    let rule = step.rule().map(|i| policy.rule_names()[i].clone());
    let mut out = format!(
        "{:?} status={} rule={:?} key={} cost={} plan={:?}",
        step.action(),
        step.status(),
        rule,
        String::from_utf8_lossy(step.key()),
        step.cost(),
        policy.limiter_plan(&step),
    );
    if step.action() == Action::Check {
        let limiter = policy.limiter(&step).expect("the step's limiter");
        for _ in 0..2 {
            let d = limiter.check(step.key(), step.cost()).unwrap();
            let a = policy.answer(&step, Some(&d)).unwrap();
            out += &format!(" | {} {:?}", a.status, a.headers);
        }
    } else {
        let a = policy.answer(&step, None).unwrap();
        out += &format!(" | {} {:?}", a.status, a.headers);
    }
    out
}

#[test]
fn the_example_in_code_decides_as_the_file() {
    let mut cases: Vec<Case> = Vec::new();
    for tenant in [Some("acme"), Some("initech"), Some("globex"), None] {
        for path in ["/api/orders", "/api/search"] {
            cases.push(("GET", path, "192.0.2.1", None, tenant));
        }
    }
    cases.push(("POST", "/login", "10.0.0.1", Some("198.51.100.7"), None));
    cases.push(("GET", "/login", "10.0.0.1", Some("198.51.100.7"), None));
    cases.push(("GET", "/healthz", "192.0.2.1", None, Some("acme")));
    cases.push(("GET", "/api/orders", "10.0.0.1", Some("203.0.113.9"), Some("acme")));

    // Each policy on a client of its own: the same counts in each.
    let file = Policy::load(&Client::open("memory://").unwrap(), &example_file(), Vec::new()).unwrap();
    let code = Policy::load(&Client::open("memory://").unwrap(), &example(), Vec::new()).unwrap();
    assert_eq!(file.rule_names(), code.rule_names());
    assert_eq!(file.header_names(), code.header_names());
    let mut checked = 0;
    for case in cases {
        let (a, b) = (decide(&file, case), decide(&code, case));
        assert_eq!(a, b, "{case:?}");
        checked += usize::from(a.starts_with("Check"));
        // Spot checks that the comparison sees what it should.
        match case {
            ("GET", "/api/orders", "192.0.2.1", None, Some("initech")) => {
                assert!(
                    a.contains("key=tenant:initech") && a.contains("plan=Some(\"enterprise\")"),
                    "{a}"
                );
                assert!(a.contains("q=1000"), "{a}");
            }
            ("POST", "/login", ..) => assert!(a.contains("key=ip:198.51.100.7"), "{a}"),
            ("GET", "/api/search", _, None, None) => assert!(a.starts_with("Respond status=401"), "{a}"),
            (_, "/healthz", ..) => assert!(a.starts_with("Proceed"), "{a}"),
            (_, _, _, Some("203.0.113.9"), _) => assert!(a.starts_with("Respond status=403"), "{a}"),
            _ => {}
        }
    }
    assert_eq!(checked, 7, "six with a tenant, the login");

    // A live policy takes the built document too, and reloads to it.
    let client = Client::open("memory://").unwrap();
    let live = LivePolicy::new(&client, &example()).unwrap();
    live.reload(&example().plan("free", [("api", "20/minute"), ("search", "2/second")]))
        .unwrap();
    assert_eq!(live.generation(), 2);
    let globex = ("GET", "/api/orders", "192.0.2.1", None, Some("globex"));
    assert!(decide(&live.current(), globex).contains("q=20"));
}

#[test]
fn a_built_document_with_an_error_is_refused_with_the_cores_message() {
    let client = Client::open("memory://").unwrap();
    let bad = example().rule(Rule::new("extra").limit("5/fortnight"));
    let err = Policy::load(&client, &bad, Vec::new()).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("rules[4]") && msg.contains("fortnight"), "{msg}");
    // The core's message, as for the same text.
    let text = Policy::load(&client, &bad.to_json(), Vec::new()).unwrap_err();
    assert_eq!(msg, text.to_string());
    assert_eq!(LivePolicy::new(&client, &bad).unwrap_err().to_string(), msg);
    let live = LivePolicy::new(&client, &example()).unwrap();
    assert_eq!(live.reload(&bad).unwrap_err().to_string(), msg);
    assert_eq!(live.generation(), 1);
    // A plan a rule takes from plans is missing from one plan.
    let err = Policy::load(&client, &example().plan("pro", [("api", "100/minute")]), Vec::new()).unwrap_err();
    assert!(err.to_string().contains("search"), "{err}");
}

#[test]
fn a_reload_adding_a_resolver_table_needs_a_resolver() {
    let client = Client::open("memory://").unwrap();
    let live = LivePolicy::new(&client, &example()).unwrap();
    let with_resolver = example_file() + "\n[resolver]\ntimeout_ms = 50\n";
    let err = live.reload(&with_resolver).unwrap_err();
    assert!(err.to_string().contains("gave no plan resolver"), "{err}");
    assert_eq!(live.generation(), 1);
    assert!(live.last_error().unwrap().contains("gave no plan resolver"));
    assert_eq!(live.current().resolver_timeout(), None, "the old policy stays");
    // From code too, and at creation.
    let built = example().resolver(polylimit::policy::Resolver::new());
    assert!(live
        .reload(&built)
        .unwrap_err()
        .to_string()
        .contains("gave no plan resolver"));
    let err = LivePolicy::new(&client, &built).unwrap_err();
    assert!(err.to_string().contains("gave no plan resolver"), "{err}");
    // Without the table the reload is accepted.
    live.reload(&example_file()).unwrap();
    assert_eq!(live.generation(), 2);
}
