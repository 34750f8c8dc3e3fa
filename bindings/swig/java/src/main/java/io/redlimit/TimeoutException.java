package io.redlimit;

import io.redlimit.jni.rl_status;

/** RL_ETIMEOUT: the server did not answer in time. Retry later. */
public class TimeoutException extends RedlimitException {
    private static final long serialVersionUID = 1L;

    public TimeoutException(String message) {
        this(message, 0);
    }

    public TimeoutException(String message, int sysErrno) {
        super(rl_status.RL_ETIMEOUT, message, sysErrno);
    }
}
