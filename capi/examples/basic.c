/*
 * basic.c - the smallest polylimit program: 5 requests per second per user.
 *
 *   cc basic.c $(pkg-config --cflags --libs polylimit) -o basic
 *   ./basic redis://127.0.0.1:6379
 *
 * Makes 8 checks for one key and prints each decision. Exits non-zero on an
 * error, or if the decisions are not 5 admitted then 3 denied.
 */
#include <stdio.h>
#include <string.h>

#include <polylimit.h>

int main(int argc, char **argv) {
    const char *url = argc > 1 ? argv[1] : "memory://";
    polylimit_client *client = NULL;
    polylimit_limiter *limiter = NULL;
    polylimit_error err;
    int admitted = 0, denied = 0, i;

    if (polylimit_version_number() < POLYLIMIT_VERSION_NUMBER) {
        fprintf(stderr, "libpolylimit %s is older than the header %s\n", polylimit_version_string(),
                POLYLIMIT_VERSION_STRING);
        return 1;
    }
    if (polylimit_client_open(url, NULL, &client, &err) != POLYLIMIT_OK) {
        fprintf(stderr, "open: %s: %s\n", polylimit_status_name(err.code), err.message);
        return 1;
    }
    polylimit_limiter_options opts = POLYLIMIT_LIMITER_OPTIONS_INIT;
    opts.limit = 5;
    opts.window_ms = 1000;
    opts.prefix = "example";
    if (polylimit_limiter_new(client, &opts, &limiter, &err) != POLYLIMIT_OK) {
        fprintf(stderr, "limiter: %s\n", err.message);
        polylimit_client_close(client);
        return 1;
    }
    const char *key = "user:42";
    polylimit_limiter_reset(limiter, key, strlen(key), NULL);
    for (i = 0; i < 8; i++) {
        polylimit_decision d;
        if (polylimit_limiter_check(limiter, key, strlen(key), 1, &d, &err) != POLYLIMIT_OK) {
            fprintf(stderr, "check: %s: %s\n", polylimit_status_name(err.code), err.message);
            break;
        }
        printf("request %d: %s remaining=%lld retry_after_ms=%lld\n", i + 1, d.allowed ? "allowed" : "denied ",
               (long long)d.remaining, (long long)d.retry_after_ms);
        if (d.allowed)
            admitted++;
        else
            denied++;
    }
    polylimit_limiter_free(limiter);
    polylimit_client_close(client);
    return admitted == 5 && denied == 3 ? 0 : 1;
}
