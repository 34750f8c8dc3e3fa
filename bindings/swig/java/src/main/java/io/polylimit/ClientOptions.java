package io.polylimit;

import io.polylimit.jni.polylimit_client_options;
import java.time.Duration;

/**
 * Connection options of a {@link Client}; immutable. Anything not set keeps the
 * C library's default (pool of 8, 1 s timeouts, 15 s keepalive, PING after
 * 30 s idle).
 *
 * <pre>{@code
 * ClientOptions opts = ClientOptions.builder()
 *     .poolSize(16)
 *     .commandTimeout(Duration.ofMillis(200))
 *     .build();
 * }</pre>
 */
public final class ClientOptions {
    private static final ClientOptions DEFAULTS = builder().build();

    // 0 means "the C default", as in polylimit_client_options.
    private final int poolSize;
    private final int connectTimeoutMs;
    private final int commandTimeoutMs;
    private final int acquireTimeoutMs;
    private final int keepaliveS;
    private final boolean disableKeepalive;
    private final int idleCheckMs;

    private ClientOptions(Builder b) {
        poolSize = b.poolSize;
        connectTimeoutMs = b.connectTimeoutMs;
        commandTimeoutMs = b.commandTimeoutMs;
        acquireTimeoutMs = b.acquireTimeoutMs;
        keepaliveS = b.keepaliveS;
        disableKeepalive = b.disableKeepalive;
        idleCheckMs = b.idleCheckMs;
    }

    /** The C library's defaults. */
    public static ClientOptions defaults() {
        return DEFAULTS;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A native copy; the caller deletes it. */
    polylimit_client_options toNative() {
        polylimit_client_options o = new polylimit_client_options();
        o.setPool_size(poolSize);
        o.setConnect_timeout_ms(connectTimeoutMs);
        o.setCommand_timeout_ms(commandTimeoutMs);
        o.setAcquire_timeout_ms(acquireTimeoutMs);
        o.setKeepalive_s(keepaliveS);
        o.setDisable_keepalive(disableKeepalive ? 1 : 0);
        o.setIdle_check_ms(idleCheckMs);
        return o;
    }

    @Override
    public String toString() {
        return "ClientOptions[poolSize=" + poolSize + ", connectTimeoutMs=" + connectTimeoutMs
                + ", commandTimeoutMs=" + commandTimeoutMs + ", acquireTimeoutMs=" + acquireTimeoutMs
                + ", keepaliveS=" + keepaliveS + ", disableKeepalive=" + disableKeepalive
                + ", idleCheckMs=" + idleCheckMs + "] (0: default)";
    }

    /**
     * Builds {@link ClientOptions}. Every setter rejects a zero or negative
     * value with {@link InvalidArgumentException}: leave a field unset for its
     * default.
     */
    public static final class Builder {
        private int poolSize;
        private int connectTimeoutMs;
        private int commandTimeoutMs;
        private int acquireTimeoutMs;
        private int keepaliveS;
        private boolean disableKeepalive;
        private int idleCheckMs;

        private Builder() {}

        /** Most connections open at once (default 8). */
        public Builder poolSize(int size) {
            if (size <= 0) throw new InvalidArgumentException("poolSize = " + size + " must be positive");
            poolSize = size;
            return this;
        }

        /** TCP or unix-socket connect timeout (default 1 s). */
        public Builder connectTimeout(Duration timeout) {
            connectTimeoutMs = millis("connectTimeout", timeout);
            return this;
        }

        /** Send plus reply of one command (default 1 s). */
        public Builder commandTimeout(Duration timeout) {
            commandTimeoutMs = millis("commandTimeout", timeout);
            return this;
        }

        /** Wait for a free pooled connection (default 1 s). */
        public Builder acquireTimeout(Duration timeout) {
            acquireTimeoutMs = millis("acquireTimeout", timeout);
            return this;
        }

        /** TCP keepalive interval, whole seconds rounded up (default 15 s). */
        public Builder keepalive(Duration interval) {
            long ms = millis("keepalive", interval);
            keepaliveS = (int) ((ms + 999) / 1000);
            disableKeepalive = false;
            return this;
        }

        /** No TCP keepalive. */
        public Builder disableKeepalive() {
            keepaliveS = 0;
            disableKeepalive = true;
            return this;
        }

        /** PING a connection idle longer than this before reusing it (default 30 s). */
        public Builder idleCheck(Duration idle) {
            idleCheckMs = millis("idleCheck", idle);
            return this;
        }

        public ClientOptions build() {
            return new ClientOptions(this);
        }

        // Positive, at least 1 ms (rounded up), and within an int as C wants.
        private static int millis(String name, Duration d) {
            if (d == null) throw new InvalidArgumentException(name + " is null");
            if (d.isNegative() || d.isZero()) throw new InvalidArgumentException(name + " = " + d + " must be positive");
            try {
                long ms = d.toMillis();
                if (d.minusMillis(ms).isZero() == false) ms++;
                return Math.toIntExact(ms);
            } catch (ArithmeticException e) {
                throw new InvalidArgumentException(name + " = " + d + " is too long");
            }
        }
    }
}
