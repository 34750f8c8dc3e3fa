// polylimit/prom-client: the counters of polylimit Clients, and of HTTP
// policies, in a prom-client Registry, for apps that already serve
// prom-client's /metrics.
//
//   const promClient = require('prom-client');
//   const { registerPolylimit } = require('polylimit/prom-client');
//   registerPolylimit(promClient.register, sessions, api);  // named clients
//   registerPolylimit(promClient.register, client, middleware.policy);  // and a policy's
//
// The metrics are the library's own (client.metrics()): the same names,
// help texts and types as every language's export - polylimit_checks_total,
// ..., polylimit_evicting_nodes (a gauge), polylimit_check_latency_seconds
// (a histogram) - labelled client="<name>" when the clients are named.
// Several clients go into one call: each needs a distinct name. An HTTP
// policy (an HttpPolicy, or a middleware with its `policy`) adds
// polylimit_http_requests_total{rule,outcome} (policy.metrics()): one series
// per rule and outcome, never per key; the rules of several policies in one
// call need distinct names. Every scrape reads the counters anew; a closed
// client fails the scrape (ClosedError) rather than dropping its series
// silently.
const { Client, HttpPolicy, LivePolicy, prometheus } = require('./index');

function unescapeLabel(text) {
  return text.replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
}

function parseLabels(text) {
  const labels = {};
  const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
  let m;
  while ((m = re.exec(text)) !== null) labels[m[1]] = unescapeLabel(m[2]);
  return labels;
}

// The text format as families: name -> { help, type, samples }.
function parse(text) {
  const families = new Map();
  const family = (name) => {
    if (!families.has(name)) families.set(name, { help: '', type: 'untyped', samples: [] });
    return families.get(name);
  };
  for (const line of text.split('\n')) {
    let m;
    if ((m = /^# HELP (\S+) (.*)$/.exec(line))) {
      family(m[1]).help = unescapeLabel(m[2]);
    } else if ((m = /^# TYPE (\S+) (\S+)$/.exec(line))) {
      family(m[1]).type = m[2];
    } else if ((m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line))) {
      const metricName = m[1];
      const base = families.has(metricName) ? metricName : metricName.replace(/_(bucket|sum|count)$/, '');
      const value = m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : Number(m[3]);
      family(base).samples.push({ metricName, labels: parseLabels(m[2] || ''), value });
    }
  }
  return families;
}

// Registers one prom-client metric per family of the clients' export;
// returns them (registry.removeSingleMetric(name) takes one out again).
function registerPolylimit(registry, ...sources) {
  if (!registry || typeof registry.registerMetric !== 'function')
    throw new TypeError('registerPolylimit needs a prom-client Registry');
  const clients = [];
  const policies = [];
  for (const s of sources) {
    if (s instanceof Client) clients.push(s);
    else if (s instanceof HttpPolicy || s instanceof LivePolicy) policies.push(s);
    else if (s && (s.policy instanceof HttpPolicy || s.policy instanceof LivePolicy)) policies.push(s.policy);
    else throw new TypeError('registerPolylimit needs polylimit Clients or HTTP policies');
  }
  if (sources.length === 0)
    throw new TypeError('registerPolylimit needs one or more polylimit Clients or HTTP policies');
  const scrape = () => {
    const texts = [];
    if (clients.length > 0) texts.push(clients.length === 1 ? clients[0].metrics() : prometheus(...clients));
    for (const p of policies) texts.push(p.metrics());
    // One family per name: the policies' samples join in order.
    const merged = new Map();
    for (const text of texts)
      for (const [name, f] of parse(text)) {
        const m = merged.get(name);
        if (m === undefined) merged.set(name, f);
        else m.samples.push(...f.samples);
      }
    return merged;
  };
  // prom-client asks every metric in one synchronous pass: read once per pass.
  let current = null;
  const families = () => {
    if (current === null) {
      current = scrape();
      queueMicrotask(() => (current = null));
    }
    return current;
  };
  const metrics = [];
  for (const [name, learned] of scrape()) {
    // learns the names; a bad setup fails here
    const metric = {
      name,
      help: learned.help,
      type: learned.type,
      aggregator: 'sum',
      get: async () => {
        const f = families().get(name) || { samples: [] };
        return {
          // prom-client renames counters for OpenMetrics (without _total,
          // which it adds to each sample): answer with its current name.
          name: metric.name,
          help: learned.help,
          type: learned.type,
          aggregator: 'sum',
          // Counters keep prom-client's own name (it adds _total for
          // OpenMetrics); histogram samples need their suffixed names.
          values: f.samples.map((s) =>
            learned.type === 'histogram'
              ? { metricName: s.metricName, labels: s.labels, value: s.value }
              : { labels: s.labels, value: s.value },
          ),
        };
      },
      reset() {},
    };
    registry.registerMetric(metric);
    metrics.push(metric);
  }
  return metrics;
}

module.exports = { registerPolylimit };
