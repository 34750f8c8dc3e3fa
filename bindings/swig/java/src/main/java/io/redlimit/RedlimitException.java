package io.redlimit;

import io.redlimit.jni.rl_status;

/**
 * A failed call into redlimit, carrying the C status code ({@code RL_E*}) and
 * the C library's message. Unchecked: most callers either let it propagate or
 * decide on the subclass (retry later on {@link UnavailableException},
 * {@link TimeoutException}, {@link PoolExhaustedException}; fix the call on
 * {@link InvalidArgumentException}). A denial is not an exception: see
 * {@link Decision#allowed()}.
 */
public class RedlimitException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int code;
    private final int sysErrno;

    public RedlimitException(int code, String message) {
        this(code, message, 0);
    }

    public RedlimitException(int code, String message, int sysErrno) {
        super(message == null || message.isEmpty() ? Status.name(code) : message);
        this.code = code;
        this.sysErrno = sysErrno;
    }

    /** The C status code, e.g. -4 for RL_ETIMEOUT. */
    public int code() {
        return code;
    }

    /** The code's constant name, e.g. "RL_ETIMEOUT". */
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
     * class (RL_ERROR, RL_ENOMEM, RL_ESERVER and codes newer than this binding).
     */
    public static RedlimitException of(int code, String message, int sysErrno) {
        switch (code) {
            case rl_status.RL_EINVALID: return new InvalidArgumentException(message, sysErrno);
            case rl_status.RL_EUNAVAILABLE: return new UnavailableException(message, sysErrno);
            case rl_status.RL_ETIMEOUT: return new TimeoutException(message, sysErrno);
            case rl_status.RL_EAUTH: return new AuthException(message, sysErrno);
            case rl_status.RL_EPERM: return new PermissionException(message, sysErrno);
            case rl_status.RL_ESCRIPT: return new ScriptException(message, sysErrno);
            case rl_status.RL_EPOOL: return new PoolExhaustedException(message, sysErrno);
            case rl_status.RL_ECLOSED: return new ClosedException(message, sysErrno);
            default: return new RedlimitException(code, message, sysErrno);
        }
    }
}
