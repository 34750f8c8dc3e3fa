package io.polylimit;

import io.polylimit.jni.polylimit_status;

/** POLYLIMIT_ETIMEOUT: the server did not answer in time. Retry later. */
public class TimeoutException extends PolylimitException {
    private static final long serialVersionUID = 1L;

    public TimeoutException(String message) {
        this(message, 0);
    }

    public TimeoutException(String message, int sysErrno) {
        super(polylimit_status.POLYLIMIT_ETIMEOUT, message, sysErrno);
    }
}
