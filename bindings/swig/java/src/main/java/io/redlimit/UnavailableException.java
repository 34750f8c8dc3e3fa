package io.redlimit;

import io.redlimit.jni.rl_status;

/** RL_EUNAVAILABLE: cannot connect, or the connection broke. Retry later. */
public class UnavailableException extends RedlimitException {
    private static final long serialVersionUID = 1L;

    public UnavailableException(String message) {
        this(message, 0);
    }

    public UnavailableException(String message, int sysErrno) {
        super(rl_status.RL_EUNAVAILABLE, message, sysErrno);
    }
}
