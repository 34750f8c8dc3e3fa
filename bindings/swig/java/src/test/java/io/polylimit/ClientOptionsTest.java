package io.polylimit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * Client options of version 2 (name, tls_*) and the URL rule: no URL means
 * POLYLIMIT_URL, never a default. Surefire runs the tests without
 * POLYLIMIT_URL (pom.xml); the example app's test sets it for its JVMs.
 */
class ClientOptionsTest extends ServerTestBase {

    @Test
    void noUrlAndNoEnvironmentIsAnError() {
        assertNull(System.getenv("POLYLIMIT_URL"), "surefire must run the tests without POLYLIMIT_URL");
        for (InvalidArgumentException e : new InvalidArgumentException[] {
                assertInvalid(Client::open),
                assertInvalid(() -> Client.open((String) null)),
                assertInvalid(() -> Client.open("")),
                assertInvalid(() -> Client.open(null, ClientOptions.builder().name("x").build()))}) {
            assertTrue(e.getMessage().contains("POLYLIMIT_URL is not set"), e.getMessage());
            assertTrue(e.getMessage().contains("memory://"), "names memory:// as the explicit choice: " + e.getMessage());
        }
    }

    @Test
    void nameLabelsTheMetrics() {
        try (Client named = Client.open(redis.url(), ClientOptions.builder().name("api-1").build());
             Limiter l = named.limiter("5/minute")) {
            l.check(key());
            assertEquals("api-1", named.name());
            String page = named.statsPrometheus();
            assertTrue(page.contains("polylimit_checks_total{client=\"api-1\"} 1\n"), page);
            assertTrue(named.toString().contains("name=api-1"), named.toString());
        }
        assertNull(client.name());
        assertTrue(client.statsPrometheus().contains("\npolylimit_checks_total 0\n"), client.statsPrometheus());
    }

    @Test
    void badNamesAreTheCoresToRefuse() {
        InvalidArgumentException e = assertInvalid(
                () -> Client.open(redis.url(), ClientOptions.builder().name("has space").build()));
        assertTrue(e.getMessage().contains("name"), e.getMessage());
        assertInvalid(() -> Client.open(redis.url(), ClientOptions.builder().name("x".repeat(129)).build()));
        InvalidArgumentException nul = assertInvalid(
                () -> Client.open(redis.url(), ClientOptions.builder().name("a\0b").build()));
        assertEquals("name contains a NUL character", nul.getMessage());
    }

    @Test
    void tlsOptionsReachTheCore() {
        // On a URL without TLS the core refuses them rather than ignore them.
        ClientOptions tls = ClientOptions.builder()
                .tlsCaFile(Path.of("ca.pem"))
                .tlsCaDir(Path.of("certs"))
                .tlsCertFile(Path.of("client.pem"))
                .tlsKeyFile(Path.of("client.key"))
                .tlsServerName("redis.internal")
                .tlsInsecure(true)
                .build();
        InvalidArgumentException e = assertInvalid(() -> Client.open(redis.url(), tls));
        assertTrue(e.getMessage().contains("tls"), e.getMessage());
        for (ClientOptions one : new ClientOptions[] {
                ClientOptions.builder().tlsCaFile(Path.of("ca.pem")).build(),
                ClientOptions.builder().tlsServerName("redis.internal").build(),
                ClientOptions.builder().tlsInsecure(true).build()}) {
            assertInvalid(() -> Client.open(redis.url(), one));
        }
        assertInvalid(() -> Client.open(redis.url(), ClientOptions.builder().tlsServerName("a\0b").build()));
        String shown = tls.toString();
        assertTrue(shown.contains("tlsKeyFile=client.key") && shown.contains("tlsInsecure"), shown);
        // Unset again: the client opens.
        try (Client c = Client.open(redis.url(), ClientOptions.builder().tlsCaFile(null).tlsServerName(null).build())) {
            assertFalse(c.isClosed());
        }
    }

    @Test
    void passwordsStayOutOfToString() {
        try (Client c = Client.open("redis://limited:secret@127.0.0.1:" + redis.port,
                ClientOptions.builder().name("acl").build())) {
            assertFalse(c.toString().contains("secret"), c.toString());
            assertTrue(c.toString().contains("name=acl"), c.toString());
        }
    }
}
