package io.polylimit.demo;

import io.polylimit.Client;
import io.polylimit.Limiter;
import io.polylimit.PolylimitException;
import java.io.PrintStream;
import java.time.Duration;

/**
 * The demo's Java worker, the twin of tools/demo/worker.c: hammers one shared
 * key and prints how many of its attempts were admitted.
 *
 * <pre>
 *   java -cp polylimit-1.0.0.jar io.polylimit.demo.Worker URL KEY LIMIT WINDOW_MS ATTEMPTS NAME
 *   → NAME admitted=N attempts=M
 * </pre>
 *
 * The library jar has no Main-Class: run the worker by its class name.
 */
public final class Worker {
    private Worker() {}

    public static void main(String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /** Waits until POLYLIMIT_DEMO_START_AT_MS (Unix ms), when set, so that workers of every language start together. */
    private static void waitForStart() {
        String at = System.getenv("POLYLIMIT_DEMO_START_AT_MS");
        if (at == null) return;
        long left = Long.parseLong(at) - System.currentTimeMillis();
        if (left <= 0) return;
        try {
            Thread.sleep(left);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Runs the worker; returns the exit status (0 ok, 1 polylimit error, 2 usage). */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length != 6) {
            err.println("usage: io.polylimit.demo.Worker URL KEY LIMIT WINDOW_MS ATTEMPTS NAME");
            return 2;
        }
        String url = args[0], key = args[1], name = args[5];
        long limit, windowMs, attempts;
        try {
            limit = Long.parseLong(args[2]);
            windowMs = Long.parseLong(args[3]);
            attempts = Long.parseLong(args[4]);
        } catch (NumberFormatException e) {
            err.println(name + ": LIMIT, WINDOW_MS and ATTEMPTS must be integers");
            return 2;
        }
        // Same prefix as the C worker, so workers in every language share the key.
        try (Client client = Client.open(url);
             Limiter limiter = client.limiterBuilder(limit, Duration.ofMillis(windowMs)).prefix("demo").build()) {
            waitForStart();
            long admitted = 0;
            for (long i = 0; i < attempts; i++) {
                if (limiter.check(key).allowed()) admitted++;
            }
            out.println(name + " admitted=" + admitted + " attempts=" + attempts);
            out.flush();
            return 0;
        } catch (PolylimitException | UnsatisfiedLinkError e) {
            err.println(name + ": " + e.getMessage());
            return 1;
        }
    }
}
