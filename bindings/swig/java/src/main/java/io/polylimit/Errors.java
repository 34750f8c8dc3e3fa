package io.polylimit;

import io.polylimit.jni.polylimit_completion_batch;
import io.polylimit.jni.polylimit_error;
import io.polylimit.jni.polylimit_error_list;
import java.nio.charset.StandardCharsets;

/**
 * Turns C status codes into results or exceptions: the one place that does.
 * The codes, their names and their exception classes come from the generated
 * {@link Status}; this class only reads a {@code polylimit_error}.
 */
final class Errors {
    private Errors() {}

    /** Throws the exception for rc unless it is POLYLIMIT_OK. */
    static void check(int rc, polylimit_error err) {
        if (rc != Status.OK) throw exception(rc, err);
    }

    /** The exception for rc with err's message, errno and outcome_unknown (err may be null). */
    static PolylimitException exception(int rc, polylimit_error err) {
        if (err == null) return Status.exception(rc, "", 0);
        return Status.exception(rc, text(err.messageBytes()), err.getSys_errno())
                .withOutcomeUnknown(err.getOutcome_unknown() != 0);
    }

    /** The exception of key i of a batch: its own code, message, errno and outcome_unknown. */
    static PolylimitException exception(polylimit_error_list errors, int i, int code) {
        // The list holds the code too; the statuses array is authoritative.
        return Status.exception(code, text(errors.messageBytes(i)), errors.sysErrno(i))
                .withOutcomeUnknown(errors.outcomeUnknown(i) != 0);
    }

    /** The exception of completion i of a polled batch: its status, message, errno and outcome_unknown. */
    static PolylimitException exception(polylimit_completion_batch batch, int i, int code) {
        return Status.exception(code, text(batch.messageBytes(i)), batch.sysErrno(i))
                .withOutcomeUnknown(batch.outcomeUnknown(i) != 0);
    }

    private static String text(byte[] message) {
        return new String(message, StandardCharsets.UTF_8);
    }
}
