// Package promcollector exports the counters of polylimit Clients to
// Prometheus through client_golang: a prometheus.Collector.
//
//	a, err := polylimit.Open(url, polylimit.WithName("sessions"))
//	b, err := polylimit.Open(url2, polylimit.WithName("api"))
//	...
//	col, err := promcollector.New(a, b)
//	if err != nil { ... }
//	prometheus.MustRegister(col)
//	http.Handle("/metrics", promhttp.Handler())
//
// The metrics are the library's own (polylimit.PrometheusText): the same
// names, help texts and types as every language's export —
// polylimit_checks_total, polylimit_admitted_total, ...,
// polylimit_evicting_nodes (a gauge) and polylimit_check_latency_seconds (a
// histogram) — each labelled client="<name>" when the clients are named
// (polylimit.WithName). Several clients go into ONE Collector: each needs a
// distinct name, and two Collectors would describe the same metrics, which a
// registry refuses.
//
// The HTTP middleware's per-rule request counters (package httplimit;
// polylimit.HTTPPolicy.MetricsPrometheus) go into the same Collector:
// NewWithPolicies(clients, mw.Policy()) adds
// polylimit_http_requests_total{rule="login",outcome="denied"}: one series
// per rule and outcome (allowed, denied, missing_key, invalid, forbidden,
// errors), never per key. Several policies need distinct rule names.
//
// This package is the only one of the module that imports client_golang:
// with module graph pruning, a program that does not import it neither
// downloads nor compiles client_golang.
package promcollector

import (
	"fmt"
	"math"
	"sort"
	"strings"

	polylimit "github.com/polylimit/polylimit/bindings/go"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Collector is a prometheus.Collector for a fixed set of polylimit Clients.
// Each scrape reads the clients' counters anew. A scrape while a client is
// closed reports the error (the registry's Gather fails; promhttp answers
// 500 by default) rather than dropping the client's series silently.
type Collector struct {
	clients  []*polylimit.Client
	policies []*polylimit.HTTPPolicy
	descs    map[string]*prometheus.Desc // by metric family name
	labels   map[string][]string         // the variable label names of each family, in Desc order
	names    []string                    // family names, sorted, for Describe
}

// New returns a Collector for clients (at least one; with more than one,
// each needs a distinct name). It reads their counters once to learn the
// metrics; an error is the library's (polylimit.ErrInvalidArgument for a
// missing or repeated name, polylimit.ErrClosed for a closed client).
func New(clients ...*polylimit.Client) (*Collector, error) {
	return NewWithPolicies(clients)
}

// NewWithPolicies returns a Collector for clients (none, or as for New) and
// the request counters of HTTP policies (httplimit.Middleware.Policy).
func NewWithPolicies(clients []*polylimit.Client, policies ...*polylimit.HTTPPolicy) (*Collector, error) {
	families, err := gather(clients, policies)
	if err != nil {
		return nil, err
	}
	c := &Collector{
		clients:  append([]*polylimit.Client(nil), clients...),
		policies: append([]*polylimit.HTTPPolicy(nil), policies...),
		descs:    make(map[string]*prometheus.Desc, len(families)),
		labels:   make(map[string][]string, len(families)),
	}
	for name, mf := range families {
		var labels []string
		if ms := mf.GetMetric(); len(ms) > 0 {
			for _, lp := range ms[0].GetLabel() {
				labels = append(labels, lp.GetName())
			}
		}
		c.descs[name] = prometheus.NewDesc(name, mf.GetHelp(), labels, nil)
		c.labels[name] = labels
		c.names = append(c.names, name)
	}
	sort.Strings(c.names)
	return c, nil
}

// gather renders the clients' page and the policies' and parses them.
func gather(clients []*polylimit.Client, policies []*polylimit.HTTPPolicy) (map[string]*dto.MetricFamily, error) {
	var pages []string
	if len(clients) > 0 || len(policies) == 0 {
		text, err := polylimit.PrometheusText(clients...)
		if err != nil {
			return nil, err
		}
		pages = append(pages, text)
	}
	for _, p := range policies {
		text, err := p.MetricsPrometheus()
		if err != nil {
			return nil, err
		}
		pages = append(pages, text)
	}
	families := make(map[string]*dto.MetricFamily)
	for _, text := range pages {
		parser := expfmt.NewTextParser(model.LegacyValidation)
		fs, err := parser.TextToMetricFamilies(strings.NewReader(text))
		if err != nil {
			return nil, fmt.Errorf("promcollector: the library's exposition does not parse: %w", err)
		}
		for name, mf := range fs {
			if have, ok := families[name]; ok {
				have.Metric = append(have.Metric, mf.Metric...)
				continue
			}
			families[name] = mf
		}
	}
	return families, nil
}

// Describe sends the descriptors of every metric (prometheus.Collector).
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, name := range c.names {
		ch <- c.descs[name]
	}
}

// Collect reads the clients' counters and sends them (prometheus.Collector).
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	families, err := gather(c.clients, c.policies)
	if err != nil {
		for _, name := range c.names {
			ch <- prometheus.NewInvalidMetric(c.descs[name], err)
		}
		return
	}
	for _, name := range c.names {
		mf, ok := families[name]
		if !ok {
			continue
		}
		desc := c.descs[name]
		for _, m := range mf.GetMetric() {
			metric, err := c.convert(name, desc, mf.GetType(), m)
			if err != nil {
				metric = prometheus.NewInvalidMetric(desc, err)
			}
			ch <- metric
		}
	}
}

func (c *Collector) convert(name string, desc *prometheus.Desc, typ dto.MetricType, m *dto.Metric) (prometheus.Metric, error) {
	byName := make(map[string]string, len(m.GetLabel()))
	for _, lp := range m.GetLabel() {
		byName[lp.GetName()] = lp.GetValue()
	}
	values := make([]string, 0, len(c.labels[name]))
	for _, l := range c.labels[name] {
		v, ok := byName[l]
		if !ok {
			return nil, fmt.Errorf("promcollector: %s: a sample without label %s", name, l)
		}
		values = append(values, v)
	}
	switch typ {
	case dto.MetricType_COUNTER:
		return prometheus.NewConstMetric(desc, prometheus.CounterValue, m.GetCounter().GetValue(), values...)
	case dto.MetricType_GAUGE:
		return prometheus.NewConstMetric(desc, prometheus.GaugeValue, m.GetGauge().GetValue(), values...)
	case dto.MetricType_HISTOGRAM:
		h := m.GetHistogram()
		buckets := make(map[float64]uint64, len(h.GetBucket()))
		for _, b := range h.GetBucket() {
			if !math.IsInf(b.GetUpperBound(), +1) { // +Inf is the sample count
				buckets[b.GetUpperBound()] = b.GetCumulativeCount()
			}
		}
		return prometheus.NewConstHistogram(desc, h.GetSampleCount(), h.GetSampleSum(), buckets, values...)
	default:
		return prometheus.NewConstMetric(desc, prometheus.UntypedValue, m.GetUntyped().GetValue(), values...)
	}
}
