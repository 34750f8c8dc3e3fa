package io.polylimit;

import io.polylimit.jni.polylimit_status;

/**
 * A failed call into polylimit, carrying the C status code ({@code POLYLIMIT_E*}) and
 * the C library's message. Unchecked: most callers either let it propagate or
 * decide on the subclass (retry later on {@link UnavailableException},
 * {@link TimeoutException}, {@link PoolExhaustedException}; fix the call on
 * {@link InvalidArgumentException}). A denial is not an exception: see
 * {@link Decision#allowed()}.
 */
public class PolylimitException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int code;
    private final int sysErrno;

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

    @Override
    public String toString() {
        return getClass().getName() + " [" + statusName() + "]: " + getMessage();
    }

    /**
     * The exception for a status code: the subclass where one exists, else this
     * class (POLYLIMIT_ERROR, POLYLIMIT_ENOMEM, POLYLIMIT_ESERVER and codes newer than this binding).
     */
    public static PolylimitException of(int code, String message, int sysErrno) {
        switch (code) {
            case polylimit_status.POLYLIMIT_EINVALID: return new InvalidArgumentException(message, sysErrno);
            case polylimit_status.POLYLIMIT_EUNAVAILABLE: return new UnavailableException(message, sysErrno);
            case polylimit_status.POLYLIMIT_ETIMEOUT: return new TimeoutException(message, sysErrno);
            case polylimit_status.POLYLIMIT_EAUTH: return new AuthException(message, sysErrno);
            case polylimit_status.POLYLIMIT_EPERM: return new PermissionException(message, sysErrno);
            case polylimit_status.POLYLIMIT_ESCRIPT: return new ScriptException(message, sysErrno);
            case polylimit_status.POLYLIMIT_EPOOL: return new PoolExhaustedException(message, sysErrno);
            case polylimit_status.POLYLIMIT_ECLOSED: return new ClosedException(message, sysErrno);
            default: return new PolylimitException(code, message, sysErrno);
        }
    }
}
