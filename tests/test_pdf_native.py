"""The PDF route loads WeasyPrint's C libraries and glibc's memory trim without starting a program: no `ldconfig`,
`gcc` or `ld` (ctypes.util.find_library's way on Linux), so no temp file a Ctrl-C could leave behind."""
from __future__ import annotations

import ctypes.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tools.render.pdf.native import loader_lookup_only, malloc_trim

REPO = Path(__file__).resolve().parent.parent

_SPY = textwrap.dedent("""
    import subprocess
    started = []
    real_init = subprocess.Popen.__init__

    def spy(self, args, *rest, **options):
        started.append(str(args))
        real_init(self, args, *rest, **options)

    subprocess.Popen.__init__ = spy
    from tools.render.pdf.native import load_weasyprint, malloc_trim
    from tools.render.pdf.job import give_back_memory
    load_weasyprint()
    give_back_memory()
    give_back_memory(collect=False)
    import weasyprint
    from weasyprint import HTML
    HTML(string="<p>x</p>").render()
    print("started:", started)
""")


def test_weasyprint_and_the_memory_trim_load_without_starting_a_program(tmp_path):
    private = tmp_path / "tmp"
    private.mkdir()
    env = dict(os.environ, TMPDIR=str(private), PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", _SPY], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "started: []" in done.stdout, done.stdout  # fc-match and friends are WeasyPrint's business, not at import
    assert list(private.iterdir()) == []  # gcc's output file of find_library would be here


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the spawning lookup is Linux's (and the BSDs')")
def test_the_lookup_is_skipped_only_inside_and_restored_after_an_error():
    original = ctypes.util.find_library
    with pytest.raises(RuntimeError), loader_lookup_only():
        assert ctypes.util.find_library("c") is None
        raise RuntimeError
    assert ctypes.util.find_library is original


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_glibc_malloc_trim_is_found_and_callable():
    import platform

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("not glibc")
    trim = malloc_trim()
    assert trim is not None
    assert trim(0) in (0, 1)
