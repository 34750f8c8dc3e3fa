package io.polylimit.servlet;

import jakarta.servlet.http.HttpServletRequest;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * Finds the client's IP address of a request, honouring {@code X-Forwarded-For}
 * only from proxies the application trusts; immutable and thread-safe.
 *
 * <p>The peer address ({@code getRemoteAddr()}) is the client unless it is a
 * trusted proxy. Then the {@code X-Forwarded-For} hops (every header
 * instance, comma-separated, in order) are read from the right: trusted
 * proxies are skipped and the first address that is not one is the client.
 * Hops further left were written by the client itself and are never read, so
 * a client cannot choose its own key by sending the header. When every hop is
 * trusted, the leftmost is the client; a hop that is not an IP address ends
 * the walk at the proxy that reported it.
 *
 * <p>Addresses come back in one canonical form ({@code 2001:db8:0:0:0:0:0:1},
 * IPv4-mapped IPv6 as IPv4), so spellings of one address share a limit. No
 * host name is ever looked up.
 */
public final class ClientIp {
    private static final ClientIp DIRECT = new ClientIp(List.of());
    private static final Pattern IPV4 = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}");
    private static final Pattern IPV6_CHARS = Pattern.compile("[0-9A-Fa-f:.]+");

    private final List<Cidr> trusted;

    private ClientIp(List<Cidr> trusted) {
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
     * @throws IllegalArgumentException for an entry that is neither
     */
    public static ClientIp trusting(Collection<String> proxies) {
        Objects.requireNonNull(proxies, "proxies");
        List<Cidr> list = new ArrayList<>();
        for (String p : proxies) list.add(Cidr.parse(Objects.requireNonNull(p, "proxy").trim()));
        return list.isEmpty() ? DIRECT : new ClientIp(Collections.unmodifiableList(list));
    }

    /** As {@link #trusting(Collection)}. */
    public static ClientIp trusting(String... proxies) {
        return trusting(List.of(proxies));
    }

    /** The client's address of this request, in canonical form. */
    public String resolve(HttpServletRequest request) {
        return resolve(request.getRemoteAddr(), request.getHeaders("X-Forwarded-For"));
    }

    /**
     * The client's address for a peer address and the {@code X-Forwarded-For}
     * header instances (null: none).
     */
    public String resolve(String remoteAddr, Enumeration<String> forwardedFor) {
        InetAddress peer = parse(remoteAddr);
        if (peer == null) return remoteAddr == null ? "unknown" : remoteAddr.trim();
        if (trusted.isEmpty() || !isTrusted(peer) || forwardedFor == null) return peer.getHostAddress();
        List<String> hops = new ArrayList<>();
        while (forwardedFor.hasMoreElements()) {
            String value = forwardedFor.nextElement();
            if (value == null) continue;
            for (String hop : value.split(",")) {
                String h = hop.trim();
                if (!h.isEmpty()) hops.add(h);
            }
        }
        InetAddress client = peer;
        for (int i = hops.size() - 1; i >= 0; i--) {
            InetAddress hop = parse(hops.get(i));
            if (hop == null) break; // not an address: the proxy that wrote it is what we know
            client = hop;
            if (!isTrusted(hop)) break;
        }
        return client.getHostAddress();
    }

    /** Whether this address is one of the trusted proxies. */
    public boolean isTrusted(String address) {
        InetAddress a = parse(address);
        return a != null && isTrusted(a);
    }

    private boolean isTrusted(InetAddress a) {
        for (Cidr c : trusted) if (c.contains(a)) return true;
        return false;
    }

    @Override
    public String toString() {
        return trusted.isEmpty() ? "ClientIp[direct]" : "ClientIp[trusting " + trusted + "]";
    }

    /**
     * An IP literal (IPv4, IPv6, "[v6]:port", "v4:port"), or null for
     * anything else. Never a DNS lookup: only strings that InetAddress parses
     * as literals reach it.
     */
    static InetAddress parse(String text) {
        if (text == null) return null;
        String s = text.trim();
        if (s.startsWith("[")) {
            int end = s.indexOf(']');
            if (end < 0) return null;
            s = s.substring(1, end);
        } else if (s.indexOf(':') >= 0 && s.indexOf(':') == s.lastIndexOf(':') && s.indexOf('.') > 0) {
            s = s.substring(0, s.indexOf(':')); // v4:port
        }
        if (IPV4.matcher(s).matches()) {
            String[] parts = s.split("\\.");
            byte[] b = new byte[4];
            for (int i = 0; i < 4; i++) {
                int v = Integer.parseInt(parts[i]);
                if (v > 255) return null;
                b[i] = (byte) v;
            }
            try {
                return InetAddress.getByAddress(b);
            } catch (UnknownHostException e) {
                return null;
            }
        }
        // With a ':' InetAddress parses an IPv6 literal or fails; it never resolves a name.
        if (s.indexOf(':') < 0 || !IPV6_CHARS.matcher(s).matches()) return null;
        try {
            return InetAddress.getByName(s);
        } catch (UnknownHostException e) {
            return null;
        }
    }

    /** An address range. */
    private static final class Cidr {
        final byte[] network;
        final int bits;
        final String text;

        Cidr(byte[] network, int bits, String text) {
            this.network = network;
            this.bits = bits;
            this.text = text;
        }

        static Cidr parse(String text) {
            int slash = text.indexOf('/');
            String addr = slash < 0 ? text : text.substring(0, slash);
            InetAddress a = ClientIp.parse(addr);
            if (a == null || addr.startsWith("[")) {
                throw new IllegalArgumentException("trusted proxy \"" + text + "\" is not an IP address or CIDR range");
            }
            byte[] b = a.getAddress();
            int bits = b.length * 8;
            if (slash >= 0) {
                try {
                    bits = Integer.parseInt(text.substring(slash + 1));
                } catch (NumberFormatException e) {
                    bits = -1;
                }
                if (bits < 0 || bits > b.length * 8) {
                    throw new IllegalArgumentException("trusted proxy \"" + text + "\": prefix length must be 0.."
                            + b.length * 8);
                }
            }
            return new Cidr(b, bits, text);
        }

        boolean contains(InetAddress a) {
            byte[] b = a.getAddress();
            if (b.length != network.length) return false;
            int full = bits / 8, rest = bits % 8;
            for (int i = 0; i < full; i++) if (b[i] != network[i]) return false;
            if (rest == 0) return true;
            int mask = (0xff << (8 - rest)) & 0xff;
            return (b[full] & mask) == (network[full] & mask);
        }

        @Override
        public String toString() {
            return text;
        }
    }
}
