package io.polylimit;

import io.polylimit.jni.polylimit_client_options;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.function.ToIntFunction;

/**
 * Connection options of a {@link Client}; immutable. Anything not set (or set
 * to 0) keeps the C library's default ({@code Vocabulary.DEFAULT_*}). The C
 * core checks every value when the client opens.
 *
 * <pre>{@code
 * ClientOptions opts = ClientOptions.builder()
 *     .name("api")                        // metrics: client="api"
 *     .poolSize(16)
 *     .commandTimeout(Duration.ofMillis(200))
 *     .build();
 * }</pre>
 *
 * <p>The TLS options ({@code tls*}) apply to {@code rediss://} URLs; the core
 * refuses them on any other URL rather than ignore them. They are passed to
 * the core as they are: the files are read by the C library, not by Java.
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
    // null: unset (NULL in C).
    private final String name;
    private final String tlsCaFile;
    private final String tlsCaDir;
    private final String tlsCertFile;
    private final String tlsKeyFile;
    private final String tlsServerName;
    private final boolean tlsInsecure;
    private final boolean coalesce;

    private ClientOptions(Builder b) {
        poolSize = b.poolSize;
        connectTimeoutMs = b.connectTimeoutMs;
        commandTimeoutMs = b.commandTimeoutMs;
        acquireTimeoutMs = b.acquireTimeoutMs;
        keepaliveS = b.keepaliveS;
        disableKeepalive = b.disableKeepalive;
        idleCheckMs = b.idleCheckMs;
        name = b.name;
        tlsCaFile = b.tlsCaFile;
        tlsCaDir = b.tlsCaDir;
        tlsCertFile = b.tlsCertFile;
        tlsKeyFile = b.tlsKeyFile;
        tlsServerName = b.tlsServerName;
        tlsInsecure = b.tlsInsecure;
        coalesce = b.coalesce;
    }

    /** The C library's defaults. */
    public static ClientOptions defaults() {
        return DEFAULTS;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The metrics label ({@code client="name"}), or null when unset. */
    public String name() {
        return name;
    }

    /** A native copy; the caller deletes it. */
    polylimit_client_options toNative() {
        polylimit_client_options o = new polylimit_client_options();
        try {
            o.setPool_size(poolSize);
            o.setConnect_timeout_ms(connectTimeoutMs);
            o.setCommand_timeout_ms(commandTimeoutMs);
            o.setAcquire_timeout_ms(acquireTimeoutMs);
            o.setKeepalive_s(keepaliveS);
            o.setDisable_keepalive(disableKeepalive ? 1 : 0);
            o.setIdle_check_ms(idleCheckMs);
            setString(o::setName, "name", name);
            setString(o::setTlsCaFile, "tls_ca_file", tlsCaFile);
            setString(o::setTlsCaDir, "tls_ca_dir", tlsCaDir);
            setString(o::setTlsCertFile, "tls_cert_file", tlsCertFile);
            setString(o::setTlsKeyFile, "tls_key_file", tlsKeyFile);
            setString(o::setTlsServerName, "tls_server_name", tlsServerName);
            o.setTls_insecure(tlsInsecure ? 1 : 0);
            o.setNo_coalescing(coalesce ? 0 : 1);
            return o;
        } catch (RuntimeException e) {
            o.delete();
            throw e;
        }
    }

    private static void setString(ToIntFunction<byte[]> setter, String field, String value) {
        if (value == null) return;
        int rc = setter.applyAsInt(value.getBytes(StandardCharsets.UTF_8));
        if (rc == Status.EINVALID) throw new InvalidArgumentException(field + " contains a NUL character");
        if (rc != Status.OK) throw Status.exception(rc, "copying " + field, 0);
    }

    /** Every option; file paths are shown, never the files' contents. */
    @Override
    public String toString() {
        StringBuilder b = new StringBuilder("ClientOptions[poolSize=").append(poolSize)
                .append(", connectTimeoutMs=").append(connectTimeoutMs)
                .append(", commandTimeoutMs=").append(commandTimeoutMs)
                .append(", acquireTimeoutMs=").append(acquireTimeoutMs)
                .append(", keepaliveS=").append(keepaliveS)
                .append(", disableKeepalive=").append(disableKeepalive)
                .append(", idleCheckMs=").append(idleCheckMs);
        if (name != null) b.append(", name=").append(name);
        if (tlsCaFile != null) b.append(", tlsCaFile=").append(tlsCaFile);
        if (tlsCaDir != null) b.append(", tlsCaDir=").append(tlsCaDir);
        if (tlsCertFile != null) b.append(", tlsCertFile=").append(tlsCertFile);
        if (tlsKeyFile != null) b.append(", tlsKeyFile=").append(tlsKeyFile);
        if (tlsServerName != null) b.append(", tlsServerName=").append(tlsServerName);
        if (tlsInsecure) b.append(", tlsInsecure");
        if (!coalesce) b.append(", coalesce=false");
        return b.append("] (0: default)").toString();
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
        private String name;
        private String tlsCaFile;
        private String tlsCaDir;
        private String tlsCertFile;
        private String tlsKeyFile;
        private String tlsServerName;
        private boolean tlsInsecure;
        private boolean coalesce = true;

        private Builder() {}

        /**
         * Names the client: its metrics are labelled {@code client="name"}
         * ({@link Client#statsPrometheus()}, {@link Client#prometheusText(Client...)},
         * the Micrometer binder). Up to 128 letters, digits and {@code _ - . : /}
         * (the core checks); null: unnamed.
         */
        public Builder name(String name) {
            this.name = name;
            return this;
        }

        /** {@code rediss://}: PEM bundle of the CAs to trust; unset (and no {@link #tlsCaDir}): the system's CAs. */
        public Builder tlsCaFile(Path file) {
            tlsCaFile = file == null ? null : file.toString();
            return this;
        }

        /** {@code rediss://}: a directory of hashed CA certificates. */
        public Builder tlsCaDir(Path dir) {
            tlsCaDir = dir == null ? null : dir.toString();
            return this;
        }

        /** {@code rediss://}: the client certificate (PEM), for mutual TLS, with {@link #tlsKeyFile}. */
        public Builder tlsCertFile(Path file) {
            tlsCertFile = file == null ? null : file.toString();
            return this;
        }

        /** {@code rediss://}: the client certificate's private key (PEM); its path is passed, never its contents. */
        public Builder tlsKeyFile(Path file) {
            tlsKeyFile = file == null ? null : file.toString();
            return this;
        }

        /** {@code rediss://}: SNI and the name the server certificate must match; null: the URL's host. */
        public Builder tlsServerName(String serverName) {
            tlsServerName = serverName;
            return this;
        }

        /** {@code rediss://}: no certificate or host name verification. For tests only. */
        public Builder tlsInsecure(boolean insecure) {
            tlsInsecure = insecure;
            return this;
        }

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

        /** Wait for room when a connection already has 4096 calls queued; zero: the default ({@link Vocabulary#DEFAULT_ACQUIRE_TIMEOUT_MS} ms). */
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

        /**
         * Coalescing of hot keys, on by default: checks of one key that arrive
         * while a call of that key is in flight (from any thread, blocking or
         * async) wait in the client and go out together as one script call,
         * decided exactly as separate calls would be (docs/limiter.md, "Hot
         * keys: coalescing"). {@code false}: every check is its own call.
         * {@link Stats} counts the calls in {@code roundTrips}.
         */
        public Builder coalesce(boolean on) {
            coalesce = on;
            return this;
        }

        public ClientOptions build() {
            return new ClientOptions(this);
        }
    }
}
