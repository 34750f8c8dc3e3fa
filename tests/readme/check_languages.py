#!/usr/bin/env python3
"""Every list or table of languages in the docs names every language.

The languages are C/C++ (the C ABI, capi/) and one per folder of bindings/
(bindings/swig is Java). A folder of bindings/ that this script cannot name
fails the check: add it to BINDING_LANGUAGE.

What counts as a list of languages, in README.md, CONTRIBUTING.md,
docs/**/*.md and the bindings' README files:
  - a sentence (or a line of a diagram, a fenced block without a language)
    that names three languages or more;
  - a Markdown table with three rows or more whose first cell names a
    language, or whose header row names three languages or more.
Each must name all of them. A file about one language (bindings/<folder>/,
docs/integrations/<language>.md) counts its own language as named.
A list that is partial on purpose (a benchmark of some bindings, the
bindings that have some feature) is marked on the line before its paragraph,
list item or table with

  <!-- languages: partial (WHY) -->

Matching is by name: "C" (also "C/C++", "C++"), "Python", "Go", "Java",
"Node" (also "Node.js", "JavaScript"), "Rust".

Usage: check_languages.py [--root DIR] [FILE...]
Prints one line per finding and a closing line "N passed, N failed" (one
check per file); exits 1 on any finding.
"""

import argparse
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# bindings/<folder> -> the language it serves.
BINDING_LANGUAGE = {
    "python": "Python",
    "go": "Go",
    "swig": "Java",
    "node": "Node",
    "rust": "Rust",
}

PATTERNS = {
    "C": r"(?<![\w/.+-])C(?:/C\+\+|\+\+)?(?![\w/+-])",
    "Python": r"\bPython\b",
    "Go": r"\bGo\b",
    "Java": r"\bJava\b(?!Script)",
    "Node": r"\bNode(?:\.js)?\b|\bJavaScript\b",
    "Rust": r"\bRust\b",
}
OWN_LANGUAGE = {  # file name under docs/integrations/ -> language
    "python.md": "Python",
    "go.md": "Go",
    "java.md": "Java",
    "node.md": "Node",
    "rust.md": "Rust",
    "c.md": "C",
}
FENCE = re.compile(r"^\s*(```+|~~~+)\s*(\S*)")
TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
TABLE_RULE = re.compile(r"^\s*\|[\s:|-]+\|\s*$")
PARTIAL = re.compile(r"^\s*<!--\s*languages:\s*partial\s*\((?P<why>.+)\)\s*-->\s*$")
ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def languages(root):
    """The languages that have a binding: C plus one per folder of bindings/."""
    found, unknown = {"C"}, []
    bindings = os.path.join(root, "bindings")
    for folder in sorted(os.listdir(bindings)):
        if not os.path.isdir(os.path.join(bindings, folder)):
            continue
        if folder in BINDING_LANGUAGE:
            found.add(BINDING_LANGUAGE[folder])
        else:
            unknown.append(folder)
    return found, unknown


def named(text):
    return {lang for lang, pattern in PATTERNS.items() if re.search(pattern, text)}


def own_language(rel):
    parts = rel.split("/")
    if parts[0] == "bindings" and len(parts) > 2:
        return BINDING_LANGUAGE.get(parts[1])
    if rel.startswith("docs/integrations/"):
        return OWN_LANGUAGE.get(parts[-1])
    return None


def units(path):
    """(line, kind, text) of each sentence, diagram line and table of a
    Markdown file; a table's text is its rows' first cells (kind "rows") or
    its header (kind "header")."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, para, para_start, fence, i = [], [], 0, None, 0
    partial = [False]  # the next paragraph, item or table is marked partial
    fence_info = ""  # the language of the fenced block we are in

    def flush():
        if para:
            text = " ".join(s.strip() for s in para)
            # Sentences: a full stop, colon or semicolon followed by a space.
            for sentence in re.split(r"(?<=[.:;])\s+(?=[A-Z`(\[])", text):
                if not partial[0]:
                    out.append((para_start, "sentence", sentence))
            partial[0] = False
        para.clear()

    while i < len(lines):
        line = lines[i]
        m = FENCE.match(line)
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            elif fence_info == "":
                out.append((i + 1, "diagram", line))  # a diagram or sample output
            i += 1
            continue
        if m:
            flush()
            fence, fence_info = m.group(1), m.group(2)
            i += 1
            continue
        if TABLE_ROW.match(line) and i + 1 < len(lines) and TABLE_RULE.match(lines[i + 1]):
            flush()
            start = i + 1
            header = line
            i += 2
            firsts = []
            while i < len(lines) and TABLE_ROW.match(lines[i]):
                firsts.append(lines[i].strip().strip("|").split("|")[0])
                i += 1
            if not partial[0]:
                out.append((start, "header", header))
                out.append((start, "rows", firsts))
            partial[0] = False
            continue
        if PARTIAL.match(line):
            flush()
            partial[0] = True
        elif not line.strip() or line.lstrip().startswith(("#", "<!--")):
            flush()
        else:
            if ITEM.match(line):
                flush()  # a list item is a paragraph of its own
            if not para:
                para_start = i + 1
            para.append(line)
        i += 1
    flush()
    return out


def check_file(path, rel, wanted):
    findings = []
    own = own_language(rel)
    for line, kind, text in units(path):
        if kind == "rows":
            per_row = [named(cell) for cell in text]
            if sum(1 for n in per_row if n) < 3:
                continue
            have = set().union(*per_row)
            what = "table (first column)"
        else:
            have = named(text)
            if len(have) < 3:
                continue
            what = {"header": "table header", "sentence": "list", "diagram": "diagram line"}[kind]
        if own:
            have.add(own)
        missing = sorted(wanted - have)
        if missing:
            shown = text if isinstance(text, str) else ", ".join(c.strip() for c in text)
            findings.append(
                "%s:%d: %s of languages without %s: %s" % (rel, line, what, ", ".join(missing), shown.strip()[:160])
            )
    return findings


def doc_files(root):
    rels = [name for name in ("README.md", "CONTRIBUTING.md") if os.path.exists(os.path.join(root, name))]
    for base in ("docs", "bindings"):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, base)):
            dirnames[:] = sorted(d for d in dirnames if d not in ("node_modules", "target", "native", "vendor"))
            for name in sorted(filenames):
                if base == "docs" and name.endswith(".md") or base == "bindings" and name == "README.md":
                    rels.append(os.path.relpath(os.path.join(dirpath, name), root))
    return rels


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=ROOT)
    ap.add_argument("files", nargs="*", help="files relative to the root (default: every doc)")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    wanted, unknown = languages(root)
    passed = failed = 0
    if unknown:
        print(
            "FAIL  bindings/: no language known for %s (add it to BINDING_LANGUAGE in %s)"
            % (", ".join(unknown), os.path.relpath(__file__, ROOT))
        )
        failed += 1
    print("languages with a binding: %s" % ", ".join(sorted(wanted)))
    for rel in args.files or doc_files(root):
        findings = check_file(os.path.join(root, rel), rel, wanted)
        if findings:
            failed += 1
            print("FAIL  %s" % rel)
            for f in findings:
                print("    " + f)
        else:
            passed += 1
            print("PASS  %s: every list of languages names all of them" % rel)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
