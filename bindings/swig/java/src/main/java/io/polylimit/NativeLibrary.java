package io.polylimit;

import io.polylimit.jni.PolylimitNative;
import io.polylimit.jni.PolylimitNativeConstants;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Locale;

/**
 * Loads the JNI library {@code polylimit_jni} and checks that the C library
 * in it is at least the version the binding was generated from.
 *
 * <p>Where it looks, first match wins:
 * <ol>
 *   <li>the system property {@code polylimit.library.path}: a directory
 *       holding {@code libpolylimit_jni.so}, or the file itself;
 *   <li>{@code -Dpolylimit.use.system.library=true}: {@link System#loadLibrary}
 *       (that is, {@code java.library.path});
 *   <li>the copy in the jar, {@code META-INF/native/<os>-<arch>/libpolylimit_jni.so}
 *       (the core and OpenSSL linked in): extracted to a new temporary file
 *       readable by the owner only, in {@code polylimit.tmpdir} or else
 *       {@code java.io.tmpdir}, loaded, and deleted when the JVM exits;
 *   <li>without a copy for this platform in the jar, {@link System#loadLibrary}.
 * </ol>
 */
public final class NativeLibrary {
    /** The JNI library's name as {@link System#loadLibrary} takes it. */
    public static final String LIBRARY_NAME = "polylimit_jni";
    /** System property naming a directory (or file) to load it from. */
    public static final String PATH_PROPERTY = "polylimit.library.path";
    /** System property: {@code true} loads it with {@link System#loadLibrary}, never from the jar. */
    public static final String SYSTEM_PROPERTY = "polylimit.use.system.library";
    /** System property naming the directory the jar's copy is extracted to (default {@code java.io.tmpdir}). */
    public static final String TMPDIR_PROPERTY = "polylimit.tmpdir";
    /** Where the jar keeps its copies: {@code RESOURCE_DIR + "/" + platform() + "/" + mapLibraryName}. */
    public static final String RESOURCE_DIR = "/META-INF/native";

    private static boolean linked;           // System.load* succeeded (guarded by the class lock)
    private static volatile boolean checked; // ... and the version check passed
    private static volatile String failure;  // why it failed, repeated to every caller
    private static volatile String location; // what was loaded: a path, or "System.loadLibrary(...)"

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
        failure = "polylimit: the loaded C library (" + location + ") is version " + runtimeString + " (" + runtime
                + "), older than " + PolylimitNativeConstants.POLYLIMIT_VERSION_STRING + " (" + compiled
                + ") that this binding was generated from; load the JNI library of this jar (drop -D"
                + PATH_PROPERTY + " and -D" + SYSTEM_PROPERTY + ") or a newer libpolylimit";
        throw new UnsatisfiedLinkError(failure);
    }

    /**
     * The {@code <os>-<arch>} directory of this JVM's platform under
     * {@link #RESOURCE_DIR}, e.g. {@code linux-x86_64} or {@code linux-aarch64}.
     */
    public static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        if (os.startsWith("linux")) os = "linux";
        else if (os.startsWith("mac") || os.startsWith("darwin")) os = "macos";
        else if (os.startsWith("windows")) os = "windows";
        else os = os.replaceAll("[^a-z0-9]+", "");
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        if (arch.equals("amd64") || arch.equals("x86_64") || arch.equals("x86-64")) arch = "x86_64";
        else if (arch.equals("aarch64") || arch.equals("arm64")) arch = "aarch64";
        return os + "-" + arch;
    }

    /** The jar's copy for this platform, as a class-path resource name. */
    public static String resourceName() {
        return RESOURCE_DIR + "/" + platform() + "/" + System.mapLibraryName(LIBRARY_NAME);
    }

    /**
     * What was loaded: the file's path (for the jar's copy, the temporary file
     * it was extracted to), or {@code System.loadLibrary(polylimit_jni)}.
     * Loads the library first.
     */
    public static String location() {
        load();
        return location;
    }

    /**
     * Loads the shared object only. Called from the static initialiser of the
     * generated JNI class, so any use of io.polylimit.jni loads it first.
     */
    public static synchronized void link() {
        if (linked) return;
        if (failure != null) throw new UnsatisfiedLinkError(failure);
        String path = System.getProperty(PATH_PROPERTY);
        boolean system = Boolean.getBoolean(SYSTEM_PROPERTY);
        URL resource = null;
        String where;
        if (path != null && !path.isEmpty()) {
            where = "-D" + PATH_PROPERTY + "=" + path;
        } else if (system) {
            where = "java.library.path=" + System.getProperty("java.library.path")
                    + " (-D" + SYSTEM_PROPERTY + "=true)";
        } else {
            resource = NativeLibrary.class.getResource(resourceName());
            where = resource != null ? "the jar's " + resourceName().substring(1)
                    : "java.library.path=" + System.getProperty("java.library.path")
                            + " (the jar has no " + resourceName().substring(1) + ")";
        }
        try {
            if (path != null && !path.isEmpty()) {
                File f = new File(path);
                if (f.isDirectory()) f = new File(f, System.mapLibraryName(LIBRARY_NAME));
                System.load(f.getAbsolutePath());
                location = f.getAbsolutePath();
            } else if (resource != null) {
                loadFromJar(resource);
            } else {
                System.loadLibrary(LIBRARY_NAME);
                location = "System.loadLibrary(" + LIBRARY_NAME + ")";
            }
        } catch (UnsatisfiedLinkError | IOException | SecurityException e) {
            failure = "polylimit: cannot load the JNI library " + System.mapLibraryName(LIBRARY_NAME)
                    + " from " + where + ": " + e + ". The jar carries it for linux-x86_64; elsewhere, build it "
                    + "from bindings/swig and pass -D" + PATH_PROPERTY + "=DIR (or -D" + SYSTEM_PROPERTY
                    + "=true and -Djava.library.path=DIR); when the temporary directory is mounted noexec, "
                    + "point -D" + TMPDIR_PROPERTY + "=DIR elsewhere";
            UnsatisfiedLinkError error = new UnsatisfiedLinkError(failure);
            error.initCause(e);
            throw error;
        }
        linked = true;
    }

    /**
     * Copies the jar's library to a new file that only this user can read
     * (created with those permissions under a random name, never opened if it
     * exists: safe in a shared /tmp), loads it and deletes it at exit. A file
     * of its own per class loader, so two class loaders can each load one.
     */
    private static void loadFromJar(URL resource) throws IOException {
        String tmp = System.getProperty(TMPDIR_PROPERTY);
        if (tmp == null || tmp.isEmpty()) tmp = System.getProperty("java.io.tmpdir");
        Path dir = Paths.get(tmp);
        String name = System.mapLibraryName(LIBRARY_NAME);
        int dot = name.lastIndexOf('.');
        String prefix = name.substring(0, dot) + "-" + bindingVersion() + "-";
        String suffix = name.substring(dot);
        boolean posix = dir.getFileSystem().supportedFileAttributeViews().contains("posix");
        Path file = posix
                ? Files.createTempFile(dir, prefix, suffix,
                        PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")))
                : Files.createTempFile(dir, prefix, suffix);
        File f = file.toFile();
        f.deleteOnExit();
        boolean loaded = false;
        try {
            if (!posix) { // owner only, as far as java.io.File can say it
                f.setReadable(false, false);
                f.setReadable(true, true);
                f.setWritable(false, false);
                f.setWritable(true, true);
            }
            // Into the file just created (not Files.copy with REPLACE_EXISTING,
            // which would delete it and create another with default permissions).
            try (InputStream in = resource.openStream();
                 OutputStream out = Files.newOutputStream(file, StandardOpenOption.WRITE,
                         StandardOpenOption.TRUNCATE_EXISTING, LinkOption.NOFOLLOW_LINKS)) {
                in.transferTo(out);
            }
            if (posix) Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("r-x------"));
            System.load(file.toAbsolutePath().toString());
            location = file.toAbsolutePath().toString();
            loaded = true;
        } finally {
            if (!loaded) Files.deleteIfExists(file);
        }
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
