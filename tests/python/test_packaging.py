"""The wheel: self-contained, installable into a clean virtualenv; and the demo worker."""

import email.parser
import os
import shutil
import subprocess
import sys
import zipfile

import polylimit
import pytest
from polylimit import _core

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))


def _needed(path):
    out = subprocess.run(["readelf", "-d", path], check=True, capture_output=True, text=True).stdout
    return [line.split("[", 1)[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


@pytest.mark.skipif(shutil.which("readelf") is None, reason="readelf (binutils) is not installed")
def test_extension_needs_no_hiredis_and_exports_only_its_init():
    needed = _needed(_core.__file__)
    assert not [n for n in needed if "hiredis" in n or "polylimit" in n], needed
    if shutil.which("nm"):
        out = subprocess.run(
            ["nm", "-D", "--defined-only", _core.__file__], check=True, capture_output=True, text=True
        ).stdout
        exported = sorted(line.split()[-1] for line in out.splitlines() if line.strip())
        assert exported == ["PyInit__core"], exported


@pytest.mark.skipif(shutil.which("readelf") is None, reason="readelf (binutils) is not installed")
def test_extension_carries_its_cpp_runtime():
    """libstdc++ is linked into _core (the wheel's glibc floor; bindings/python/README.md, "The wheel's tag")."""
    needed = _needed(_core.__file__)
    assert not [n for n in needed if n.startswith(("libstdc++", "libc++"))], needed


def test_wheel_installs_into_a_clean_venv(tmp_path):
    wheel = os.environ.get("POLYLIMIT_PY_WHEEL")
    if not wheel:
        pytest.skip("POLYLIMIT_PY_WHEEL is not set (tests/python/run.sh sets it to the built wheel)")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    subprocess.run(
        [py, "-m", "pip", "install", "-q", "--no-index", "--no-deps", wheel],
        check=True,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
    )
    script = (
        "import polylimit, polylimit._core as c, sys\n"
        "assert sys.prefix != sys.base_prefix\n"
        "lim = polylimit.Client('memory://').limiter('2/s')\n"
        "print(polylimit.__version__, [lim.check(b'k').allowed for _ in range(3)], c.__file__)\n"
    )
    out = subprocess.run([py, "-c", script], check=True, capture_output=True, text=True, cwd=str(tmp_path)).stdout
    version, rest = out.split(" ", 1)
    assert version == polylimit.__version__
    assert "[True, True, False]" in rest
    so = rest.rsplit(" ", 1)[1].strip()
    assert so.startswith(str(venv))
    if shutil.which("readelf"):
        assert not [n for n in _needed(so) if "hiredis" in n], _needed(so)
    for name in ("py.typed", "_core.pyi", "_vocabulary.py"):  # _vocabulary.py: generated at build time
        assert os.path.exists(os.path.join(os.path.dirname(so), name)), name
    # The web frameworks and prometheus_client are extras: the clean venv has
    # none of them, and polylimit with the framework-free parts of
    # polylimit.contrib imports without them.
    script = (
        "import importlib.util, sys\n"
        "import polylimit, polylimit.contrib, polylimit.contrib.http, polylimit.contrib.asgi\n"
        "import polylimit.contrib.django\n"
        "present = [m for m in ('fastapi', 'starlette', 'flask', 'django', 'prometheus_client')\n"
        "           if m in sys.modules or importlib.util.find_spec(m) is not None]\n"
        "print(present)\n"
    )
    out = subprocess.run([py, "-c", script], check=True, capture_output=True, text=True, cwd=str(tmp_path)).stdout
    assert out.strip() == "[]", out
    # ... and the wheel's metadata requires each of them only for its extra.
    with zipfile.ZipFile(wheel) as z:
        metadata = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        assert len(metadata) == 1, metadata
        lines = z.read(metadata[0]).decode().splitlines()
    requires = [line.split(":", 1)[1].strip() for line in lines if line.startswith("Requires-Dist:")]
    assert not [r for r in requires if "extra ==" not in r], requires
    extras = {line.split(":", 1)[1].strip() for line in lines if line.startswith("Provides-Extra:")}
    assert {"fastapi", "flask", "django", "prometheus"} <= extras, extras


def _built_wheel():
    wheel = os.environ.get("POLYLIMIT_PY_WHEEL")
    if not wheel:
        pytest.skip("POLYLIMIT_PY_WHEEL is not set (tests/python/run.sh sets it to the built wheel)")
    return wheel


def test_suite_runs_against_the_repaired_wheel():
    """run.sh installs the auditwheel-repaired wheel; the package under test is that one."""
    wheel = _built_wheel()
    assert "-manylinux_" in os.path.basename(wheel), wheel  # PyPI refuses linux_* wheels
    here = os.path.realpath(polylimit.__file__)
    assert here.startswith(os.path.realpath(sys.prefix) + os.sep), here  # not the sources
    with zipfile.ZipFile(wheel) as z:
        assert "polylimit/" + os.path.basename(_core.__file__) in z.namelist()


def test_wheel_carries_the_license_files():
    """LICENSE and THIRD_PARTY_NOTICES (when the checkout has them) are in the wheel's .dist-info."""
    wheel = _built_wheel()
    present = [n for n in ("LICENSE", "THIRD_PARTY_NOTICES") if os.path.isfile(os.path.join(ROOT, n))]
    if not present:
        pytest.skip("the checkout has neither LICENSE nor THIRD_PARTY_NOTICES")
    with zipfile.ZipFile(wheel) as z:
        dist_info = {}  # path inside the .dist-info -> member name
        for name in z.namelist():
            top, _, rest = name.partition("/")
            if top.endswith(".dist-info") and rest:
                dist_info[rest] = name
        for name in present:
            # scikit-build-core puts them under .dist-info/licenses/ (PEP 639).
            member = dist_info.get("licenses/" + name) or dist_info.get(name)
            assert member, "%s is not in the wheel's .dist-info: %s" % (name, sorted(dist_info))
            with open(os.path.join(ROOT, name), "rb") as f:
                assert z.read(member) == f.read(), name


def test_wheel_metadata_is_ready_to_publish():
    """The wheel's METADATA has what an index shows: license expression, authors, URLs, classifiers."""
    with zipfile.ZipFile(_built_wheel()) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(z.read(name).decode("utf-8"))
    assert meta["Metadata-Version"] in ("2.4", "2.5"), meta["Metadata-Version"]
    assert meta["License-Expression"] == "MIT"
    assert set(meta.get_all("License-File") or []) >= {"LICENSE"}
    assert meta["Author"], "no Author"
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL") or [])
    assert {"Homepage", "Source", "Changelog", "Issues"} <= set(urls), urls
    classifiers = meta.get_all("Classifier") or []
    assert "Typing :: Typed" in classifiers
    # PEP 639: no license classifier beside the expression.
    assert not [c for c in classifiers if c.startswith("License ::")], classifiers
    assert meta["Description-Content-Type"].startswith("text/markdown")


def test_demo_worker(redis_server, key):
    worker = os.path.join(ROOT, "tools", "demo", "worker.py")
    procs = [
        subprocess.Popen(
            [sys.executable, worker, redis_server.url, key, "50", "60000", "40", "w%d" % i],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(3)
    ]
    admitted = 0
    for i, p in enumerate(procs):
        out, err = p.communicate(60)
        assert p.returncode == 0, err
        name, adm, att = out.strip().split(" ")
        assert name == "w%d" % i and att == "attempts=40" and adm.startswith("admitted=")
        admitted += int(adm.split("=")[1])
    assert admitted == 50


def test_demo_worker_usage_and_errors():
    worker = os.path.join(ROOT, "tools", "demo", "worker.py")
    p = subprocess.run([sys.executable, worker], capture_output=True, text=True)
    assert p.returncode == 2 and "usage:" in p.stderr
    p = subprocess.run([sys.executable, worker, "bogus://", "k", "1", "1000", "1", "w"], capture_output=True, text=True)
    assert p.returncode == 1 and p.stderr.startswith("w: ") and "bogus" in p.stderr
