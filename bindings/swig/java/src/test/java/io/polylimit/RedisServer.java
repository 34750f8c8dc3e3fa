package io.polylimit;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A throwaway redis-server on a free loopback port in a temporary directory,
 * started by tests/fixture/redisfix, the launcher every language's test
 * fixtures share. The launcher stops the server and removes the directory on
 * {@link #close()}, or when this JVM dies (its stdin closes).
 */
final class RedisServer implements AutoCloseable {
    final int port;
    private final long pid;
    private final Process launcher;

    private RedisServer(int port, long pid, Process launcher) {
        this.port = port;
        this.pid = pid;
        this.launcher = launcher;
    }

    /** Sends a signal ("STOP", "CONT") to the server process: STOP makes it hang without closing sockets. */
    void signal(String sig) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + sig, Long.toString(pid)).inheritIO().start();
        if (kill.waitFor() != 0) throw new IOException("kill -" + sig + " " + pid + " failed");
    }

    String url() {
        return "redis://127.0.0.1:" + port;
    }

    /**
     * The launcher: the system property polylimit.redisfix, else
     * $POLYLIMIT_REDISFIX, else tests/fixture/redisfix in the first directory
     * upwards from the working directory that has one.
     */
    static Path launcherPath() throws IOException {
        String p = System.getProperty("polylimit.redisfix", System.getenv("POLYLIMIT_REDISFIX"));
        if (p != null && !p.isEmpty()) return Path.of(p);
        for (Path d = Path.of("").toAbsolutePath(); d != null; d = d.getParent()) {
            Path candidate = d.resolve("tests/fixture/redisfix");
            if (Files.isRegularFile(candidate)) return candidate;
        }
        throw new IOException("tests/fixture/redisfix not found above " + Path.of("").toAbsolutePath()
                + " (set -Dpolylimit.redisfix)");
    }

    /** Starts one and waits until it answers; extra arguments go to redis-server. */
    static RedisServer start(String... extra) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("python3", launcherPath().toString(), "standalone", "--"));
        cmd.addAll(List.of(extra));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line = out.readLine();
        Matcher error = line == null ? null : Pattern.compile("\"error\": \"((?:[^\"\\\\]|\\\\.)*)\"").matcher(line);
        if (line == null || error.find()) {
            p.getOutputStream().close();
            p.waitFor();
            throw new IOException("redisfix standalone: " + (line == null ? "no output" : error.group(1)));
        }
        // {"kind": ..., "pid": LAUNCHER, ..., "nodes": [{"port": P, "pid": N, ...}], ...}
        String node = line.substring(line.indexOf("\"nodes\""));
        Matcher port = Pattern.compile("\"port\": (\\d+)").matcher(node);
        Matcher pid = Pattern.compile("\"pid\": (\\d+)").matcher(node);
        if (!port.find() || !pid.find()) throw new IOException("redisfix: unexpected description " + line);
        return new RedisServer(Integer.parseInt(port.group(1)), Long.parseLong(pid.group(1)), p);
    }

    /**
     * Sends one command (RESP array of bulk strings) on a fresh connection and
     * returns the first line of the reply ("+OK", ":1", "$5", "-ERR ...").
     */
    String command(String... args) throws IOException {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
            s.setSoTimeout(5000);
            StringBuilder b = new StringBuilder("*").append(args.length).append("\r\n");
            for (String a : args) {
                byte[] bytes = a.getBytes(StandardCharsets.UTF_8);
                b.append('$').append(bytes.length).append("\r\n").append(a).append("\r\n");
            }
            OutputStream out = s.getOutputStream();
            out.write(b.toString().getBytes(StandardCharsets.UTF_8));
            out.flush();
            InputStream in = s.getInputStream();
            StringBuilder line = new StringBuilder();
            for (int c = in.read(); c != -1 && c != '\r'; c = in.read()) line.append((char) c);
            return line.toString();
        }
    }

    /**
     * Whether a connection to the local listener on {@code port} holds bytes
     * the listener has not read (Linux /proc/net/tcp): a request sent to a
     * server that is frozen or never answers. Lets a test wait for "the
     * request is on its way" instead of sleeping.
     */
    static boolean requestPending(int port) throws IOException {
        for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
            Path p = Path.of(table);
            if (!Files.isReadable(p)) continue;
            for (String row : Files.readAllLines(p)) {
                String[] f = row.trim().split("\\s+");
                if (f.length < 5 || !f[3].equals("01")) continue; // ESTABLISHED
                String local = f[1];
                int localPort = Integer.parseInt(local.substring(local.lastIndexOf(':') + 1), 16);
                long rxQueue = Long.parseLong(f[4].substring(f[4].indexOf(':') + 1), 16);
                if (localPort == port && rxQueue > 0) return true;
            }
        }
        return false;
    }

    /** A condition a test polls. */
    interface Condition {
        boolean holds() throws Exception;
    }

    /** Polls {@code condition} every 5 ms until it holds; throws AssertionError after {@code timeout}. */
    static void waitUntil(String what, java.time.Duration timeout, Condition condition) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.holds()) {
            if (System.nanoTime() > deadline) throw new AssertionError(what + ": not within " + timeout);
            Thread.sleep(5);
        }
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    /** Stops the server (resumed first, in case a test stopped it) and removes its directory. Idempotent. */
    @Override
    public void close() throws IOException {
        if (!launcher.isAlive()) return;
        try (OutputStream in = launcher.getOutputStream()) {
            in.write("stop\n".getBytes(StandardCharsets.US_ASCII));
        } catch (IOException e) {
            // already gone
        }
        try {
            if (!launcher.waitFor(15, TimeUnit.SECONDS)) launcher.destroyForcibly().waitFor();
        } catch (InterruptedException e) {
            launcher.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
