package io.polylimit;

import io.polylimit.jni.polylimit_status;

/** POLYLIMIT_EINVALID: a bad argument (limit, window, cost, key, URL, option). Fix the call; do not retry. */
public class InvalidArgumentException extends PolylimitException {
    private static final long serialVersionUID = 1L;

    public InvalidArgumentException(String message) {
        this(message, 0);
    }

    public InvalidArgumentException(String message, int sysErrno) {
        super(polylimit_status.POLYLIMIT_EINVALID, message, sysErrno);
    }
}
