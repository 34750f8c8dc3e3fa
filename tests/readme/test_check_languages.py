#!/usr/bin/env python3
"""check_languages.py fails when a language goes missing from a list.

Each test copies the docs (README.md, docs/, the bindings' README files and
the bindings/ folder names) into a temporary tree, changes one thing, and
runs the check on it. Run: python3 -m unittest tests/readme/test_check_languages.py
(tests/readme/run.sh does).
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
CHECK = os.path.join(HERE, "check_languages.py")
sys.path.insert(0, HERE)
import check_languages  # noqa: E402


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def run_check(root):
    p = subprocess.run(
        [sys.executable, CHECK, "--root", root], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    return p.returncode, p.stdout


class PlantedOmissions(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="polylimit-languages-")
        for rel in check_languages.doc_files(ROOT):
            os.makedirs(os.path.join(self.tmp, os.path.dirname(rel)), exist_ok=True)
            shutil.copy(os.path.join(ROOT, rel), os.path.join(self.tmp, rel))
        for folder in os.listdir(os.path.join(ROOT, "bindings")):
            if os.path.isdir(os.path.join(ROOT, "bindings", folder)):
                os.makedirs(os.path.join(self.tmp, "bindings", folder), exist_ok=True)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def edit(self, rel, old, new):
        path = os.path.join(self.tmp, rel)
        text = read(path)
        self.assertIn(old, text, "the planted change needs %r in %s" % (old, rel))
        write(path, text.replace(old, new, 1))

    def test_the_docs_as_they_are_pass(self):
        rc, out = run_check(self.tmp)
        self.assertEqual(rc, 0, out)

    def test_a_language_removed_from_the_http_table_fails(self):
        path = os.path.join(self.tmp, "README.md")
        lines = read(path).split("\n")
        start = lines.index("## HTTP: middleware, headers, metrics")
        row = next(i for i in range(start, len(lines)) if lines[i].startswith("| Rust |"))
        del lines[row]
        write(path, "\n".join(lines))
        rc, out = run_check(self.tmp)
        self.assertEqual(rc, 1, out)
        self.assertRegex(out, r"README\.md:\d+: table \(first column\) of languages without Rust")

    def test_a_language_removed_from_a_sentence_fails(self):
        self.edit("README.md", "Python, Go, Java, Node and Rust: identical", "Python, Go, Java and Rust: identical")
        rc, out = run_check(self.tmp)
        self.assertEqual(rc, 1, out)
        self.assertIn("list of languages without Node", out)

    def test_a_language_removed_from_the_diagram_fails(self):
        self.edit("README.md", "Node (N-API)", "")
        rc, out = run_check(self.tmp)
        self.assertEqual(rc, 1, out)
        self.assertIn("diagram line of languages without Node", out)

    def test_a_new_binding_folder_must_be_named(self):
        os.makedirs(os.path.join(self.tmp, "bindings", "zig"))
        rc, out = run_check(self.tmp)
        self.assertEqual(rc, 1, out)
        self.assertIn("no language known for zig", out)

    def test_a_partial_marker_exempts_its_table(self):
        path = os.path.join(self.tmp, "README.md")
        text = read(path)
        text = text.replace("| Rust | `polylimit::tower", "| Ruby | `polylimit::tower", 1)
        text = text.replace(
            "| language | integration | runnable example |",
            "<!-- languages: partial (a test) -->\n| language | integration | runnable example |",
            1,
        )
        write(path, text)
        rc, out = run_check(self.tmp)
        self.assertEqual(rc, 0, out)


if __name__ == "__main__":
    unittest.main()
