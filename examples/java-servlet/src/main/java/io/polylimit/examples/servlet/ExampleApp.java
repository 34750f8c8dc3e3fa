package io.polylimit.examples.servlet;

import io.polylimit.Client;
import io.polylimit.ClientOptions;
import io.polylimit.Limiter;
import io.polylimit.servlet.RateLimitFilter;
import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.Map;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

/**
 * A small web app behind polylimit's {@link RateLimitFilter}, in an embedded
 * Jetty: run it twice (two JVMs, two ports) against one Redis and both share
 * one limit per client.
 *
 * <pre>
 *   POLYLIMIT_URL=redis://127.0.0.1:6379 java -jar target/polylimit-servlet-example.jar \
 *       [--port 8080] [--limit 10/minute] [--login-limit 3/minute] [--prefix example] \
 *       [--trusted-proxies 127.0.0.1] [--name web-1]
 * </pre>
 *
 * Routes: {@code /hello} (the default limit), {@code /login} (its own
 * limit), {@code /health} and {@code /metrics} (exempt; the metrics page is
 * {@link Client#prometheusText(Client...)}). The Redis URL comes from
 * {@code --url} or else the {@code POLYLIMIT_URL} environment variable; with
 * neither the app stops with the library's message (no default server).
 * It prints {@code listening on http://127.0.0.1:PORT/} once it serves.
 */
public final class ExampleApp {
    private ExampleApp() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = parse(args);
        String url = opts.get("url"); // null: POLYLIMIT_URL
        Client client = Client.open(url, ClientOptions.builder().name(opts.getOrDefault("name", "example")).build());
        Limiter limit = client.limiterBuilder(opts.getOrDefault("limit", "10/minute"))
                .prefix(opts.getOrDefault("prefix", "example")).build();
        // A prefix of its own: the rules' keys are the same (ip:<address>), the limiters count apart.
        Limiter loginLimit = client.limiterBuilder(opts.getOrDefault("login-limit", "3/minute"))
                .prefix(opts.getOrDefault("prefix", "example") + ":login").build();

        RateLimitFilter.Builder filter = RateLimitFilter.builder()
                .limit(limit)
                .pathLimit("/login", loginLimit)
                .exempt("/health", "/metrics");
        if (opts.containsKey("trusted-proxies")) filter.trustedProxies(opts.get("trusted-proxies").split(","));

        Server server = new Server();
        ServerConnector connector = new ServerConnector(server);
        connector.setHost("127.0.0.1");
        connector.setPort(Integer.parseInt(opts.getOrDefault("port", "8080")));
        server.addConnector(connector);
        ServletContextHandler context = new ServletContextHandler();
        context.setContextPath("/");
        context.addFilter(new FilterHolder(filter.build()), "/*", EnumSet.of(DispatcherType.REQUEST));
        context.addServlet(new ServletHolder(new Routes(client)), "/*");
        server.setHandler(context);
        server.start();

        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                server.stop();
            } catch (Exception e) {
                System.err.println("stopping: " + e);
            }
            loginLimit.close();
            limit.close();
            client.close();
        }, "example-shutdown"));
        System.out.println("listening on http://127.0.0.1:" + connector.getLocalPort() + "/");
        System.out.flush();
        server.join();
    }

    private static Map<String, String> parse(String[] args) {
        Map<String, String> opts = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                System.err.println("usage: ExampleApp [--url URL] [--port N] [--limit SPEC] [--login-limit SPEC]"
                        + " [--prefix P] [--trusted-proxies A,B] [--name NAME]");
                System.exit(2);
            }
            opts.put(args[i].substring(2), args[++i]);
        }
        return opts;
    }

    /** The app's pages. */
    private static final class Routes extends HttpServlet {
        private static final long serialVersionUID = 1L;
        private final transient Client client;

        Routes(Client client) {
            this.client = client;
        }

        @Override
        protected void doGet(HttpServletRequest req, HttpServletResponse res) throws IOException {
            String path = req.getPathInfo() == null ? "/" : req.getPathInfo();
            String body;
            switch (path) {
                case "/hello" -> body = "hello\n";
                case "/login" -> body = "login page\n";
                case "/health" -> body = "ok\n";
                case "/metrics" -> {
                    res.setContentType("text/plain; version=0.0.4; charset=utf-8");
                    body = Client.prometheusText(client);
                }
                default -> {
                    res.setStatus(404);
                    body = "not found\n";
                }
            }
            if (res.getContentType() == null) res.setContentType("text/plain;charset=utf-8");
            res.getOutputStream().write(body.getBytes(StandardCharsets.UTF_8));
        }
    }
}
