package io.polylimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The JNI library comes from the class path (the jar, or target/classes in
 * these tests): META-INF/native/linux-x86_64, extracted to a private file.
 */
class NativeLibraryTest {
    private static boolean bundledPath() {
        String p = System.getProperty(NativeLibrary.PATH_PROPERTY);
        return (p == null || p.isEmpty()) && !Boolean.getBoolean(NativeLibrary.SYSTEM_PROPERTY);
    }

    @Test
    void platformNamesThisMachine() {
        String os = System.getProperty("os.name"), arch = System.getProperty("os.arch");
        if (os.equals("Linux") && (arch.equals("amd64") || arch.equals("x86_64"))) {
            assertEquals("linux-x86_64", NativeLibrary.platform());
            assertEquals("/META-INF/native/linux-x86_64/libpolylimit_jni.so", NativeLibrary.resourceName());
        }
        assertTrue(NativeLibrary.platform().matches("[a-z0-9]+-[a-z0-9_]+"), NativeLibrary.platform());
    }

    @Test
    void linuxX8664IsBundled() {
        assumeTrue(NativeLibrary.platform().equals("linux-x86_64"));
        assertNotNull(NativeLibrary.class.getResource(NativeLibrary.resourceName()),
                "no " + NativeLibrary.resourceName() + " on the class path (bindings/swig's jar-resources)");
    }

    @Test
    void loadedFromPrivateTemporaryCopy() throws Exception {
        assumeTrue(bundledPath(), "-Dpolylimit.library.path or polylimit.use.system.library is set");
        assumeTrue(NativeLibrary.class.getResource(NativeLibrary.resourceName()) != null);
        Path file = Paths.get(NativeLibrary.location());
        assertTrue(file.isAbsolute(), file.toString());
        assertTrue(file.getFileName().toString().startsWith("libpolylimit_jni-" + NativeLibrary.bindingVersion() + "-"),
                file.toString());
        assertEquals(Paths.get(System.getProperty("java.io.tmpdir")).toRealPath(), file.getParent().toRealPath());
        Set<PosixFilePermission> perms = Files.getPosixFilePermissions(file);
        assertEquals(EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_EXECUTE), perms);
        assertEquals(NativeLibrary.bindingVersion(), NativeLibrary.version());
    }
}
