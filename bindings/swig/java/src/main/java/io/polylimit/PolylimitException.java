package io.polylimit;

/**
 * A failed call into polylimit, carrying the C status code ({@code POLYLIMIT_E*}) and
 * the C library's message. Unchecked: most callers either let it propagate or
 * decide on the subclass (retry later on {@link UnavailableException},
 * {@link TimeoutException}, {@link PoolExhaustedException}, or whenever
 * {@link #retryable()}; fix the call on {@link InvalidArgumentException}).
 * A denial is not an exception: see {@link Decision#allowed()}.
 *
 * <p>This base class is written by hand; each status has a subclass generated
 * from capi/vocabulary/vocabulary.json together with {@link Status} (which maps
 * codes to them). POLYLIMIT_ERROR and codes newer than this binding are this
 * class itself.
 */
public class PolylimitException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int code;
    private final int sysErrno;
    private boolean outcomeUnknown;

    public PolylimitException(int code, String message) {
        this(code, message, 0);
    }

    public PolylimitException(int code, String message, int sysErrno) {
        super(message == null || message.isEmpty() ? Status.name(code) : message);
        this.code = code;
        this.sysErrno = sysErrno;
    }

    /** The C status code, e.g. -4 for POLYLIMIT_ETIMEOUT. */
    public int code() {
        return code;
    }

    /** The code's constant name, e.g. "POLYLIMIT_ETIMEOUT". */
    public String statusName() {
        return Status.name(code);
    }

    /** errno of the failing system call, or 0. */
    public int sysErrno() {
        return sysErrno;
    }

    /**
     * True when the call failed after its command was sent to Redis (a timeout
     * waiting for the reply, a connection lost after the send): the script may
     * have run and consumed units. False when it failed before the send
     * (connection refused, pool exhausted, a bad argument) or Redis answered
     * with an error (the script did not run). For a batch: per key; the batch's
     * own exception is true when any failed key's outcome is unknown. See
     * docs/error-model.md.
     */
    public boolean outcomeUnknown() {
        return outcomeUnknown;
    }

    /** Sets {@link #outcomeUnknown()} from the C error; returns this. */
    PolylimitException withOutcomeUnknown(boolean unknown) {
        this.outcomeUnknown = unknown;
        return this;
    }

    @Override
    public String toString() {
        return getClass().getName() + " [" + statusName() + "]: " + getMessage();
    }

    /** Whether a later retry of the same call may succeed (timeouts, outages, an exhausted pool). */
    public boolean retryable() {
        return Status.retryable(code);
    }

    /**
     * The exception for a status code: the generated subclass where one exists,
     * else this class (POLYLIMIT_ERROR and codes newer than this binding).
     */
    public static PolylimitException of(int code, String message, int sysErrno) {
        return Status.exception(code, message, sysErrno);
    }
}
