/*
 * worker.c - the demo's C worker: hammers one shared key and prints how many
 * of its attempts were admitted, as "<name> admitted=<n> attempts=<m>".
 *
 *   polylimit_demo_worker URL KEY LIMIT WINDOW_MS ATTEMPTS NAME
 *
 * With POLYLIMIT_DEMO_START_AT_MS set (Unix time in ms), the worker connects, then
 * waits until that moment, so workers of every language start together.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <polylimit.h>

static void wait_for_start(void) {
    const char *at = getenv("POLYLIMIT_DEMO_START_AT_MS");
    if (!at) return;
    long long target = atoll(at);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    long long left = target - ((long long)now.tv_sec * 1000 + now.tv_nsec / 1000000);
    if (left > 0) {
        struct timespec d = {(time_t)(left / 1000), (long)(left % 1000) * 1000000L};
        nanosleep(&d, NULL);
    }
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: %s URL KEY LIMIT WINDOW_MS ATTEMPTS NAME\n", argv[0]);
        return 2;
    }
    const char *url = argv[1], *key = argv[2], *name = argv[6];
    long long limit = atoll(argv[3]), window_ms = atoll(argv[4]), attempts = atoll(argv[5]);
    polylimit_client *client = NULL;
    polylimit_limiter *limiter = NULL;
    polylimit_error err;
    if (polylimit_client_open(url, NULL, &client, &err) != POLYLIMIT_OK) {
        fprintf(stderr, "%s: %s\n", name, err.message);
        return 1;
    }
    polylimit_limiter_options opts = POLYLIMIT_LIMITER_OPTIONS_INIT;
    opts.limit = limit;
    opts.window_ms = window_ms;
    opts.prefix = "demo";
    if (polylimit_limiter_new(client, &opts, &limiter, &err) != POLYLIMIT_OK) {
        fprintf(stderr, "%s: %s\n", name, err.message);
        return 1;
    }
    long long admitted = 0, i;
    wait_for_start();
    for (i = 0; i < attempts; i++) {
        polylimit_decision d;
        if (polylimit_limiter_check(limiter, key, strlen(key), 1, &d, &err) != POLYLIMIT_OK) {
            fprintf(stderr, "%s: %s\n", name, err.message);
            return 1;
        }
        admitted += d.allowed;
    }
    printf("%s admitted=%lld attempts=%lld\n", name, admitted, attempts);
    polylimit_limiter_free(limiter);
    polylimit_client_close(client);
    return 0;
}
