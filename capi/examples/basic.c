/*
 * basic.c - the smallest redlimit program: 5 requests per second per user.
 *
 *   cc basic.c $(pkg-config --cflags --libs redlimit) -o basic
 *   ./basic redis://127.0.0.1:6379
 *
 * Makes 8 checks for one key and prints each decision. Exits non-zero on an
 * error, or if the decisions are not 5 admitted then 3 denied.
 */
#include <stdio.h>
#include <string.h>

#include <redlimit.h>

int main(int argc, char **argv) {
    const char *url = argc > 1 ? argv[1] : "memory://";
    rl_client *client = NULL;
    rl_limiter *limiter = NULL;
    rl_error err;
    int admitted = 0, denied = 0, i;

    if (rl_version_number() < RL_VERSION_NUMBER) {
        fprintf(stderr, "libredlimit %s is older than the header %s\n", rl_version_string(), RL_VERSION_STRING);
        return 1;
    }
    if (rl_client_open(url, NULL, &client, &err) != RL_OK) {
        fprintf(stderr, "open: %s: %s\n", rl_status_name(err.code), err.message);
        return 1;
    }
    rl_limiter_options opts = RL_LIMITER_OPTIONS_INIT;
    opts.limit = 5;
    opts.window_ms = 1000;
    opts.prefix = "example";
    if (rl_limiter_new(client, &opts, &limiter, &err) != RL_OK) {
        fprintf(stderr, "limiter: %s\n", err.message);
        rl_client_close(client);
        return 1;
    }
    const char *key = "user:42";
    rl_reset(limiter, key, strlen(key), NULL);
    for (i = 0; i < 8; i++) {
        rl_decision d;
        if (rl_check(limiter, key, strlen(key), 1, &d, &err) != RL_OK) {
            fprintf(stderr, "check: %s: %s\n", rl_status_name(err.code), err.message);
            break;
        }
        printf("request %d: %s remaining=%lld retry_after_ms=%lld\n", i + 1, d.allowed ? "allowed" : "denied ",
               (long long)d.remaining, (long long)d.retry_after_ms);
        if (d.allowed) admitted++; else denied++;
    }
    rl_limiter_free(limiter);
    rl_client_close(client);
    return admitted == 5 && denied == 3 ? 0 : 1;
}
