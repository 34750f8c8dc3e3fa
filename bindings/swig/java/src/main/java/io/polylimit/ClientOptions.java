package io.polylimit;

import io.polylimit.jni.polylimit_client_options;
import java.time.Duration;
import java.util.Objects;

/**
 * Connection options of a {@link Client}; immutable. Anything not set (or set
 * to 0) keeps the C library's default ({@code Vocabulary.DEFAULT_*}). The C
 * core checks every value when the client opens.
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
     * Builds {@link ClientOptions}. A field left unset, or set to 0, takes the C
     * library's default. The setters only convert (a Duration to whole
     * milliseconds or seconds, rounded up); {@link Client#open(String, ClientOptions)}
     * rejects what the core does not accept, with an
     * {@link InvalidArgumentException} such as
     * {@code "pool_size = 5000 is out of range 1..4096"} (bounds in {@link Vocabulary}).
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

        /** Most connections open at once; 0: the default ({@link Vocabulary#DEFAULT_POOL_SIZE}). */
        public Builder poolSize(int size) {
            poolSize = size;
            return this;
        }

        /** TCP or unix-socket connect timeout; zero: the default ({@link Vocabulary#DEFAULT_CONNECT_TIMEOUT_MS} ms). */
        public Builder connectTimeout(Duration timeout) {
            connectTimeoutMs = Convert.intMillis(Objects.requireNonNull(timeout, "timeout"), "connect_timeout_ms",
                    Vocabulary.MIN_CONNECT_TIMEOUT_MS, Vocabulary.MAX_CONNECT_TIMEOUT_MS);
            return this;
        }

        /** Send plus reply of one command; zero: the default ({@link Vocabulary#DEFAULT_COMMAND_TIMEOUT_MS} ms). */
        public Builder commandTimeout(Duration timeout) {
            commandTimeoutMs = Convert.intMillis(Objects.requireNonNull(timeout, "timeout"), "command_timeout_ms",
                    Vocabulary.MIN_COMMAND_TIMEOUT_MS, Vocabulary.MAX_COMMAND_TIMEOUT_MS);
            return this;
        }

        /** Wait for a free pooled connection; zero: the default ({@link Vocabulary#DEFAULT_ACQUIRE_TIMEOUT_MS} ms). */
        public Builder acquireTimeout(Duration timeout) {
            acquireTimeoutMs = Convert.intMillis(Objects.requireNonNull(timeout, "timeout"), "acquire_timeout_ms",
                    Vocabulary.MIN_ACQUIRE_TIMEOUT_MS, Vocabulary.MAX_ACQUIRE_TIMEOUT_MS);
            return this;
        }

        /**
         * TCP keepalive interval, whole seconds rounded up; zero: the default
         * ({@link Vocabulary#DEFAULT_KEEPALIVE_S} s). Use {@link #disableKeepalive()} to turn it off.
         */
        public Builder keepalive(Duration interval) {
            keepaliveS = Convert.intSeconds(Objects.requireNonNull(interval, "interval"), "keepalive_s",
                    Vocabulary.MIN_KEEPALIVE_S, Vocabulary.MAX_KEEPALIVE_S);
            disableKeepalive = false;
            return this;
        }

        /** No TCP keepalive. */
        public Builder disableKeepalive() {
            keepaliveS = 0;
            disableKeepalive = true;
            return this;
        }

        /**
         * PING a connection idle longer than this before reusing it; zero: the
         * default ({@link Vocabulary#DEFAULT_IDLE_CHECK_MS} ms).
         */
        public Builder idleCheck(Duration idle) {
            idleCheckMs = Convert.intMillis(Objects.requireNonNull(idle, "idle"), "idle_check_ms",
                    Vocabulary.MIN_IDLE_CHECK_MS, Vocabulary.MAX_IDLE_CHECK_MS);
            return this;
        }

        public ClientOptions build() {
            return new ClientOptions(this);
        }
    }
}
