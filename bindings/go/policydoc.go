package polylimit

import (
	"encoding/json"
	"strconv"
)

// PolicyDocument is a policy document built in code (docs/policy.md): what
// a policy file can say, with the same fields, as Go values. It is encoded
// as JSON (JSON) and handed to the library, which checks it as it checks a
// file: NewLivePolicyFromDocument, LivePolicy.ReloadDocument,
// NewHTTPPolicyFromDocument and httplimit.FromPolicyDocument take it.
// Zero values are left out (the library's defaults apply).
type PolicyDocument struct {
	Version        int                   `json:"version,omitempty"` // 0: 1
	Prefix         string                `json:"prefix,omitempty"`  // the Redis key prefix of the document's limits
	TrustedProxies []string              `json:"trusted_proxies,omitempty"`
	IPv4Prefix     *int                  `json:"ipv4_prefix,omitempty"` // nil: 32
	IPv6Prefix     *int                  `json:"ipv6_prefix,omitempty"` // nil: 64
	APIKeyHeader   string                `json:"api_key_header,omitempty"`
	Exempt         []string              `json:"exempt,omitempty"` // path globs never limited
	Allow          *PolicyLists          `json:"allow,omitempty"`
	Deny           *PolicyLists          `json:"deny,omitempty"`
	SendHeaders    *bool                 `json:"send_headers,omitempty"` // nil: true
	OnError        string                `json:"on_error,omitempty"`     // "unavailable" or "allow"
	Plans          map[string]PolicyPlan `json:"plans,omitempty"`
	DefaultPlan    string                `json:"default_plan,omitempty"`
	Tenants        map[string]string     `json:"tenants,omitempty"` // tenant -> plan
	// Resolver: the application places the tenants Tenants does not name
	// (WithPlanResolver); &PolicyResolver{} takes the defaults.
	Resolver *PolicyResolver `json:"resolver,omitempty"`
	Rules    []PolicyRule    `json:"rules"`
}

// PolicyPlan is a plan's limits: limit name -> rate spec ("10/minute").
type PolicyPlan map[string]string

// PolicyLists are the allow and deny lists.
type PolicyLists struct {
	IPs     []string `json:"ips,omitempty"`      // addresses and CIDRs
	APIKeys []string `json:"api_keys,omitempty"` // "sha256:<hex>" or the key itself
	Users   []string `json:"users,omitempty"`
	Tenants []string `json:"tenants,omitempty"`
}

// PolicyResolver is the resolver table; zero fields take the defaults
// (50 ms, 60000 ms, 10000 tenants).
type PolicyResolver struct {
	TimeoutMS  int `json:"timeout_ms,omitempty"`
	CacheTTLMS int `json:"cache_ttl_ms,omitempty"`
	CacheSize  int `json:"cache_size,omitempty"`
}

// PolicyRule is one rule; the first whose paths (or routes) and methods
// match decides. It has a Limit ("10/minute", "plan", "plan:<name>",
// "none") or a Limiter (the index of one of the application's limiters).
type PolicyRule struct {
	Name         string      `json:"name"`
	Paths        []string    `json:"paths,omitempty"`
	Routes       []string    `json:"routes,omitempty"`
	Methods      []string    `json:"methods,omitempty"`
	Limiter      *int        `json:"limiter,omitempty"`
	Limit        string      `json:"limit,omitempty"`
	Algorithm    string      `json:"algorithm,omitempty"` // with Limit: "sliding_log", "gcra", ...
	Key          PolicyKey   `json:"key,omitempty"`       // nil: "ip"
	Credential   *bool       `json:"credential,omitempty"`
	Cost         *PolicyCost `json:"cost,omitempty"` // nil: 1
	OnMissingKey string      `json:"on_missing_key,omitempty"`
	CountWhen    CountWhen   `json:"count_when,omitempty"` // nil: "all"
}

// PolicyKey is a rule's key: PolicyKey{"user+route"} is one composition
// (encoded as a string), PolicyKey{"api_key", "ip"} alternatives, the first
// the request has (a list).
type PolicyKey []string

// MarshalJSON encodes one composition as a string, several as a list.
func (k PolicyKey) MarshalJSON() ([]byte, error) {
	if len(k) == 1 {
		return json.Marshal(k[0])
	}
	return json.Marshal([]string(k))
}

// UnmarshalJSON reads a string or a list of strings.
func (k *PolicyKey) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*k = PolicyKey{s}
		return nil
	}
	return json.Unmarshal(b, (*[]string)(k))
}

// PolicyCost is a rule's cost: Units, a fixed number (encoded as a number),
// or, with Header, the request's header value, Default when it has none,
// at most Max (encoded as {"header", "default", "max"}; zero: the library's
// defaults).
type PolicyCost struct {
	Units   int64
	Header  string
	Default int64
	Max     int64
}

type policyCostHeader struct {
	Header  string `json:"header"`
	Default int64  `json:"default,omitempty"`
	Max     int64  `json:"max,omitempty"`
}

// MarshalJSON encodes Units as a number, or the header form.
func (c PolicyCost) MarshalJSON() ([]byte, error) {
	if c.Header == "" {
		return json.Marshal(c.Units)
	}
	return json.Marshal(policyCostHeader{c.Header, c.Default, c.Max})
}

// UnmarshalJSON reads a number or the header form.
func (c *PolicyCost) UnmarshalJSON(b []byte) error {
	var n int64
	if err := json.Unmarshal(b, &n); err == nil {
		*c = PolicyCost{Units: n}
		return nil
	}
	var h policyCostHeader
	if err := json.Unmarshal(b, &h); err != nil {
		return err
	}
	*c = PolicyCost{Header: h.Header, Default: h.Default, Max: h.Max}
	return nil
}

// CountWhen is which responses keep their units: CountWhen{"all"},
// CountWhen{"failures"} (status >= 400), CountWhen{"successes"}, or a list
// of statuses, classes and ranges: CountWhen{"401", "5xx", "400-403"}
// (statuses are encoded as numbers).
type CountWhen []string

// MarshalJSON encodes "all", "failures" or "successes" alone as a string,
// anything else as a list, its whole numbers as numbers.
func (w CountWhen) MarshalJSON() ([]byte, error) {
	if len(w) == 1 && (w[0] == "all" || w[0] == "failures" || w[0] == "successes") {
		return json.Marshal(w[0])
	}
	items := make([]any, len(w))
	for i, s := range w {
		if n, err := strconv.Atoi(s); err == nil {
			items[i] = n
		} else {
			items[i] = s
		}
	}
	return json.Marshal(items)
}

// UnmarshalJSON reads a string or a list of statuses and strings.
func (w *CountWhen) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*w = CountWhen{s}
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(b, &items); err != nil {
		return err
	}
	out := make(CountWhen, 0, len(items))
	for _, it := range items {
		var n int
		if err := json.Unmarshal(it, &n); err == nil {
			out = append(out, strconv.Itoa(n))
			continue
		}
		if err := json.Unmarshal(it, &s); err != nil {
			return err
		}
		out = append(out, s)
	}
	*w = out
	return nil
}

// JSON returns the document's text, as the library reads it (indented: an
// error's line is the field's).
func (d PolicyDocument) JSON() (string, error) {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return "", err
	}
	return string(b), nil
}
