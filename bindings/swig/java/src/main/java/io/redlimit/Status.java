package io.redlimit;

import io.redlimit.jni.rl_status;
import io.redlimit.jni.rl_error;
import java.nio.charset.StandardCharsets;

/** Turns C status codes into results or exceptions: the one place that does. */
final class Status {
    private Status() {}

    static String name(int code) {
        // As rl_status_name, without loading the library for it.
        switch (code) {
            case rl_status.RL_OK: return "RL_OK";
            case rl_status.RL_ERROR: return "RL_ERROR";
            case rl_status.RL_EINVALID: return "RL_EINVALID";
            case rl_status.RL_EUNAVAILABLE: return "RL_EUNAVAILABLE";
            case rl_status.RL_ETIMEOUT: return "RL_ETIMEOUT";
            case rl_status.RL_EAUTH: return "RL_EAUTH";
            case rl_status.RL_EPERM: return "RL_EPERM";
            case rl_status.RL_ESCRIPT: return "RL_ESCRIPT";
            case rl_status.RL_EPOOL: return "RL_EPOOL";
            case rl_status.RL_ENOMEM: return "RL_ENOMEM";
            case rl_status.RL_ESERVER: return "RL_ESERVER";
            case rl_status.RL_ECLOSED: return "RL_ECLOSED";
            default: return "RL_UNKNOWN(" + code + ")";
        }
    }

    /** Throws the exception for rc unless it is RL_OK. */
    static void check(int rc, rl_error err) {
        if (rc == rl_status.RL_OK) return;
        String message = "";
        int sysErrno = 0;
        if (err != null) {
            message = new String(err.messageBytes(), StandardCharsets.UTF_8);
            sysErrno = err.getSys_errno();
        }
        throw RedlimitException.of(rc, message, sysErrno);
    }
}
