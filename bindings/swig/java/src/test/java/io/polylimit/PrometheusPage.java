package io.polylimit;

import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A strict reader of the Prometheus text exposition format (0.0.4), enough
 * to tell one valid page from a concatenation of pages: a metric's HELP or
 * TYPE twice, samples of a family after another family started, a sample of
 * an undeclared family, a duplicate series or a malformed line are errors.
 */
final class PrometheusPage {
    private static final Pattern SAMPLE = Pattern.compile(
            "([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{[^}]*\\})? (\\S+)( \\d+)?");
    private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\"");

    /** Series ("name{labels}" as written) to value, in page order. */
    final Map<String, Double> samples = new LinkedHashMap<>();
    /** Family name to its TYPE. */
    final Map<String, String> types = new HashMap<>();

    private PrometheusPage() {}

    static PrometheusPage parse(String text) {
        PrometheusPage page = new PrometheusPage();
        Set<String> helps = new HashSet<>();
        Set<String> closed = new HashSet<>();
        String current = null;
        int n = 0;
        for (String line : text.split("\n", -1)) {
            n++;
            if (line.isEmpty()) {
                if (n == text.split("\n", -1).length) break; // the final newline
                throw new IllegalArgumentException("line " + n + ": empty line");
            }
            if (line.startsWith("# HELP ")) {
                String name = line.substring(7).split(" ", 2)[0];
                if (!helps.add(name)) throw new IllegalArgumentException("line " + n + ": second HELP for " + name);
                continue;
            }
            if (line.startsWith("# TYPE ")) {
                String[] parts = line.substring(7).split(" ");
                if (parts.length != 2) throw new IllegalArgumentException("line " + n + ": bad TYPE line");
                if (page.types.containsKey(parts[0])) {
                    throw new IllegalArgumentException("line " + n + ": second TYPE for " + parts[0]);
                }
                if (!Set.of("counter", "gauge", "histogram", "summary", "untyped").contains(parts[1])) {
                    throw new IllegalArgumentException("line " + n + ": unknown type " + parts[1]);
                }
                page.types.put(parts[0], parts[1]);
                if (current != null) closed.add(current);
                current = parts[0];
                continue;
            }
            if (line.startsWith("#")) continue; // a comment
            Matcher m = SAMPLE.matcher(line);
            if (!m.matches()) throw new IllegalArgumentException("line " + n + ": not a sample: " + line);
            String name = m.group(1);
            String family = familyOf(page.types, name);
            if (family == null) throw new IllegalArgumentException("line " + n + ": sample of undeclared " + name);
            if (!family.equals(current) || closed.contains(family)) {
                throw new IllegalArgumentException("line " + n + ": sample of " + family + " outside its group");
            }
            if (m.group(2) != null) {
                String inner = m.group(2).substring(1, m.group(2).length() - 1);
                Matcher lm = LABEL.matcher(inner);
                int at = 0;
                Set<String> names = new HashSet<>();
                while (at < inner.length()) {
                    if (!lm.find(at) || lm.start() != at) {
                        throw new IllegalArgumentException("line " + n + ": bad labels: " + m.group(2));
                    }
                    if (!names.add(lm.group(1))) throw new IllegalArgumentException("line " + n + ": label twice");
                    at = lm.end();
                    if (at < inner.length()) {
                        if (inner.charAt(at) != ',') throw new IllegalArgumentException("line " + n + ": bad labels");
                        at++;
                    }
                }
            }
            double value;
            String v = m.group(3);
            switch (v) {
                case "+Inf" -> value = Double.POSITIVE_INFINITY;
                case "-Inf" -> value = Double.NEGATIVE_INFINITY;
                case "NaN" -> value = Double.NaN;
                default -> value = Double.parseDouble(v);
            }
            String series = name + (m.group(2) == null ? "" : m.group(2));
            if (page.samples.put(series, value) != null) {
                throw new IllegalArgumentException("line " + n + ": series twice: " + series);
            }
        }
        return page;
    }

    /** The declared family a sample name belongs to (histogram/summary suffixes included). */
    private static String familyOf(Map<String, String> types, String name) {
        if (types.containsKey(name)) return name;
        for (String suffix : new String[] {"_bucket", "_sum", "_count"}) {
            if (name.endsWith(suffix)) {
                String base = name.substring(0, name.length() - suffix.length());
                String t = types.get(base);
                if ("histogram".equals(t) || ("summary".equals(t) && !suffix.equals("_bucket"))) return base;
            }
        }
        return null;
    }

    /** The value of one series; fails when the page has no such series. */
    double value(String series) {
        Double v = samples.get(series);
        if (v == null) throw new AssertionError("no series " + series + " in " + samples.keySet());
        return v;
    }
}
