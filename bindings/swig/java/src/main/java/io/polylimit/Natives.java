package io.polylimit;

import java.lang.ref.Cleaner;

/** Shared by the handle owners: one Cleaner thread for the whole library. */
final class Natives {
    /** Safety net only: close() is the contract, this frees what was forgotten. */
    static final Cleaner CLEANER = Cleaner.create();

    private Natives() {}
}
