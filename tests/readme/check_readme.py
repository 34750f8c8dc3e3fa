#!/usr/bin/env python3
"""Every fenced code block in README.md is compiled, run or accounted for.

Each fence must have a marker, an HTML comment on the line right before it:

  <!-- readme-test: run -->
  <!-- readme-test: run; output contains "TEXT" -->
      The block is a complete program, run as is (python, go, rust, java, js, sh)
      against a real redis-server; with `output contains`, its output must
      contain TEXT.
      Go: gofmt-clean, go vet, go run in a temporary module that `replace`s
      the module with this checkout (cgo compiles the core). Rust:
      rustfmt-clean, cargo run in a temporary project with the binding from
      bindings/rust (feature system: the installed library, through
      pkg-config). Java: javac -Xlint:all -Werror against the jar, then
      java -cp JAR:classes, no LD_LIBRARY_PATH.
      JavaScript: node, with require('polylimit') resolving to bindings/node
      and its addon from $POLYLIMIT_NODE_ADDON, else tests/node/run.sh's build.
  <!-- readme-test: fragment of PATH (WHY) -->
      The block's code lines must all appear, in order, in PATH (a subsequence
      of PATH's lines). Compared after removing comments and collapsing
      whitespace; lines that are only a comment, blank, or `...` (an elision)
      are skipped. PATH is the full program: a .c file is compiled here with
      the README's own command (cc FILE $(pkg-config --cflags --libs polylimit))
      and run against the redis-server; WHY names the tests that run it.
  <!-- readme-test: output (WHY) -->
      Not code (sample output, a diagram); WHY is required.
  <!-- readme-test: shell, not run (WHY); covered by PATH[, PATH...] -->
      Commands a test must not run as written (sudo, apt-get, system-wide
      installs). Every command of the block (program plus its first option or
      subcommand, `sudo` dropped, e.g. `cmake --install`, `apt-get install`)
      must appear in one of the covering files, which run it elsewhere.

URL substitution: the README says redis://127.0.0.1:6379, the address a reader
has. Runnable blocks and fragment programs get --redis-url instead (the
throwaway redis-server of tests/readme/run.sh): every occurrence of
redis://127.0.0.1:6379 in a runnable block is replaced by it before the block
runs; basic.c takes the URL as its first argument.

Usage: check_readme.py [--readme README.md] [--redis-url URL] [--python PY]
                       [--jar JAR] [--no-run]
--no-run checks the markers, the fragments and the coverage only.
Prints PASS/FAIL per check and a closing line "N passed, N failed"; exits 1 on
any failure.
"""

import argparse
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
README_URL = "redis://127.0.0.1:6379"
MARKER = re.compile(r"^<!--\s*readme-test:\s*(?P<body>.*?)\s*-->\s*$")
FENCE = re.compile(r"^(?P<fence>```+|~~~+)(?P<info>[^`]*)$")
TIMEOUT = 600
DOC_NAME = ["README.md"]  # the checked file's name in messages (--readme)


class Block:
    def __init__(self, line, info, text, marker):
        self.line = line  # 1-based line of the opening fence
        self.info = info.strip().split()[0] if info.strip() else ""
        self.text = text
        self.marker = marker  # the marker's body, or None

    def name(self):
        return "%s:%d (```%s)" % (DOC_NAME[0], self.line, self.info)


def parse_blocks(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence = m.group("fence")
        start = i
        j = i + 1
        # The closing fence: only the fence character, at least as many.
        while j < len(lines) and not re.fullmatch(re.escape(fence[0]) + "{%d,}" % len(fence), lines[j].strip()):
            j += 1
        if j >= len(lines):
            raise SystemExit("README.md:%d: unclosed fence" % (start + 1))
        prev = lines[start - 1] if start > 0 else ""
        mm = MARKER.match(prev)
        blocks.append(
            Block(start + 1, m.group("info"), "\n".join(lines[start + 1 : j]) + "\n", mm.group("body") if mm else None)
        )
        i = j + 1
    return blocks


# --- links ---------------------------------------------------------------------

LINK = re.compile(r"\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)\)")
CODE_SPAN = re.compile(r"`([^`]+)`")


def prose_lines(path):
    """(line number, text) of the lines outside fenced code blocks."""
    out, fence = [], None
    for n, line in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group("fence")
        elif fence is not None and re.fullmatch(re.escape(fence[0]) + "{%d,}" % len(fence), line.strip()):
            fence = None
        elif fence is None:
            out.append((n, line))
    return out


def anchors_of(path):
    """The anchors of a markdown file: GitHub's heading slugs and <a id="...">."""
    found = set()
    for _, line in prose_lines(path):
        h = re.match(r"^#+\s+(.*?)\s*$", line)
        if h:
            slug = re.sub(r"[^\w\- ]", "", h.group(1).lower()).replace(" ", "-")
            found.add(slug)
        found.update(re.findall(r'<a id="([^"]+)"', line))
    return found


def check_links(readme):
    """The README links its files: every relative link resolves (a file or
    folder of the repository, and a #anchor in a markdown file exists), and
    no repository path is left as a `code span` in the prose without a link
    on the same line (a code span next to its own link is fine)."""
    base = os.path.dirname(os.path.abspath(readme))
    errors = []
    for n, line in prose_lines(readme):
        for m in LINK.finditer(line):
            target = m.group("target")
            if re.match(r"^[a-z]+:", target):
                continue  # an absolute URL
            path, _, anchor = target.partition("#")
            full = os.path.normpath(os.path.join(base, path)) if path else os.path.abspath(readme)
            if not os.path.exists(full):
                errors.append("line %d: %s does not exist" % (n, target))
            elif anchor and full.endswith(".md") and anchor not in anchors_of(full):
                errors.append("line %d: %s has no anchor #%s" % (n, path or "README.md", anchor))
        linked = {m.group("target").partition("#")[0].rstrip("/") for m in LINK.finditer(line)}
        for span in CODE_SPAN.findall(LINK.sub("", line)):
            word = span.split()[0] if span.split() else ""
            if (
                "/" in word
                and not word.startswith(("/", "-"))
                and "://" not in word
                and os.path.exists(os.path.join(base, word))
                and word.rstrip("/") not in linked
            ):
                errors.append("line %d: `%s` is a path: make it a relative link" % (n, span))
    return errors


# --- comment removal and line normalisation for fragment matching ----------


def strip_c_comments(text):
    """Removes /* */ and // comments from C, C++, Go or Java source, leaving
    string and character literals (and so "redis://...") alone."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'`":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" and c != "`" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))  # keep line numbers
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_hash_comments(text):
    return "\n".join(re.sub(r"(^|\s)#.*$", "", line) for line in text.split("\n"))


def code_lines(text, lang):
    if lang in ("c", "cc", "cpp", "h", "go", "java", "js", "javascript", "rust", "rs"):
        text = strip_c_comments(text)
    elif lang in ("python", "py", "sh", "bash", "toml"):
        text = strip_hash_comments(text)
    result = []
    for line in text.split("\n"):
        norm = " ".join(line.split())
        if norm and norm != "...":
            result.append(norm)
    return result


LANG_OF_EXT = {
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".go": "go",
    ".java": "java",
    ".js": "js",
    ".py": "python",
    ".rs": "rust",
    ".sh": "sh",
    ".toml": "toml",
}


def check_fragment(block, rel):
    path = os.path.join(ROOT, rel)
    if not os.path.isfile(path):
        return "%s does not exist" % rel
    lang = LANG_OF_EXT.get(os.path.splitext(rel)[1], block.info)
    want = code_lines(block.text, block.info or lang)
    have = code_lines(open(path, encoding="utf-8").read(), lang)
    k = 0
    for line in want:
        while k < len(have) and have[k] != line:
            k += 1
        if k == len(have):
            return "this line is not in %s (in this order): %s" % (rel, line)
        k += 1
    return None


# --- coverage of commands that are not run ---------------------------------


def commands_of(text):
    """(program, first option or subcommand) of every command in a shell block."""
    cmds = []
    for line in text.split("\n"):
        line = line.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        for part in re.split(r"&&|\|\||;|\||\(|\)", line):
            words = shlex.split(part) if part.strip() else []
            while words and words[0] in ("sudo", "env"):
                words = words[1:]
            if not words or words[0] == "cd":
                continue
            key = [words[0]]
            if len(words) > 1 and re.match(r"^(-{1,2}[A-Za-z][A-Za-z0-9-]*|[a-z][a-z-]*)$", words[1]):
                key.append(words[1])
            cmds.append(key)
    return cmds


def check_coverage(block, files):
    texts = {}
    for rel in files:
        path = os.path.join(ROOT, rel)
        if not os.path.isfile(path):
            return "covering file %s does not exist" % rel
        texts[rel] = open(path, encoding="utf-8").read()
    missing = []
    for key in commands_of(block.text):
        pattern = r"(^|[\s/\"'(])" + r"\s+".join(re.escape(w) for w in key) + r"(\s|$|[\"')])"
        if not any(re.search(pattern, t, re.M) for t in texts.values()):
            missing.append(" ".join(key))
    if missing:
        return "not found in %s: %s" % (", ".join(files), "; ".join(missing))
    return None


# --- running ----------------------------------------------------------------


def run(cmd, cwd=None, env=None):
    p = subprocess.run(
        cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT
    )
    return p.returncode, p.stdout


def run_python(code, work, args):
    src = os.path.join(work, "readme_quickstart.py")
    open(src, "w").write(code)
    return run([args.python, src], cwd=work)


def run_go(code, work, args):
    if not shutil.which("go"):
        return 1, "go: not found"
    mod = os.path.join(work, "gomod")
    os.makedirs(mod)
    open(os.path.join(mod, "main.go"), "w").write(code)
    open(os.path.join(mod, "go.mod"), "w").write(
        "module readmetest\n\ngo 1.23\n\n"
        "require github.com/polylimit/polylimit v0.0.0\n\n"
        "replace github.com/polylimit/polylimit => %s\n" % ROOT
    )
    env = dict(
        os.environ, GOTOOLCHAIN="local", CGO_ENABLED="1", GOFLAGS=(os.environ.get("GOFLAGS", "") + " -mod=mod").strip()
    )
    rc, out = run(["gofmt", "-l", "-d", "main.go"], cwd=mod, env=env)
    if rc != 0 or out.strip():
        return rc or 1, "gofmt -d (the block is not gofmt-formatted):\n" + out
    rc, out = run(["go", "vet", "."], cwd=mod, env=env)
    if rc != 0:
        return rc, "go vet:\n" + out
    return run(["go", "run", "."], cwd=mod, env=env)


def run_rust(code, work, args):
    if not shutil.which("cargo"):
        return 1, "cargo: not found"
    proj = os.path.join(work, "rustproj")
    os.makedirs(os.path.join(proj, "src"))
    main = os.path.join(proj, "src", "main.rs")
    open(main, "w").write(code)
    binding = os.path.join(ROOT, "bindings", "rust")
    open(os.path.join(proj, "Cargo.toml"), "w").write(
        '[package]\nname = "readmetest"\nversion = "0.1.0"\nedition = "2021"\npublish = false\n\n'
        '[dependencies]\npolylimit = { path = "%s", features = ["system"] }\n' % os.path.join(binding, "polylimit")
    )
    # The binding's lock file, where its suite wrote one: the same dependency
    # versions as that suite.
    if os.path.exists(os.path.join(binding, "Cargo.lock")):
        shutil.copy(os.path.join(binding, "Cargo.lock"), os.path.join(proj, "Cargo.lock"))
    rc, out = run(
        ["rustfmt", "--check", "--edition", "2021", "--config-path", os.path.join(binding, "rustfmt.toml"), main],
        cwd=proj,
    )
    if rc != 0:
        return rc, "rustfmt --check (the block is not rustfmt-formatted):\n" + out
    env = dict(os.environ, CARGO_TARGET_DIR=os.path.join(ROOT, "build", "rust-readme-target"))
    return run(["cargo", "run", "-q", "-j", "2"], cwd=proj, env=env)


def run_java(code, work, args):
    if not args.jar or not os.path.isfile(args.jar):
        return 1, "no jar (--jar %s); tests/java/run.sh builds it" % args.jar
    m = re.search(r"public\s+(?:final\s+)?class\s+(\w+)", code)
    if not m:
        return 1, "no public class in the block"
    src, classes = os.path.join(work, "java-src"), os.path.join(work, "java-classes")
    os.makedirs(src)
    os.makedirs(classes)
    path = os.path.join(src, m.group(1) + ".java")
    open(path, "w").write(code)
    rc, out = run(["javac", "-Xlint:all", "-Werror", "-d", classes, "-cp", args.jar, path])
    if rc != 0:
        return rc, "javac:\n" + out
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "JAVA_TOOL_OPTIONS")}
    return run(["java", "-cp", args.jar + os.pathsep + classes, m.group(1)], env=env)


def run_node(code, work, args):
    if not shutil.which("node"):
        return 1, "node: not found"
    addon = os.environ.get("POLYLIMIT_NODE_ADDON") or os.path.join(
        ROOT, "build", "node", "bindings", "node", "Release", "polylimit.node"
    )
    if not os.path.isfile(addon):
        return 1, "no addon %s; tests/node/run.sh builds it" % addon
    # require('polylimit') finds the package as an installed one would be.
    os.makedirs(os.path.join(work, "node_modules"))
    os.symlink(os.path.join(ROOT, "bindings", "node"), os.path.join(work, "node_modules", "polylimit"))
    src = os.path.join(work, "quickstart.js")
    open(src, "w").write(code)
    return run(["node", src], cwd=work, env=dict(os.environ, POLYLIMIT_NODE_ADDON=addon))


def run_sh(code, work, args):
    src = os.path.join(work, "block.sh")
    open(src, "w").write("set -euo pipefail\n" + code)
    return run(["bash", src], cwd=ROOT)


RUNNERS = {
    "python": run_python,
    "py": run_python,
    "go": run_go,
    "rust": run_rust,
    "java": run_java,
    "js": run_node,
    "sh": run_sh,
    "bash": run_sh,
}


def compile_and_run_c(rel, args, work):
    """The README's own build command for the complete program of a fragment."""
    rc, flags = run(["pkg-config", "--cflags", "--libs", "polylimit"])
    if rc != 0:
        return "pkg-config --cflags --libs polylimit failed (PKG_CONFIG_PATH?): " + flags
    exe = os.path.join(work, "app")
    rc, out = run(
        ["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", os.path.join(ROOT, rel)] + flags.split() + ["-o", exe]
    )
    if rc != 0:
        return "cc %s $(pkg-config --cflags --libs polylimit):\n%s" % (rel, out)
    rc, out = run([exe, args.redis_url])
    sys.stdout.write("".join("    | " + line + "\n" for line in out.splitlines()))
    if rc != 0:
        return "%s %s exited %d" % (rel, args.redis_url, rc)
    return None


def flush_database(url):
    """FLUSHALL on the server of a redis://host:port URL."""
    m = re.fullmatch(r"redis://([^:/]+):(\d+)/?", url)
    if not m:
        raise OSError("cannot flush %s: not a redis://host:port URL" % url)
    with socket.create_connection((m.group(1), int(m.group(2))), timeout=5) as conn:
        conn.sendall(b"*1\r\n$8\r\nFLUSHALL\r\n")
        reply = conn.recv(64)
    if not reply.startswith(b"+OK"):
        raise OSError("FLUSHALL on %s answered %r" % (url, reply))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--readme", default=os.path.join(ROOT, "README.md"))
    ap.add_argument("--redis-url", default=os.environ.get("POLYLIMIT_TEST_REDIS_URL"))
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--jar")
    ap.add_argument("--no-run", action="store_true")
    args = ap.parse_args()
    DOC_NAME[0] = os.path.relpath(os.path.abspath(args.readme), ROOT)
    args.python = os.path.abspath(shutil.which(args.python) or args.python)
    args.jar = os.path.abspath(args.jar) if args.jar else None
    if not args.no_run and not args.redis_url:
        ap.error("--redis-url (or POLYLIMIT_TEST_REDIS_URL) is needed to run the blocks")

    passed = failed = 0

    def report(ok, what, detail=None):
        nonlocal passed, failed
        if ok:
            passed += 1
            print("PASS  " + what)
        else:
            failed += 1
            print("FAIL  " + what + (": " + detail if detail else ""))

    errors = check_links(args.readme)
    report(not errors, "README.md links: relative, and every one resolves", "; ".join(errors))
    blocks = parse_blocks(args.readme)
    print("%s: %d fenced code blocks" % (os.path.relpath(args.readme, ROOT), len(blocks)))
    work_root = tempfile.mkdtemp(prefix="polylimit-readme-")
    try:
        for n, b in enumerate(blocks):
            what = b.name()
            body = b.marker
            if body is None:
                report(False, what, "no <!-- readme-test: ... --> marker on the line before the fence")
                continue
            work = os.path.join(work_root, str(n))
            os.makedirs(work)
            m_run = re.fullmatch(r'run(?:;\s*output contains "(?P<expect>[^"]*)")?', body)
            m_frag = re.fullmatch(r"fragment of (?P<path>\S+)(?:\s+\((?P<why>.+)\))?", body)
            m_out = re.fullmatch(r"output \((?P<why>.+)\)", body)
            m_sh = re.fullmatch(r"shell, not run \((?P<why>.+)\); covered by (?P<files>.+)", body)
            if m_run:
                what += " run"
                runner = RUNNERS.get(b.info)
                if runner is None:
                    report(False, what, "no runner for ```%s" % b.info)
                    continue
                if args.no_run:
                    print("skip  %s (--no-run)" % what)
                    continue
                code = b.text.replace(README_URL, args.redis_url)
                try:
                    # Each quick start runs as a new user's would: against
                    # an empty server, whatever the blocks before it wrote.
                    flush_database(args.redis_url)
                    rc, out = runner(code, work, args)
                except subprocess.TimeoutExpired:
                    rc, out = 1, "timed out after %d s" % TIMEOUT
                except OSError as e:
                    rc, out = 1, str(e)
                sys.stdout.write("".join("    | " + line + "\n" for line in out.splitlines()))
                expect = m_run.group("expect")
                if rc != 0:
                    report(False, what, "exit status %d" % rc)
                elif expect is not None and expect not in out:
                    report(False, what, "output lacks %r" % expect)
                else:
                    report(True, what)
            elif m_frag:
                rel = m_frag.group("path")
                err = check_fragment(b, rel)
                report(err is None, "%s fragment of %s" % (what, rel), err)
                if err is None and not args.no_run:
                    if rel.endswith(".c"):
                        try:
                            err = compile_and_run_c(rel, args, work)
                        except (OSError, subprocess.TimeoutExpired) as e:
                            err = str(e)
                        report(err is None, "%s compiled (pkg-config) and run against redis-server" % rel, err)
                    else:
                        report(False, rel, "no way to compile and run a %s file here" % os.path.splitext(rel)[1])
            elif m_out:
                report(True, "%s output, not code (%s)" % (what, m_out.group("why")))
            elif m_sh:
                files = [f.strip() for f in m_sh.group("files").split(",") if f.strip()]
                err = check_coverage(b, files)
                report(
                    err is None,
                    "%s shell, not run (%s); commands covered by %s" % (what, m_sh.group("why"), ", ".join(files)),
                    err,
                )
            else:
                report(False, what, "unknown marker: %s" % body)
    finally:
        shutil.rmtree(work_root, ignore_errors=True)

    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
