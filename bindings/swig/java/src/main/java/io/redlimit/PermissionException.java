package io.redlimit;

import io.redlimit.jni.rl_status;

/** RL_EPERM: an ACL denied a command or key (NOPERM). */
public class PermissionException extends RedlimitException {
    private static final long serialVersionUID = 1L;

    public PermissionException(String message) {
        this(message, 0);
    }

    public PermissionException(String message, int sysErrno) {
        super(rl_status.RL_EPERM, message, sysErrno);
    }
}
