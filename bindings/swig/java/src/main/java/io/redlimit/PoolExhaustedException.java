package io.redlimit;

import io.redlimit.jni.rl_status;

/** RL_EPOOL: no pooled connection became free in time. Retry later. */
public class PoolExhaustedException extends RedlimitException {
    private static final long serialVersionUID = 1L;

    public PoolExhaustedException(String message) {
        this(message, 0);
    }

    public PoolExhaustedException(String message, int sysErrno) {
        super(rl_status.RL_EPOOL, message, sysErrno);
    }
}
