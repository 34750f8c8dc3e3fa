import io.polylimit.Client;
import io.polylimit.HttpPolicy;
import io.polylimit.Limiter;
import io.polylimit.LivePolicy;
import io.polylimit.servlet.RateLimitFilter;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

/**
 * The Java service of the cross-language HTTP suite (tests/http): an
 * embedded Jetty (ee10) on 127.0.0.1:PORT behind RateLimitFilter, built from
 * CONFIG_FILE's limiters and policy document with the public
 * RateLimitFilter.builder().document(...); or, when CONFIG_FILE names a
 * "policy_file" (and optionally "watch_ms", default 100), a LivePolicy
 * opened from that file and watched (RateLimitFilter.builder().livePolicy).
 * The user id is the X-User header
 * and the tenant id X-Tenant, read by the service's own hooks (not as
 * policy headers). Every path and method answers 200 "ok\n" when the request
 * goes on. Prints "ready" once it accepts connections; SIGTERM stops it.
 *
 * Usage: Service CONFIG_FILE PORT (POLYLIMIT_URL in the environment).
 */
public final class Service {
    private Service() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: Service CONFIG_FILE PORT");
            System.exit(2);
        }
        Map<String, Object> config = map(Json.parse(Files.readString(Path.of(args[0]), StandardCharsets.UTF_8)));
        int port = Integer.parseInt(args[1]);
        Client client = Client.open(); // POLYLIMIT_URL
        List<Limiter> limiters = new ArrayList<>();
        LivePolicy live = null;
        RateLimitFilter.Builder fb = RateLimitFilter.builder();
        if (config.get("policy_file") != null) {
            // A live policy of that file, watched: the driver rewrites it.
            long watchMs = config.get("watch_ms") == null ? 100 : ((Number) config.get("watch_ms")).longValue();
            live = LivePolicy.open(client, Path.of((String) config.get("policy_file")), Duration.ofMillis(watchMs));
            fb.livePolicy(live);
        }
        for (Object o : config.get("limiters") == null ? List.of() : list(config.get("limiters"))) {
            Map<String, Object> l = map(o);
            Limiter.Builder b = client.limiterBuilder((String) l.get("rate"));
            if (l.get("prefix") != null) b.prefix((String) l.get("prefix"));
            if (l.get("algorithm") != null) {
                b.algorithm(Limiter.Algorithm.valueOf(((String) l.get("algorithm")).toUpperCase(Locale.ROOT)
                        .replace('-', '_')));
            }
            limiters.add(b.build());
        }
        if (live == null) fb.document(HttpPolicy.documentJson(map(config.get("policy"))), limiters);
        RateLimitFilter filter = fb
                .user(req -> req.getHeader("X-User"))
                .tenant(req -> req.getHeader("X-Tenant"))
                .build();

        Server server = new Server();
        ServerConnector connector = new ServerConnector(server);
        connector.setHost("127.0.0.1");
        connector.setPort(port);
        server.addConnector(connector);
        ServletContextHandler context = new ServletContextHandler();
        context.setContextPath("/");
        context.addFilter(new FilterHolder(filter), "/*", EnumSet.of(DispatcherType.REQUEST));
        context.addServlet(new ServletHolder(new Ok()), "/*");
        server.setHandler(context);
        server.start();

        Runnable stop = () -> {
            try {
                server.stop();
            } catch (Exception e) {
                System.err.println("stopping Jetty: " + e);
            }
            if (filter.policy() != null) filter.policy().close();
            if (filter.livePolicy() != null) filter.livePolicy().close();
            for (Limiter l : limiters) l.close();
            client.close();
        };
        // SIGTERM: stop serving, free the library, exit 0.
        sun.misc.Signal.handle(new sun.misc.Signal("TERM"), sig -> {
            stop.run();
            System.exit(0);
        });
        System.out.println("ready");
        System.out.flush();
        server.join();
    }

    /** 200 "ok\n" for every path and method. */
    private static final class Ok extends HttpServlet {
        private static final long serialVersionUID = 1L;

        @Override
        protected void service(HttpServletRequest req, HttpServletResponse res) throws IOException {
            byte[] body = "ok\n".getBytes(StandardCharsets.UTF_8);
            res.setStatus(200);
            res.setContentType("text/plain; charset=utf-8");
            res.setContentLength(body.length);
            res.getOutputStream().write(body);
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Object o) {
        return (Map<String, Object>) o;
    }

    @SuppressWarnings("unchecked")
    private static List<Object> list(Object o) {
        return (List<Object>) o;
    }

    /** A small JSON reader for the config file: objects keep their order, whole numbers are Long. */
    static final class Json {
        private final String s;
        private int i;

        private Json(String s) {
            this.s = s;
        }

        static Object parse(String text) {
            Json p = new Json(text);
            Object v = p.value();
            p.blank();
            if (p.i != text.length()) throw new IllegalArgumentException("config: trailing text at " + p.i);
            return v;
        }

        private void blank() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
        }

        private void expect(char c) {
            blank();
            if (i >= s.length() || s.charAt(i) != c) throw new IllegalArgumentException("config: " + c + " expected at " + i);
            i++;
        }

        private boolean next(char c) {
            blank();
            if (i < s.length() && s.charAt(i) == c) {
                i++;
                return true;
            }
            return false;
        }

        private Object value() {
            blank();
            char c = s.charAt(i);
            if (c == '{') {
                i++;
                Map<String, Object> m = new LinkedHashMap<>();
                if (next('}')) return m;
                do {
                    blank();
                    String k = string();
                    expect(':');
                    m.put(k, value());
                } while (next(','));
                expect('}');
                return m;
            }
            if (c == '[') {
                i++;
                List<Object> l = new ArrayList<>();
                if (next(']')) return l;
                do {
                    l.add(value());
                } while (next(','));
                expect(']');
                return l;
            }
            if (c == '"') return string();
            for (String word : new String[] {"true", "false", "null"}) {
                if (s.startsWith(word, i)) {
                    i += word.length();
                    return word.equals("null") ? null : Boolean.valueOf(word);
                }
            }
            int start = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
            String n = s.substring(start, i);
            if (n.isEmpty()) throw new IllegalArgumentException("config: unexpected " + c + " at " + i);
            return n.matches("-?\\d+") ? (Object) Long.parseLong(n) : (Object) Double.parseDouble(n);
        }

        private String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            for (;;) {
                char c = s.charAt(i++);
                if (c == '"') return b.toString();
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                char e = s.charAt(i++);
                switch (e) {
                    case 'n' -> b.append('\n');
                    case 't' -> b.append('\t');
                    case 'r' -> b.append('\r');
                    case 'b' -> b.append('\b');
                    case 'f' -> b.append('\f');
                    case 'u' -> {
                        b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        i += 4;
                    }
                    default -> b.append(e);
                }
            }
        }
    }
}
