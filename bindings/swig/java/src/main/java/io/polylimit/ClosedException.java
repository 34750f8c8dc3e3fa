package io.polylimit;

import io.polylimit.jni.polylimit_status;

/** POLYLIMIT_ECLOSED: the client or limiter was closed. */
public class ClosedException extends PolylimitException {
    private static final long serialVersionUID = 1L;

    public ClosedException(String message) {
        this(message, 0);
    }

    public ClosedException(String message, int sysErrno) {
        super(polylimit_status.POLYLIMIT_ECLOSED, message, sysErrno);
    }
}
