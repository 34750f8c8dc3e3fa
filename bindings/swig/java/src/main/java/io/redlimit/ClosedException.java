package io.redlimit;

import io.redlimit.jni.rl_status;

/** RL_ECLOSED: the client or limiter was closed. */
public class ClosedException extends RedlimitException {
    private static final long serialVersionUID = 1L;

    public ClosedException(String message) {
        this(message, 0);
    }

    public ClosedException(String message, int sysErrno) {
        super(rl_status.RL_ECLOSED, message, sysErrno);
    }
}
