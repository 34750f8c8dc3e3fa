package io.polylimit;

import io.polylimit.jni.polylimit_status;

/** POLYLIMIT_EPERM: an ACL denied a command or key (NOPERM). */
public class PermissionException extends PolylimitException {
    private static final long serialVersionUID = 1L;

    public PermissionException(String message) {
        this(message, 0);
    }

    public PermissionException(String message, int sysErrno) {
        super(polylimit_status.POLYLIMIT_EPERM, message, sysErrno);
    }
}
