package io.polylimit;

import io.polylimit.jni.polylimit_status;

/** POLYLIMIT_EUNAVAILABLE: cannot connect, or the connection broke. Retry later. */
public class UnavailableException extends PolylimitException {
    private static final long serialVersionUID = 1L;

    public UnavailableException(String message) {
        this(message, 0);
    }

    public UnavailableException(String message, int sysErrno) {
        super(polylimit_status.POLYLIMIT_EUNAVAILABLE, message, sysErrno);
    }
}
