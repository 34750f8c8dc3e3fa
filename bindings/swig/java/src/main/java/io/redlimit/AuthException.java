package io.redlimit;

import io.redlimit.jni.rl_status;

/** RL_EAUTH: authentication failed (AUTH or ACL user). */
public class AuthException extends RedlimitException {
    private static final long serialVersionUID = 1L;

    public AuthException(String message) {
        this(message, 0);
    }

    public AuthException(String message, int sysErrno) {
        super(rl_status.RL_EAUTH, message, sysErrno);
    }
}
