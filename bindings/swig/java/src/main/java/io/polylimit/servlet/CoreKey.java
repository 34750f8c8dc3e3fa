package io.polylimit.servlet;

import io.polylimit.HttpPolicy;
import jakarta.servlet.http.HttpServletRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * A {@link KeyFunction} as the core's key: a list of alternatives, each a
 * composition of key parts ({@code "ip"}, {@code "api_key:X-API-Key"},
 * {@code "app"}), and the application's function for the {@code app} part.
 */
final class CoreKey implements KeyFunction {
    static final String APP = "app";

    final List<String> alternatives;
    final KeyFunction app; // null unless an alternative is "app"
    final List<String> trustedProxies; // of a clientIp(...) resolver; empty: none given
    private volatile HttpPolicy policy; // for key(request) called on its own

    CoreKey(List<String> alternatives, KeyFunction app, List<String> trustedProxies) {
        this.alternatives = List.copyOf(alternatives);
        this.app = app;
        this.trustedProxies = List.copyOf(trustedProxies);
    }

    /** f as a core key: itself, or a function of the application's as the {@code app} part. */
    static CoreKey of(KeyFunction f) {
        return f instanceof CoreKey ? (CoreKey) f : new CoreKey(List.of(APP), f, List.of());
    }

    /** This key, else other's: the alternatives of both, the application's functions as one. */
    CoreKey or(CoreKey other) {
        List<String> alts = new ArrayList<>(alternatives);
        for (String a : other.alternatives) if (!a.equals(APP) || !alts.contains(APP)) alts.add(a);
        KeyFunction fn = app;
        if (fn == null) {
            fn = other.app;
        } else if (other.app != null) {
            KeyFunction first = app;
            KeyFunction second = other.app;
            fn = request -> {
                String k = first.key(request);
                return k != null && !k.isEmpty() ? k : second.key(request);
            };
        }
        return new CoreKey(alts, fn, trustedProxies.isEmpty() ? other.trustedProxies : trustedProxies);
    }

    /** Headers as API keys (the core's credential part). */
    CoreKey asCredential() {
        List<String> alts = new ArrayList<>();
        for (String a : alternatives) {
            StringBuilder b = new StringBuilder();
            for (String part : a.split("\\+")) {
                if (b.length() > 0) b.append('+');
                b.append(part.startsWith("header:") ? "api_key:" + part.substring("header:".length()) : part);
            }
            alts.add(b.toString());
        }
        return new CoreKey(alts, app, trustedProxies);
    }

    /** The document's {@code key}: one composition, or the list of alternatives. */
    Object documentKey() {
        return alternatives.size() == 1 ? alternatives.get(0) : alternatives;
    }

    @Override
    public boolean isCredential() {
        for (String a : alternatives) {
            for (String part : a.split("\\+")) {
                if (part.equals("api_key") || part.startsWith("api_key:") || part.equals("user")
                        || part.equals("tenant")) {
                    return true;
                }
            }
        }
        return false;
    }

    @Override
    public String key(HttpServletRequest request) {
        HttpPolicy p = policy;
        if (p == null) policy = p = CoreKeys.policy(documentKey(), trustedProxies, 64);
        return CoreKeys.key(p, request, app);
    }

    @Override
    public String toString() {
        return "KeyFunction" + alternatives;
    }
}
