package io.polylimit;

import io.polylimit.jni.polylimit_status;
import io.polylimit.jni.polylimit_error;
import java.nio.charset.StandardCharsets;

/** Turns C status codes into results or exceptions: the one place that does. */
final class Status {
    private Status() {}

    static String name(int code) {
        // As polylimit_status_name, without loading the library for it.
        switch (code) {
            case polylimit_status.POLYLIMIT_OK: return "POLYLIMIT_OK";
            case polylimit_status.POLYLIMIT_ERROR: return "POLYLIMIT_ERROR";
            case polylimit_status.POLYLIMIT_EINVALID: return "POLYLIMIT_EINVALID";
            case polylimit_status.POLYLIMIT_EUNAVAILABLE: return "POLYLIMIT_EUNAVAILABLE";
            case polylimit_status.POLYLIMIT_ETIMEOUT: return "POLYLIMIT_ETIMEOUT";
            case polylimit_status.POLYLIMIT_EAUTH: return "POLYLIMIT_EAUTH";
            case polylimit_status.POLYLIMIT_EPERM: return "POLYLIMIT_EPERM";
            case polylimit_status.POLYLIMIT_ESCRIPT: return "POLYLIMIT_ESCRIPT";
            case polylimit_status.POLYLIMIT_EPOOL: return "POLYLIMIT_EPOOL";
            case polylimit_status.POLYLIMIT_ENOMEM: return "POLYLIMIT_ENOMEM";
            case polylimit_status.POLYLIMIT_ESERVER: return "POLYLIMIT_ESERVER";
            case polylimit_status.POLYLIMIT_ECLOSED: return "POLYLIMIT_ECLOSED";
            default: return "POLYLIMIT_UNKNOWN(" + code + ")";
        }
    }

    /** Throws the exception for rc unless it is POLYLIMIT_OK. */
    static void check(int rc, polylimit_error err) {
        if (rc == polylimit_status.POLYLIMIT_OK) return;
        String message = "";
        int sysErrno = 0;
        if (err != null) {
            message = new String(err.messageBytes(), StandardCharsets.UTF_8);
            sysErrno = err.getSys_errno();
        }
        throw PolylimitException.of(rc, message, sysErrno);
    }
}
