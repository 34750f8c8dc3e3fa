//! The policy document in code: [`PolicyDocument`], written as the JSON the
//! core reads (docs/policy.md). What a policy file can say, these types can
//! say; the core stays the only judge of the values (an error names the
//! field, and the line of the JSON text, as for a file).

use crate::Algorithm;
use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

/// A policy document: [`Policy::load`](super::Policy::load),
/// [`LivePolicy::new`](crate::LivePolicy::new), [`LivePolicy::reload`](crate::LivePolicy::reload)
/// and every other function that takes a document take `&doc` as they take
/// a TOML or JSON string.
///
/// ```
/// use polylimit::policy::{CountWhen, Lists, PolicyDocument, Rule};
/// let doc = PolicyDocument::new()
///     .prefix("shop")
///     .trusted_proxies(["10.0.0.0/8"])
///     .plan("free", [("api", "10/minute")])
///     .plan("pro", [("api", "100/minute")])
///     .default_plan("free")
///     .tenant("acme", "pro")
///     .deny(Lists::new().ips(["203.0.113.0/24"]))
///     .rule(Rule::new("login").paths(["/login"]).methods(["POST"]).key("ip").limit("5/minute")
///         .count_when(CountWhen::Failures))
///     .rule(Rule::new("api").paths(["/api/*"]).key("tenant").limit("plan"));
/// assert!(doc.to_json().starts_with(r#"{"prefix":"shop","#));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyDocument {
    version: Option<i64>,
    prefix: Option<String>,
    trusted_proxies: Option<Vec<String>>,
    ipv4_prefix: Option<u8>,
    ipv6_prefix: Option<u8>,
    api_key_header: Option<String>,
    exempt: Option<Vec<String>>,
    allow: Option<Lists>,
    deny: Option<Lists>,
    send_headers: Option<bool>,
    on_error: Option<OnError>,
    plans: Vec<(String, Vec<(String, String)>)>,
    default_plan: Option<String>,
    tenants: Vec<(String, String)>,
    resolver: Option<Resolver>,
    rules: Vec<Rule>,
}

/// The `allow` and `deny` lists: client addresses (CIDRs), API keys
/// (`sha256:<hex>` or the key itself), users and tenants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lists {
    ips: Vec<String>,
    api_keys: Vec<String>,
    users: Vec<String>,
    tenants: Vec<String>,
}

/// What a request gets when its check fails: the document's `on_error`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnError {
    /// 503 (the default).
    Unavailable,
    /// The request goes on, without rate-limit headers.
    Allow,
}

/// The application's plan resolver's bounds: the document's `resolver`
/// (its presence asks the application's resolver for tenants the document
/// does not name).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolver {
    timeout_ms: Option<u64>,
    cache_ttl_ms: Option<u64>,
    cache_size: Option<u64>,
}

/// A rule: what it matches, the client it counts (its key) and its limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    name: String,
    paths: Option<Vec<String>>,
    routes: Option<Vec<String>>,
    methods: Option<Vec<String>>,
    limit: Option<Limit>,
    algorithm: Option<Algorithm>,
    key: Option<Key>,
    credential: Option<bool>,
    cost: Option<Cost>,
    on_missing_key: Option<OnMissingKey>,
    count_when: Option<CountWhen>,
}

/// A rule's limit. From a string: `"plan"`, `"plan:<name>"` and `"none"`
/// are those variants, anything else a rate spec.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Limit {
    /// The rule's own limit, a rate spec (`"10/minute"`, `"5/s burst 20"`).
    Rate(String),
    /// The tenant's plan's limit named like the rule.
    Plan,
    /// The tenant's plan's limit of this name.
    PlanLimit(String),
    /// Exempt what the rule matches.
    None,
    /// The application's limiter of this index (given with the document).
    Limiter(usize),
}

/// A rule's key: one composition of parts (`user+route`) or alternatives,
/// the first present one counting (`["api_key", "ip"]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Key {
    alternatives: Vec<String>,
}

/// A request's cost: a number of units, or a header's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cost {
    /// This many units.
    Units(i64),
    /// The value of `header` (1 to `max`), `default` when absent.
    Header {
        /// The header's name.
        header: String,
        /// The cost without the header.
        default: Option<i64>,
        /// The largest accepted value.
        max: Option<i64>,
    },
}

/// What a request without its key gets: the rule's `on_missing_key`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnMissingKey {
    /// 400, or 401 for a credential (the default).
    Reject,
    /// It goes on unchecked.
    Skip,
}

/// Which responses keep their units (the others are refunded): the rule's
/// `count_when`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CountWhen {
    /// Every response (the default).
    All,
    /// Status 400 and above.
    Failures,
    /// Below 400.
    Successes,
    /// These statuses, classes and ranges.
    Statuses(Vec<Status>),
}

/// A status in [`CountWhen::Statuses`]: `401` or `"401"`, `"5xx"`, `"400-403"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// One status.
    Code(u16),
    /// A status, class or range as text.
    Text(String),
}

/// What the functions that take a policy document take, by reference: a
/// TOML or JSON string (`str`, `String`), or a [`PolicyDocument`] (written
/// as JSON for the call).
pub trait AsDocument {
    /// The document's text.
    fn as_document(&self) -> Cow<'_, str>;
}

impl AsDocument for str {
    fn as_document(&self) -> Cow<'_, str> {
        Cow::Borrowed(self)
    }
}

impl AsDocument for String {
    fn as_document(&self) -> Cow<'_, str> {
        Cow::Borrowed(self)
    }
}

impl AsDocument for PolicyDocument {
    fn as_document(&self) -> Cow<'_, str> {
        Cow::Owned(self.to_json())
    }
}

impl<T: AsDocument + ?Sized> AsDocument for &T {
    fn as_document(&self) -> Cow<'_, str> {
        (**self).as_document()
    }
}

fn strings<I, S>(items: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    items.into_iter().map(Into::into).collect()
}

impl PolicyDocument {
    /// An empty document (every field at the core's default).
    pub fn new() -> PolicyDocument {
        PolicyDocument::default()
    }

    /// `version` (1).
    pub fn version(mut self, version: i64) -> Self {
        self.version = Some(version);
        self
    }

    /// `prefix`: the Redis key prefix of the document's own limits.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// `trusted_proxies`: addresses and CIDRs whose `X-Forwarded-For` is believed.
    pub fn trusted_proxies<I: IntoIterator<Item = S>, S: Into<String>>(mut self, proxies: I) -> Self {
        self.trusted_proxies = Some(strings(proxies));
        self
    }

    /// `ipv4_prefix`: the IPv4 network an `ip` key stands for (32).
    pub fn ipv4_prefix(mut self, bits: u8) -> Self {
        self.ipv4_prefix = Some(bits);
        self
    }

    /// `ipv6_prefix`: the IPv6 network an `ip` key stands for (64).
    pub fn ipv6_prefix(mut self, bits: u8) -> Self {
        self.ipv6_prefix = Some(bits);
        self
    }

    /// `api_key_header`: the header the lists' `api_keys` are read from.
    pub fn api_key_header(mut self, header: impl Into<String>) -> Self {
        self.api_key_header = Some(header.into());
        self
    }

    /// `exempt`: path globs never limited.
    pub fn exempt<I: IntoIterator<Item = S>, S: Into<String>>(mut self, paths: I) -> Self {
        self.exempt = Some(strings(paths));
        self
    }

    /// `allow`: requests that go on unchecked (after `deny`).
    pub fn allow(mut self, lists: Lists) -> Self {
        self.allow = Some(lists);
        self
    }

    /// `deny`: requests answered 403, before anything else.
    pub fn deny(mut self, lists: Lists) -> Self {
        self.deny = Some(lists);
        self
    }

    /// `send_headers`: the rate-limit headers on admitted responses too (true).
    pub fn send_headers(mut self, yes: bool) -> Self {
        self.send_headers = Some(yes);
        self
    }

    /// `on_error`: what a request gets when its check fails.
    pub fn on_error(mut self, on_error: OnError) -> Self {
        self.on_error = Some(on_error);
        self
    }

    /// A plan: its limits by name (`[("api", "10/minute")]`); a plan of
    /// the same name given before is replaced.
    pub fn plan<I, K, V>(mut self, name: impl Into<String>, limits: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        let name = name.into();
        let limits = limits.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        match self.plans.iter_mut().find(|(n, _)| *n == name) {
            Some(plan) => plan.1 = limits,
            None => self.plans.push((name, limits)),
        }
        self
    }

    /// `default_plan`: the plan of a tenant no one places.
    pub fn default_plan(mut self, plan: impl Into<String>) -> Self {
        self.default_plan = Some(plan.into());
        self
    }

    /// A tenant's plan (`tenants`); a tenant given before is moved.
    pub fn tenant(mut self, tenant: impl Into<String>, plan: impl Into<String>) -> Self {
        let (tenant, plan) = (tenant.into(), plan.into());
        match self.tenants.iter_mut().find(|(t, _)| *t == tenant) {
            Some(t) => t.1 = plan,
            None => self.tenants.push((tenant, plan)),
        }
        self
    }

    /// Tenants and their plans ([`tenant`](Self::tenant) for each).
    pub fn tenants<I, T, P>(self, tenants: I) -> Self
    where
        I: IntoIterator<Item = (T, P)>,
        T: Into<String>,
        P: Into<String>,
    {
        tenants.into_iter().fold(self, |d, (t, p)| d.tenant(t, p))
    }

    /// `resolver`: the application's resolver places the tenants the
    /// document does not name (a live policy needs one).
    pub fn resolver(mut self, resolver: Resolver) -> Self {
        self.resolver = Some(resolver);
        self
    }

    /// Adds a rule after those given before (the first that matches decides).
    pub fn rule(mut self, rule: Rule) -> Self {
        self.rules.push(rule);
        self
    }

    /// The document as JSON (what the core reads).
    pub fn to_json(&self) -> String {
        let mut o = Obj::new();
        if let Some(v) = self.version {
            o.raw("version", v.to_string());
        }
        o.opt_str("prefix", self.prefix.as_deref());
        o.opt_list("trusted_proxies", self.trusted_proxies.as_deref());
        if let Some(b) = self.ipv4_prefix {
            o.raw("ipv4_prefix", b.to_string());
        }
        if let Some(b) = self.ipv6_prefix {
            o.raw("ipv6_prefix", b.to_string());
        }
        o.opt_str("api_key_header", self.api_key_header.as_deref());
        o.opt_list("exempt", self.exempt.as_deref());
        if let Some(l) = &self.allow {
            o.raw("allow", l.json());
        }
        if let Some(l) = &self.deny {
            o.raw("deny", l.json());
        }
        if let Some(b) = self.send_headers {
            o.raw("send_headers", b.to_string());
        }
        if let Some(e) = self.on_error {
            o.str(
                "on_error",
                match e {
                    OnError::Unavailable => "unavailable",
                    OnError::Allow => "allow",
                },
            );
        }
        if !self.plans.is_empty() {
            let mut plans = Obj::new();
            for (name, limits) in &self.plans {
                let mut p = Obj::new();
                for (k, v) in limits {
                    p.str(k, v);
                }
                plans.raw(name, p.end());
            }
            o.raw("plans", plans.end());
        }
        o.opt_str("default_plan", self.default_plan.as_deref());
        if !self.tenants.is_empty() {
            let mut t = Obj::new();
            for (tenant, plan) in &self.tenants {
                t.str(tenant, plan);
            }
            o.raw("tenants", t.end());
        }
        if let Some(r) = &self.resolver {
            let mut ro = Obj::new();
            for (k, v) in [
                ("timeout_ms", r.timeout_ms),
                ("cache_ttl_ms", r.cache_ttl_ms),
                ("cache_size", r.cache_size),
            ] {
                if let Some(v) = v {
                    ro.raw(k, v.to_string());
                }
            }
            o.raw("resolver", ro.end());
        }
        o.raw(
            "rules",
            format!("[{}]", self.rules.iter().map(Rule::json).collect::<Vec<_>>().join(",")),
        );
        o.end()
    }
}

impl fmt::Display for PolicyDocument {
    /// The document as JSON.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json())
    }
}

impl Lists {
    /// Empty lists.
    pub fn new() -> Lists {
        Lists::default()
    }

    /// `ips`: addresses and CIDRs.
    pub fn ips<I: IntoIterator<Item = S>, S: Into<String>>(mut self, ips: I) -> Self {
        self.ips = strings(ips);
        self
    }

    /// `api_keys`: `sha256:<64 hex>` or the key itself.
    pub fn api_keys<I: IntoIterator<Item = S>, S: Into<String>>(mut self, keys: I) -> Self {
        self.api_keys = strings(keys);
        self
    }

    /// `users`: user ids.
    pub fn users<I: IntoIterator<Item = S>, S: Into<String>>(mut self, users: I) -> Self {
        self.users = strings(users);
        self
    }

    /// `tenants`: tenant ids.
    pub fn tenants<I: IntoIterator<Item = S>, S: Into<String>>(mut self, tenants: I) -> Self {
        self.tenants = strings(tenants);
        self
    }

    fn json(&self) -> String {
        let mut o = Obj::new();
        for (k, v) in [
            ("ips", &self.ips),
            ("api_keys", &self.api_keys),
            ("users", &self.users),
            ("tenants", &self.tenants),
        ] {
            if !v.is_empty() {
                o.raw(k, json_list(v));
            }
        }
        o.end()
    }
}

impl Resolver {
    /// The core's defaults (50 ms, 60 s, 10000 tenants).
    pub fn new() -> Resolver {
        Resolver::default()
    }

    /// `timeout_ms`: the resolver's deadline (whole milliseconds, rounded up).
    pub fn timeout(mut self, d: Duration) -> Self {
        self.timeout_ms = Some(millis(d));
        self
    }

    /// `cache_ttl_ms`: how long an answer is kept (whole milliseconds, rounded up).
    pub fn cache_ttl(mut self, d: Duration) -> Self {
        self.cache_ttl_ms = Some(millis(d));
        self
    }

    /// `cache_size`: at most this many tenants cached.
    pub fn cache_size(mut self, n: u64) -> Self {
        self.cache_size = Some(n);
        self
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX)
}

impl Rule {
    /// A rule named `name` (every path, the key `ip`, until told).
    pub fn new(name: impl Into<String>) -> Rule {
        Rule {
            name: name.into(),
            paths: None,
            routes: None,
            methods: None,
            limit: None,
            algorithm: None,
            key: None,
            credential: None,
            cost: None,
            on_missing_key: None,
            count_when: None,
        }
    }

    /// `paths`: path globs (`*` any run, `/` too; `?` one character).
    pub fn paths<I: IntoIterator<Item = S>, S: Into<String>>(mut self, paths: I) -> Self {
        self.paths = Some(strings(paths));
        self
    }

    /// `routes`: route templates, matched exactly.
    pub fn routes<I: IntoIterator<Item = S>, S: Into<String>>(mut self, routes: I) -> Self {
        self.routes = Some(strings(routes));
        self
    }

    /// `methods`: any case; another method goes on to the next rule.
    pub fn methods<I: IntoIterator<Item = S>, S: Into<String>>(mut self, methods: I) -> Self {
        self.methods = Some(strings(methods));
        self
    }

    /// `limit` (or `limiter`): `"10/minute"`, `"plan"`, `"plan:api"`,
    /// `"none"`, a [`Limit`].
    pub fn limit(mut self, limit: impl Into<Limit>) -> Self {
        self.limit = Some(limit.into());
        self
    }

    /// `limiter = index`: the application's limiter of that index.
    pub fn limiter(self, index: usize) -> Self {
        self.limit(Limit::Limiter(index))
    }

    /// `algorithm` of the rule's own or plan limit.
    pub fn algorithm(mut self, algorithm: Algorithm) -> Self {
        self.algorithm = Some(algorithm);
        self
    }

    /// `key`: `"tenant"`, `"user+route"`, or alternatives (`["api_key", "ip"]`).
    pub fn key(mut self, key: impl Into<Key>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// `credential`: whether a missing key is a missing credential (401).
    pub fn credential(mut self, yes: bool) -> Self {
        self.credential = Some(yes);
        self
    }

    /// `cost`: units (`5`) or a header's value ([`Cost::header`]).
    pub fn cost(mut self, cost: impl Into<Cost>) -> Self {
        self.cost = Some(cost.into());
        self
    }

    /// `on_missing_key`.
    pub fn on_missing_key(mut self, on: OnMissingKey) -> Self {
        self.on_missing_key = Some(on);
        self
    }

    /// `count_when`: which responses keep their units.
    pub fn count_when(mut self, when: CountWhen) -> Self {
        self.count_when = Some(when);
        self
    }

    fn json(&self) -> String {
        let mut o = Obj::new();
        o.str("name", &self.name);
        o.opt_list("paths", self.paths.as_deref());
        o.opt_list("routes", self.routes.as_deref());
        o.opt_list("methods", self.methods.as_deref());
        match &self.limit {
            None => {}
            Some(Limit::Limiter(i)) => o.raw("limiter", i.to_string()),
            Some(Limit::Rate(s)) => o.str("limit", s),
            Some(Limit::Plan) => o.str("limit", "plan"),
            Some(Limit::PlanLimit(name)) => o.str("limit", &format!("plan:{name}")),
            Some(Limit::None) => o.str("limit", "none"),
        }
        if let Some(a) = self.algorithm {
            o.str("algorithm", a.name());
        }
        if let Some(k) = &self.key {
            match k.alternatives.as_slice() {
                [one] => o.str("key", one),
                many => o.raw("key", json_list(many)),
            }
        }
        if let Some(c) = self.credential {
            o.raw("credential", c.to_string());
        }
        match &self.cost {
            None => {}
            Some(Cost::Units(n)) => o.raw("cost", n.to_string()),
            Some(Cost::Header { header, default, max }) => {
                let mut c = Obj::new();
                c.str("header", header);
                if let Some(d) = default {
                    c.raw("default", d.to_string());
                }
                if let Some(m) = max {
                    c.raw("max", m.to_string());
                }
                o.raw("cost", c.end());
            }
        }
        if let Some(m) = self.on_missing_key {
            o.str(
                "on_missing_key",
                match m {
                    OnMissingKey::Reject => "reject",
                    OnMissingKey::Skip => "skip",
                },
            );
        }
        match &self.count_when {
            None => {}
            Some(CountWhen::All) => o.str("count_when", "all"),
            Some(CountWhen::Failures) => o.str("count_when", "failures"),
            Some(CountWhen::Successes) => o.str("count_when", "successes"),
            Some(CountWhen::Statuses(list)) => {
                let items: Vec<String> = list
                    .iter()
                    .map(|s| match s {
                        Status::Code(n) => n.to_string(),
                        Status::Text(t) => json_str(t),
                    })
                    .collect();
                o.raw("count_when", format!("[{}]", items.join(",")));
            }
        }
        o.end()
    }
}

impl From<&str> for Limit {
    fn from(s: &str) -> Limit {
        match s {
            "plan" => Limit::Plan,
            "none" => Limit::None,
            _ => match s.strip_prefix("plan:") {
                Some(name) => Limit::PlanLimit(name.to_string()),
                None => Limit::Rate(s.to_string()),
            },
        }
    }
}

impl From<String> for Limit {
    fn from(s: String) -> Limit {
        Limit::from(s.as_str())
    }
}

impl Key {
    /// One composition of parts: `Key::all(["user", "route"])` is `user+route`.
    pub fn all<I: IntoIterator<Item = S>, S: Into<String>>(parts: I) -> Key {
        Key {
            alternatives: vec![strings(parts).join("+")],
        }
    }

    /// Alternatives, the first present one counting: `Key::first_of(["api_key", "ip"])`.
    pub fn first_of<I: IntoIterator<Item = K>, K: Into<Key>>(keys: I) -> Key {
        Key {
            alternatives: keys.into_iter().flat_map(|k| k.into().alternatives).collect(),
        }
    }
}

impl From<&str> for Key {
    fn from(s: &str) -> Key {
        Key {
            alternatives: vec![s.to_string()],
        }
    }
}

impl From<String> for Key {
    fn from(s: String) -> Key {
        Key { alternatives: vec![s] }
    }
}

impl<const N: usize> From<[&str; N]> for Key {
    /// Alternatives.
    fn from(alternatives: [&str; N]) -> Key {
        Key::first_of(alternatives)
    }
}

impl Cost {
    /// The value of `header`, without a default or a maximum until given.
    pub fn header(header: impl Into<String>) -> Cost {
        Cost::Header {
            header: header.into(),
            default: None,
            max: None,
        }
    }

    /// The cost when the header is absent.
    pub fn default_units(self, units: i64) -> Cost {
        match self {
            Cost::Header { header, max, .. } => Cost::Header {
                header,
                default: Some(units),
                max,
            },
            c => c,
        }
    }

    /// The largest value the header may give.
    pub fn max(self, units: i64) -> Cost {
        match self {
            Cost::Header { header, default, .. } => Cost::Header {
                header,
                default,
                max: Some(units),
            },
            c => c,
        }
    }
}

impl From<i64> for Cost {
    fn from(units: i64) -> Cost {
        Cost::Units(units)
    }
}

impl CountWhen {
    /// These statuses, classes and ranges: `CountWhen::statuses([401.into(), "5xx".into()])`.
    pub fn statuses<I: IntoIterator<Item = S>, S: Into<Status>>(statuses: I) -> CountWhen {
        CountWhen::Statuses(statuses.into_iter().map(Into::into).collect())
    }
}

impl From<u16> for Status {
    fn from(code: u16) -> Status {
        Status::Code(code)
    }
}

impl From<&str> for Status {
    fn from(s: &str) -> Status {
        Status::Text(s.to_string())
    }
}

/// A JSON object being written, in the order its fields are given.
struct Obj(String);

impl Obj {
    fn new() -> Obj {
        Obj(String::from("{"))
    }

    fn raw(&mut self, key: &str, value: String) {
        if self.0.len() > 1 {
            self.0.push(',');
        }
        self.0.push_str(&json_str(key));
        self.0.push(':');
        self.0.push_str(&value);
    }

    fn str(&mut self, key: &str, value: &str) {
        self.raw(key, json_str(value));
    }

    fn opt_str(&mut self, key: &str, value: Option<&str>) {
        if let Some(v) = value {
            self.str(key, v);
        }
    }

    fn opt_list(&mut self, key: &str, value: Option<&[String]>) {
        if let Some(v) = value {
            self.raw(key, json_list(v));
        }
    }

    fn end(mut self) -> String {
        self.0.push('}');
        self.0
    }
}

/// A JSON string literal.
fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_list(items: &[String]) -> String {
    format!("[{}]", items.iter().map(|s| json_str(s)).collect::<Vec<_>>().join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_every_field_as_json() {
        let doc = PolicyDocument::new()
            .version(1)
            .prefix("p\"q")
            .ipv4_prefix(24)
            .ipv6_prefix(56)
            .api_key_header("X-Key")
            .exempt(["/metrics"])
            .allow(Lists::new().users(["root"]))
            .deny(Lists::new().ips(["203.0.113.0/24"]).api_keys(["k"]).tenants(["bad"]))
            .send_headers(false)
            .on_error(OnError::Allow)
            .plan("free", [("api", "10/minute")])
            .plan("free", [("api", "20/minute")])
            .default_plan("free")
            .tenants([("a", "free"), ("a", "pro")])
            .resolver(Resolver::new().timeout(Duration::from_micros(1500)).cache_size(9))
            .rule(
                Rule::new("r")
                    .routes(["/u/{id}"])
                    .limit("plan:api")
                    .algorithm(Algorithm::Gcra)
                    .key(["api_key", "ip"])
                    .credential(true)
                    .cost(Cost::header("X-Cost").default_units(1).max(9))
                    .on_missing_key(OnMissingKey::Skip)
                    .count_when(CountWhen::statuses([Status::from(401), "5xx".into()])),
            )
            .rule(Rule::new("s").limiter(0).key(Key::all(["user", "route"])).cost(3));
        assert_eq!(
            doc.to_json(),
            concat!(
                r#"{"version":1,"prefix":"p\"q","ipv4_prefix":24,"ipv6_prefix":56,"api_key_header":"X-Key","#,
                r#""exempt":["/metrics"],"allow":{"users":["root"]},"#,
                r#""deny":{"ips":["203.0.113.0/24"],"api_keys":["k"],"tenants":["bad"]},"#,
                r#""send_headers":false,"on_error":"allow","plans":{"free":{"api":"20/minute"}},"#,
                r#""default_plan":"free","tenants":{"a":"pro"},"resolver":{"timeout_ms":2,"cache_size":9},"#,
                r#""rules":[{"name":"r","routes":["/u/{id}"],"limit":"plan:api","algorithm":"gcra","#,
                r#""key":["api_key","ip"],"credential":true,"cost":{"header":"X-Cost","default":1,"max":9},"#,
                r#""on_missing_key":"skip","count_when":[401,"5xx"]},"#,
                r#"{"name":"s","limiter":0,"key":"user+route","cost":3}]}"#
            )
        );
        assert_eq!(PolicyDocument::new().to_string(), r#"{"rules":[]}"#);
    }
}
