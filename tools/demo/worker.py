#!/usr/bin/env python3
"""The demo's Python worker: hammers one shared key and prints how many of
its attempts were admitted, as "<name> admitted=<n> attempts=<m>" (the same
command line and output as worker.c).

    worker.py URL KEY LIMIT WINDOW_MS ATTEMPTS NAME

Needs the polylimit package installed (pip install . at the repository root).
"""

import os
import sys
import time

import polylimit


def wait_for_start():
    """With POLYLIMIT_DEMO_START_AT_MS (Unix ms) set, wait for that moment so that
    workers of every language start together."""
    at = os.environ.get("POLYLIMIT_DEMO_START_AT_MS")
    if at:
        time.sleep(max(0.0, int(at) / 1000.0 - time.time()))


def main(argv):
    if len(argv) != 7:
        print("usage: %s URL KEY LIMIT WINDOW_MS ATTEMPTS NAME" % argv[0], file=sys.stderr)
        return 2
    url, key, limit, window_ms, attempts, name = argv[1], argv[2], argv[3], argv[4], argv[5], argv[6]
    try:
        limit, window_ms, attempts = int(limit), int(window_ms), int(attempts)
    except ValueError as e:
        print("%s: %s" % (name, e), file=sys.stderr)
        return 2
    admitted = 0
    try:
        with polylimit.Client(url) as client:
            # Same prefix as worker.c, so workers in every language share the key.
            limiter = client.limiter(limit=limit, window=window_ms / 1000.0, prefix="demo")
            # The C worker passes strlen(key) bytes: send the same bytes.
            key_bytes = key.encode("utf-8", "surrogateescape")
            wait_for_start()
            for _ in range(attempts):
                admitted += limiter.check(key_bytes).allowed
    except polylimit.Error as e:
        print("%s: %s" % (name, e), file=sys.stderr)
        return 1
    print("%s admitted=%d attempts=%d" % (name, admitted, attempts), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
