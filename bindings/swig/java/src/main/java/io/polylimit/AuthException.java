package io.polylimit;

import io.polylimit.jni.polylimit_status;

/** POLYLIMIT_EAUTH: authentication failed (AUTH or ACL user). */
public class AuthException extends PolylimitException {
    private static final long serialVersionUID = 1L;

    public AuthException(String message) {
        this(message, 0);
    }

    public AuthException(String message, int sysErrno) {
        super(polylimit_status.POLYLIMIT_EAUTH, message, sysErrno);
    }
}
