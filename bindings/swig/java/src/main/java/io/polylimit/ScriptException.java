package io.polylimit;

import io.polylimit.jni.polylimit_status;

/** POLYLIMIT_ESCRIPT: the Lua script failed inside Redis. */
public class ScriptException extends PolylimitException {
    private static final long serialVersionUID = 1L;

    public ScriptException(String message) {
        this(message, 0);
    }

    public ScriptException(String message, int sysErrno) {
        super(polylimit_status.POLYLIMIT_ESCRIPT, message, sysErrno);
    }
}
