package io.polylimit;

import jakarta.servlet.DispatcherType;
import jakarta.servlet.Filter;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Map;
import org.eclipse.jetty.ee10.servlet.FilterHolder;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

/**
 * An embedded Jetty 12 (ee10) on a free loopback port: one servlet answering
 * "ok <path>" for every path (with the status of a {@code status} query
 * parameter when there is one), behind the filter under test.
 */
final class JettyServer implements AutoCloseable {
    static final HttpClient HTTP = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();

    private final Server server;
    final String base;

    private JettyServer(Server server, String base) {
        this.server = server;
        this.base = base;
    }

    /** Starts one with the filter instance. */
    static JettyServer start(Filter filter) throws Exception {
        return start(new FilterHolder(filter));
    }

    /** Starts one with the filter class configured by init-params (as web.xml does). */
    static JettyServer start(Class<? extends Filter> filter, Map<String, String> initParams) throws Exception {
        FilterHolder holder = new FilterHolder(filter);
        holder.setInitParameters(initParams);
        return start(holder);
    }

    private static JettyServer start(FilterHolder filter) throws Exception {
        Server server = new Server();
        ServerConnector connector = new ServerConnector(server);
        connector.setHost("127.0.0.1");
        connector.setPort(0);
        server.addConnector(connector);
        ServletContextHandler context = new ServletContextHandler();
        context.setContextPath("/");
        context.addFilter(filter, "/*", EnumSet.of(DispatcherType.REQUEST));
        context.addServlet(new ServletHolder(new Ok()), "/*");
        server.setHandler(context);
        try {
            server.start();
        } catch (Exception e) {
            server.stop();
            throw e;
        }
        return new JettyServer(server, "http://127.0.0.1:" + connector.getLocalPort());
    }

    HttpResponse<String> get(String path, String... headers) throws IOException, InterruptedException {
        return getAt(base, path, headers);
    }

    /** A POST with an empty body. */
    HttpResponse<String> post(String path, String... headers) throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(10));
        for (int i = 0; i < headers.length; i += 2) b.header(headers[i], headers[i + 1]);
        return HTTP.send(b.POST(HttpRequest.BodyPublishers.noBody()).build(),
                HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    }

    static HttpResponse<String> getAt(String base, String path, String... headers)
            throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(10));
        for (int i = 0; i < headers.length; i += 2) b.header(headers[i], headers[i + 1]);
        return HTTP.send(b.GET().build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    }

    @Override
    public void close() {
        try {
            server.stop();
        } catch (Exception e) {
            throw new IllegalStateException("stopping Jetty", e);
        }
    }

    private static final class Ok extends HttpServlet {
        private static final long serialVersionUID = 1L;

        @Override
        protected void doGet(HttpServletRequest req, HttpServletResponse res) throws IOException {
            String status = req.getParameter("status");
            if (status != null) res.setStatus(Integer.parseInt(status));
            res.setContentType("text/plain;charset=utf-8");
            res.getWriter().print("ok " + req.getPathInfo());
        }

        @Override
        protected void doPost(HttpServletRequest req, HttpServletResponse res) throws IOException {
            doGet(req, res);
        }
    }
}
