package io.polylimit;

import io.polylimit.jni.PolylimitNative;
import io.polylimit.jni.PolylimitNativeConstants;
import java.io.File;

/**
 * Loads the JNI library {@code polylimit_jni} (which links {@code libpolylimit.so.1})
 * and checks that the C library is at least the version the binding was
 * generated from.
 *
 * <p>Where it looks: the system property {@code polylimit.library.path} (a
 * directory holding {@code libpolylimit_jni.so}, or the file itself) if set,
 * else {@code java.library.path} through {@link System#loadLibrary}.
 */
public final class NativeLibrary {
    /** The JNI library's name as {@link System#loadLibrary} takes it. */
    public static final String LIBRARY_NAME = "polylimit_jni";
    /** System property naming a directory (or file) to load it from. */
    public static final String PATH_PROPERTY = "polylimit.library.path";

    private static boolean linked;           // System.load* succeeded (guarded by the class lock)
    private static volatile boolean checked; // ... and the version check passed
    private static volatile String failure;  // why it failed, repeated to every caller

    private NativeLibrary() {}

    /**
     * Makes sure the library is loaded and new enough. Idempotent and cheap
     * after the first call.
     *
     * @throws UnsatisfiedLinkError when the library cannot be loaded or is
     *     older than the header the binding was generated from
     */
    public static void load() {
        // No lock held here while the JNI class initialises: its initialiser
        // calls link(), and a lock around both could deadlock with a thread
        // that touched the generated classes first.
        if (checked) return;
        link();
        try {
            PolylimitNative.polylimit_version_number(); // initialises the JNI class, which checks the version
        } catch (NoClassDefFoundError e) {
            // The initialiser failed in an earlier call; repeat its message.
            if (failure == null) throw e;
            UnsatisfiedLinkError error = new UnsatisfiedLinkError(failure);
            error.initCause(e);
            throw error;
        }
        checked = true;
    }

    /**
     * Fails unless the loaded C library is at least the version of the header
     * the binding was generated from. Called once, by the JNI class.
     */
    public static void checkVersion(int runtime, String runtimeString) {
        int compiled = PolylimitNativeConstants.POLYLIMIT_VERSION_NUMBER;
        if (runtime >= compiled) return;
        failure = "polylimit: the loaded C library is version " + runtimeString + " (" + runtime
                + "), older than " + PolylimitNativeConstants.POLYLIMIT_VERSION_STRING + " (" + compiled
                + ") that this binding was generated from; put a newer libpolylimit.so.1 on the loader's path";
        throw new UnsatisfiedLinkError(failure);
    }

    /**
     * Loads the shared object only. Called from the static initialiser of the
     * generated JNI class, so any use of io.polylimit.jni loads it first.
     */
    public static synchronized void link() {
        if (linked) return;
        if (failure != null) throw new UnsatisfiedLinkError(failure);
        String dir = System.getProperty(PATH_PROPERTY);
        try {
            if (dir != null && !dir.isEmpty()) {
                File f = new File(dir);
                if (f.isDirectory()) f = new File(f, System.mapLibraryName(LIBRARY_NAME));
                System.load(f.getAbsolutePath());
            } else {
                System.loadLibrary(LIBRARY_NAME);
            }
        } catch (UnsatisfiedLinkError e) {
            String where = dir != null && !dir.isEmpty()
                    ? "-D" + PATH_PROPERTY + "=" + dir
                    : "java.library.path=" + System.getProperty("java.library.path");
            failure = "polylimit: cannot load the JNI library " + System.mapLibraryName(LIBRARY_NAME)
                    + " from " + where + " (" + e.getMessage() + "). Build it from bindings/swig and pass "
                    + "-Djava.library.path=DIR or -D" + PATH_PROPERTY + "=DIR; libpolylimit.so.1 must be "
                    + "findable by the dynamic loader too (LD_LIBRARY_PATH or an installed prefix)";
            UnsatisfiedLinkError error = new UnsatisfiedLinkError(failure);
            error.initCause(e);
            throw error;
        }
        linked = true;
    }

    /** Version of the loaded C library, e.g. "1.0.0". */
    public static String version() {
        load();
        return PolylimitNative.polylimit_version_string();
    }

    /** Version of the C header the binding was generated from. */
    public static String bindingVersion() {
        return PolylimitNativeConstants.POLYLIMIT_VERSION_STRING;
    }
}
