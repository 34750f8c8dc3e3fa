package io.redlimit;

import io.redlimit.jni.rl_status;

/** RL_ESCRIPT: the Lua script failed inside Redis. */
public class ScriptException extends RedlimitException {
    private static final long serialVersionUID = 1L;

    public ScriptException(String message) {
        this(message, 0);
    }

    public ScriptException(String message, int sysErrno) {
        super(rl_status.RL_ESCRIPT, message, sysErrno);
    }
}
