package io.polylimit.servlet;

import io.polylimit.HttpPolicy;
import io.polylimit.PolylimitException;
import jakarta.servlet.http.HttpServletRequest;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.Objects;

/**
 * The proxies whose {@code X-Forwarded-For} is believed, for the client's
 * address of a request; immutable and thread-safe.
 *
 * <p>The address is the core's (docs/integrations/contract.md, "The client's
 * address"): the peer, unless it is a trusted proxy; then the
 * {@code X-Forwarded-For} hops are read from the right, and the first that is
 * not a trusted proxy is the client. Nothing is resolved in Java: the
 * {@link RateLimitFilter} gives the core the peer and the header, and
 * {@link #resolve} asks the core the same way.
 */
public final class ClientIp {
    private static final ClientIp DIRECT = new ClientIp(List.of());

    private final List<String> trusted;
    private volatile HttpPolicy policy; // made on first resolve

    private ClientIp(List<String> trusted) {
        this.trusted = trusted;
    }

    /** The peer address, always: for servers that no proxy stands in front of. */
    public static ClientIp direct() {
        return DIRECT;
    }

    /**
     * Trusts {@code X-Forwarded-For} from these proxies: IP addresses
     * ({@code 10.0.0.7}, {@code ::1}) or CIDR ranges ({@code 10.0.0.0/8},
     * {@code fd00::/8}).
     *
     * @throws IllegalArgumentException for an entry that is neither (the core's message)
     */
    public static ClientIp trusting(Collection<String> proxies) {
        Objects.requireNonNull(proxies, "proxies");
        List<String> list = new ArrayList<>();
        for (String p : proxies) list.add(Objects.requireNonNull(p, "proxy").trim());
        if (list.isEmpty()) return DIRECT;
        ClientIp ip = new ClientIp(Collections.unmodifiableList(list));
        ip.policy(); // the core checks every entry now
        return ip;
    }

    /** As {@link #trusting(Collection)}. */
    public static ClientIp trusting(String... proxies) {
        return trusting(List.of(proxies));
    }

    /** The trusted proxies, as given (the policy document's {@code trusted_proxies}). */
    public List<String> proxies() {
        return trusted;
    }

    /** The client's address of this request, as the core finds it; null when the peer is not an address. */
    public String resolve(HttpServletRequest request) {
        return resolve(request.getRemoteAddr(), request.getHeaders("X-Forwarded-For"));
    }

    /**
     * The client's address for a peer address and the {@code X-Forwarded-For}
     * header instances (null: none), as the core finds it (IPv4 dotted, IPv6
     * in RFC 5952 form); null when the peer is not an address.
     */
    public String resolve(String remoteAddr, Enumeration<String> forwardedFor) {
        String xff = CoreKeys.joined(forwardedFor);
        HttpPolicy.Request r = HttpPolicy.Request.builder().method("GET").path("/").peer(CoreKeys.peer(remoteAddr))
                .headers(name -> name.equals("x-forwarded-for") ? xff : null).build();
        HttpPolicy.Step step = policy().prepare(r);
        if (step.action() != HttpPolicy.Action.CHECK) return null;
        return step.key().substring("ip:".length());
    }

    /** Whether this address is one of the trusted proxies (the core's answer: does it pass on a forwarded hop?). */
    public boolean isTrusted(String address) {
        if (trusted.isEmpty()) return false;
        String a = resolve(address, null);
        if (a == null) return false;
        String probe = a.equals("192.0.2.1") ? "192.0.2.2" : "192.0.2.1";
        return probe.equals(resolve(address, Collections.enumeration(List.of(probe))));
    }

    private HttpPolicy policy() {
        HttpPolicy p = policy;
        if (p == null) {
            try {
                p = CoreKeys.policy("ip", trusted, 128);
            } catch (PolylimitException e) {
                throw new IllegalArgumentException(e.getMessage(), e);
            }
            policy = p;
        }
        return p;
    }

    @Override
    public String toString() {
        return trusted.isEmpty() ? "ClientIp[direct]" : "ClientIp[trusting " + trusted + "]";
    }
}
