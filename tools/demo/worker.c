/*
 * worker.c - the demo's C worker: hammers one shared key and prints how many
 * of its attempts were admitted, as "<name> admitted=<n> attempts=<m>".
 *
 *   redlimit_demo_worker URL KEY LIMIT WINDOW_MS ATTEMPTS NAME
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <redlimit.h>

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: %s URL KEY LIMIT WINDOW_MS ATTEMPTS NAME\n", argv[0]);
        return 2;
    }
    const char *url = argv[1], *key = argv[2], *name = argv[6];
    long long limit = atoll(argv[3]), window_ms = atoll(argv[4]), attempts = atoll(argv[5]);
    rl_client *client = NULL;
    rl_limiter *limiter = NULL;
    rl_error err;
    if (rl_client_open(url, NULL, &client, &err) != RL_OK) {
        fprintf(stderr, "%s: %s\n", name, err.message);
        return 1;
    }
    rl_limiter_options opts = RL_LIMITER_OPTIONS_INIT;
    opts.limit = limit;
    opts.window_ms = window_ms;
    opts.prefix = "demo";
    if (rl_limiter_new(client, &opts, &limiter, &err) != RL_OK) {
        fprintf(stderr, "%s: %s\n", name, err.message);
        return 1;
    }
    long long admitted = 0, i;
    for (i = 0; i < attempts; i++) {
        rl_decision d;
        if (rl_check(limiter, key, strlen(key), 1, &d, &err) != RL_OK) {
            fprintf(stderr, "%s: %s\n", name, err.message);
            return 1;
        }
        admitted += d.allowed;
    }
    printf("%s admitted=%lld attempts=%lld\n", name, admitted, attempts);
    rl_limiter_free(limiter);
    rl_client_close(client);
    return 0;
}
