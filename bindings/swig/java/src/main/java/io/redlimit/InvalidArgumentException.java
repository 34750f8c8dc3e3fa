package io.redlimit;

import io.redlimit.jni.rl_status;

/** RL_EINVALID: a bad argument (limit, window, cost, key, URL, option). Fix the call; do not retry. */
public class InvalidArgumentException extends RedlimitException {
    private static final long serialVersionUID = 1L;

    public InvalidArgumentException(String message) {
        this(message, 0);
    }

    public InvalidArgumentException(String message, int sysErrno) {
        super(rl_status.RL_EINVALID, message, sysErrno);
    }
}
