#!/usr/bin/env python3
"""One policy file, five services, reloaded live: plans across languages.

Starts a redis-server and one service per language (tests/http/services/<lang>/run
CONFIG PORT), each opening the same TOML policy file with watching on (its
config names the file: {"policy_file": ..., "watch_ms": 100}): the guide's
example, docs/examples/policy.toml, with a key prefix of its own. Then:

- a tenant on plan "pro" (100/minute) and one on "free" (10/minute), requests
  spread round-robin over the five services: exactly 100 and 10 admitted;
- the file is rewritten (a new file renamed over it) to give "free" 20/minute:
  every service answers with the new limit within one second, and the free
  tenant is admitted exactly 10 more (the 10 it used count), no restart;
- the file is rewritten with an error: every service keeps the old policy
  (limits and state), and one more valid rewrite is taken up again.

    tests/http/cross_language_reload.py [--langs python,go,...]
"""

import argparse
import os
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cross_language as xl  # noqa: E402  (the services, Redis and checks)

# The guide's example, as is but for its key prefix (one per run): plans
# free (api 10/minute) and pro (100/minute), tenant acme on pro.
EXAMPLE = os.path.join(xl.ROOT, "docs", "examples", "policy.toml")


def policy(prefix, free):
    with open(EXAMPLE) as f:
        text = f.read()
    for old, new in (('prefix = "shop"', 'prefix = "%s"' % prefix), ('api = "10/minute"', 'api = "%d/minute"' % free)):
        if old not in text:
            sys.exit("%s no longer has %s" % (EXAMPLE, old))
        text = text.replace(old, new, 1)
    return text


def write(path, text):
    # As configuration tools do: a whole new file renamed over the old one.
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


def quota(response):
    """The q= of RateLimit-Policy, or None."""
    for k, v in response["headers"]:
        if k == "ratelimit-policy" and ";q=" in v:
            return int(v.split(";q=")[1].split(";")[0])
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--langs", default=os.environ.get("POLYLIMIT_HTTP_LANGS", ",".join(xl.LANGS)))
    ap.add_argument("--ready-timeout", type=int, default=300)
    args = ap.parse_args()
    langs = [name for name in args.langs.split(",") if name]
    prefix = "rl" + uuid.uuid4().hex[:6]
    workdir = tempfile.mkdtemp(prefix="polylimit-reload-")
    policy_path = os.path.join(workdir, "policy.toml")
    config_path = os.path.join(workdir, "config.json")
    write(policy_path, policy(prefix, 10))
    with open(config_path, "w") as f:
        f.write('{"policy_file": "%s", "watch_ms": 100}' % policy_path)
    redis, desc = xl.start_redis()
    services = []
    try:
        started = time.monotonic()
        services = [xl.Service(name, config_path, desc["url"]) for name in langs]
        for s in services:
            s.wait(args.ready_timeout)
        print("%d services ready in %.1f s: %s" % (len(services), time.monotonic() - started, ", ".join(langs)))

        def admitted(tenant, n):
            rs = [services[i % len(services)].request("/api/x", {"X-Tenant": tenant}) for i in range(n)]
            others = [r for r in rs if r["status"] != 200]
            xl.check(all(r["status"] == 429 for r in others), "tenant %s: every refused request answered 429" % tenant)
            return sum(r["status"] == 200 for r in rs)

        n = admitted("acme", 130)
        xl.check(
            n == 100, "pro tenant: %d of 130 admitted over %d services (plan pro, 100/minute)" % (n, len(services))
        )
        n = admitted("globex", 15)
        xl.check(n == 10, "free tenant: %d of 15 admitted (plan free, 10/minute)" % n)

        # The new limit, within a second, in every service.
        write(policy_path, policy(prefix, 20))
        changed = time.monotonic()
        late = {}
        for s in services:
            probe = "probe-" + s.lang  # a free tenant of its own: the probes use no one's budget
            while True:
                q = quota(s.request("/api/x", {"X-Tenant": probe}))
                if q == 20:
                    late[s.lang] = time.monotonic() - changed
                    break
                if time.monotonic() - changed > 5:
                    late[s.lang] = None
                    break
                time.sleep(0.02)
        for lang, t in late.items():
            xl.check(
                t is not None and t <= 1.0,
                "%s: the new limit answered %s after the rewrite"
                % (lang, "%.0f ms" % (t * 1000) if t is not None else "never (5 s)"),
            )
        n = admitted("globex", 15)
        xl.check(n == 10, "free tenant after the reload: %d more admitted (20/minute, the 10 used count)" % n)

        # A broken file: refused everywhere, the policy and the state stay.
        write(policy_path, policy(prefix, 20).replace('limit = "plan"', 'limit = "plan:nope"'))
        time.sleep(1.0)
        n = admitted("globex", 5)
        xl.check(n == 0, "a broken file: the free tenant still used up (%d admitted)" % n)
        rs = [s.request("/api/x", {"X-Tenant": "hooli"}) for s in services]
        xl.check(all(quota(r) == 20 for r in rs), "a broken file: every service still answers with 20/minute")
        for s in services:
            xl.check(s.proc.poll() is None, "the %s service is still running" % s.lang)

        # Fixed again: taken up again.
        write(policy_path, policy(prefix, 25))
        time.sleep(1.0)
        rs = [s.request("/api/x", {"X-Tenant": "umbrella"}) for s in services]
        xl.check(all(quota(r) == 25 for r in rs), "a fixed file: every service answers with 25/minute")
        n = admitted("globex", 10)
        xl.check(n == 5, "free tenant at 25/minute: %d more admitted" % n)
    finally:
        for s in services:
            s.stop()
        redis.stdin.close()
        redis.wait()
        for name in ("policy.toml", "config.json"):
            try:
                os.unlink(os.path.join(workdir, name))
            except FileNotFoundError:
                pass
        os.rmdir(workdir)
    print()
    if xl.failures:
        print("%d check(s) failed" % len(xl.failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
