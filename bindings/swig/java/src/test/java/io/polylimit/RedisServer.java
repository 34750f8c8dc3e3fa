package io.polylimit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A throwaway redis-server on a free loopback port in a temporary directory,
 * started in the foreground (no daemonize) so this process owns and stops it.
 */
final class RedisServer implements AutoCloseable {
    final int port;
    private final Process process;
    private final Path dir;

    private RedisServer(int port, Process process, Path dir) {
        this.port = port;
        this.process = process;
        this.dir = dir;
    }

    /** Sends a signal ("STOP", "CONT") to the server process: STOP makes it hang without closing sockets. */
    void signal(String sig) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + sig, Long.toString(process.pid())).inheritIO().start();
        if (kill.waitFor() != 0) throw new IOException("kill -" + sig + " " + process.pid() + " failed");
    }

    String url() {
        return "redis://127.0.0.1:" + port;
    }

    /** Starts one, retrying on a port race; extra arguments go to redis-server. */
    static RedisServer start(String... extra) throws IOException, InterruptedException {
        Path dir = Files.createTempDirectory("polylimit-java-redis-");
        IOException last = null;
        for (int attempt = 0; attempt < 5; attempt++) {
            int port = freePort();
            List<String> cmd = new ArrayList<>(List.of("redis-server", "--port", Integer.toString(port),
                    "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir.toString(),
                    "--protected-mode", "no", "--logfile", dir.resolve("redis.log").toString()));
            cmd.addAll(List.of(extra));
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true)
                    .redirectOutput(dir.resolve("redis.out").toFile()).start();
            for (int i = 0; i < 200 && p.isAlive(); i++) {
                if (ping(port)) return new RedisServer(port, p, dir);
                Thread.sleep(25);
            }
            p.destroyForcibly().waitFor();
            last = new IOException("redis-server did not start on port " + port + ": "
                    + Files.readString(dir.resolve("redis.out")).strip());
        }
        deleteTree(dir);
        throw last;
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

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    // Any reply proves the server listens (NOAUTH is a reply too).
    private static boolean ping(int port) {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
            s.setSoTimeout(500);
            OutputStream out = s.getOutputStream();
            out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            int c = in.read();
            return c == '+' || c == '-';
        } catch (IOException e) {
            return false;
        }
    }

    @Override
    public void close() throws IOException {
        try {
            signal("CONT"); // a stopped server would not see SIGTERM until continued
        } catch (IOException | InterruptedException e) {
            // already gone
        }
        process.destroy(); // SIGTERM: redis exits cleanly
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) process.destroyForcibly().waitFor();
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        deleteTree(dir);
    }

    private static void deleteTree(Path dir) throws IOException {
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        }
    }
}
