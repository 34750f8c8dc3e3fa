package io.polylimit;

import io.polylimit.jni.polylimit_status;

/** POLYLIMIT_EPOOL: no pooled connection became free in time. Retry later. */
public class PoolExhaustedException extends PolylimitException {
    private static final long serialVersionUID = 1L;

    public PoolExhaustedException(String message) {
        this(message, 0);
    }

    public PoolExhaustedException(String message, int sysErrno) {
        super(polylimit_status.POLYLIMIT_EPOOL, message, sysErrno);
    }
}
