package io.polylimit.servlet;

import io.polylimit.Client;
import io.polylimit.HttpPolicy;
import io.polylimit.Limiter;
import jakarta.servlet.http.HttpServletRequest;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;

/**
 * The core's key of a request, for the key helpers called on their own
 * ({@link KeyFunction#key}, {@link ClientIp#resolve}): a policy of one rule
 * whose step gives the key. The policy only prepares (no I/O), so its limiter
 * is a {@code memory://} one that never checks anything.
 */
final class CoreKeys {
    private CoreKeys() {}

    /** Made on first use, for the life of the class loader. */
    private static final class Holder {
        static final Client CLIENT = Client.open("memory://");
        static final Limiter LIMITER = CLIENT.limiter("1/second");
    }

    /** A policy of one rule keyed by {@code key} (a composition or a list of alternatives). */
    static HttpPolicy policy(Object key, List<String> trustedProxies, int ipv6Prefix) {
        Map<String, Object> rule = new java.util.LinkedHashMap<>();
        rule.put("name", "key");
        rule.put("limiter", 0);
        rule.put("key", key);
        rule.put("on_missing_key", "reject");
        Map<String, Object> doc = new java.util.LinkedHashMap<>();
        if (!trustedProxies.isEmpty()) doc.put("trusted_proxies", trustedProxies);
        doc.put("ipv6_prefix", ipv6Prefix);
        doc.put("rules", List.of(rule));
        return HttpPolicy.fromDocument(doc, List.of(Holder.LIMITER));
    }

    /** The key the policy gives the request, or null when it has none. */
    static String key(HttpPolicy policy, HttpServletRequest request, KeyFunction app) {
        HttpPolicy.Request r = describe(request, request.getRemoteAddr(),
                name -> joined(request.getHeaders(name))).build();
        HttpPolicy.Step step = policy.prepare(r);
        if (step.action() == HttpPolicy.Action.NEED_APP_KEY) {
            String k = app == null ? null : app.key(request);
            step = policy.prepare(r.withAppKey(k == null ? "" : k));
        }
        return step.action() == HttpPolicy.Action.CHECK ? step.key() : null;
    }

    /** The request as the core reads it: method, path, peer and the headers by lookup. */
    static HttpPolicy.Request.Builder describe(HttpServletRequest request, String peer,
                                              java.util.function.Function<String, String> headers) {
        return HttpPolicy.Request.builder()
                .method(request.getMethod())
                .path(RateLimitFilter.path(request))
                .peer(peer(peer))
                .headers(headers);
    }

    /** The socket's address as the core parses it ({@code [::1]} without its brackets). */
    static String peer(String remoteAddr) {
        if (remoteAddr != null && remoteAddr.length() > 2 && remoteAddr.startsWith("[") && remoteAddr.endsWith("]")) {
            return remoteAddr.substring(1, remoteAddr.length() - 1);
        }
        return remoteAddr;
    }

    /** A header's instances joined with ", ", in order; null when absent. */
    static String joined(Enumeration<String> values) {
        if (values == null || !values.hasMoreElements()) return null;
        String first = values.nextElement();
        if (!values.hasMoreElements()) return first;
        StringBuilder b = new StringBuilder(first);
        for (String v : Collections.list(values)) b.append(", ").append(v);
        return b.toString();
    }
}
