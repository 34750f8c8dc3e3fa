#!/usr/bin/env python3
"""Checks the include direction of the core's layers (core/README.md).

Each folder of core/src is a layer, lowest first: util, net, transport,
backend, limiter, http. A file may include headers of its own layer and of the
layers below it, never above; every file of core/src lives in a layer
folder. Internal headers are named by their path relative to core/src
("net/mux.h"). Public headers (core/include/polylimit/) belong to a layer
too (PUBLIC below), and are checked as the files of that layer.

  tools/check-layers.py [--src DIR] [--include DIR]

Prints each offence as FILE:LINE and exits 1 when there is one.
"""

import argparse
import os
import re
import sys

# Lowest first.
LAYERS = ["util", "net", "transport", "backend", "limiter", "http"]

# The lowest layer that may include each public header: what the header
# describes. A new public header must be given one here.
PUBLIC = {
    "polylimit/vocabulary.h": "util",  # generated from capi/vocabulary/
    "polylimit/errors.h": "util",
    "polylimit/decision.h": "util",
    "polylimit/url.h": "net",  # Endpoint: what a connection connects to
    "polylimit/connection_options.h": "net",
    "polylimit/reactor.h": "net",
    "polylimit/backend.h": "transport",  # its Request and Durability ride on script calls
    "polylimit/metrics.h": "limiter",
    "polylimit/headers.h": "limiter",
    "polylimit/rate_spec.h": "limiter",
    "polylimit/client.h": "limiter",
    "polylimit/limiter.h": "limiter",
    "polylimit/http_policy.h": "http",
}

# Headers that the build generates (core/CMakeLists.txt), by layer.
GENERATED = {"scripts_generated.h": "transport"}

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--src", default=os.path.join(root, "core", "src"), help="the layer folders (core/src)")
    parser.add_argument(
        "--include", default=os.path.join(root, "core", "include"), help="the public headers' root (core/include)"
    )
    args = parser.parse_args()
    src, include = args.src, args.include
    rank = {layer: i for i, layer in enumerate(LAYERS)}
    problems = []

    def shown(path):
        return os.path.relpath(path, root) if os.path.abspath(path).startswith(root + os.sep) else path

    def layer_of(name):
        """The layer of an included name, or None when it names nothing known."""
        first = name.split("/", 1)[0]
        if first in rank and os.path.isfile(os.path.join(src, name)):
            return first
        if name in PUBLIC:
            return PUBLIC[name]
        return GENERATED.get(name)

    files = []  # (path, layer)
    for dirpath, dirnames, filenames in os.walk(src):
        dirnames.sort()
        rel = os.path.relpath(dirpath, src)
        layer = None if rel == "." else rel.split(os.sep)[0]
        for f in sorted(filenames):
            path = os.path.join(dirpath, f)
            if layer not in rank:
                problems.append("%s: outside every layer folder (%s)" % (shown(path), ", ".join(LAYERS)))
            else:
                files.append((path, layer))
    public_dir = os.path.join(include, "polylimit")
    for f in sorted(os.listdir(public_dir)) if os.path.isdir(public_dir) else []:
        name = "polylimit/" + f
        path = os.path.join(public_dir, f)
        if name not in PUBLIC:
            problems.append("%s: a public header with no layer (tools/check-layers.py, PUBLIC)" % shown(path))
        else:
            files.append((path, PUBLIC[name]))

    includes = 0
    for path, layer in files:
        with open(path, encoding="utf-8", errors="replace") as text:
            for number, line in enumerate(text, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                includes += 1
                name = m.group(1)
                target = layer_of(name)
                where = "%s:%d" % (shown(path), number)
                if target is None:
                    problems.append(
                        '%s: "%s" is neither a file of a layer folder (named from core/src, '
                        'e.g. "net/mux.h"), a public header nor a generated one' % (where, name)
                    )
                elif rank[target] > rank[layer]:
                    problems.append(
                        '%s: %s includes %s ("%s"): a layer includes only its own and lower ones'
                        % (where, layer, target, name)
                    )

    for p in problems:
        print(p)
    print("layers %s: %d files, %d includes, %d problems" % (" < ".join(LAYERS), len(files), includes, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
