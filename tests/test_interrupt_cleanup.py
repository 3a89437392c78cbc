"""A stop asked for while a temporary folder or file is being made or removed waits until that is done: the removal is
never cut in half, a folder just made is still removed, and the stop happens right after (exit 143 for SIGTERM)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

_PROBE = textwrap.dedent("""
    import os, shutil, signal, sys, tempfile
    from pathlib import Path
    from tools.core import interrupt
    from tools.core.atomic import atomic_dir, atomic_file, private_folder

    interrupt.install()

    def stop_first(real):  # the signal lands inside a removal, before it starts
        def call(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGTERM)  # handled at the next instruction
            sum(range(1000))
            return real(*args, **kwargs)
        return call

    def stop_after(real):  # the signal lands once the file or folder exists, before its maker hears of it
        def call(*args, **kwargs):
            made = real(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGTERM)
            sum(range(1000))
            return made
        return call

    if "{moment}" == "removing":
        shutil.rmtree, Path.unlink = stop_first(shutil.rmtree), stop_first(Path.unlink)
    else:
        tempfile.mkdtemp, tempfile.mkstemp = stop_after(tempfile.mkdtemp), stop_after(tempfile.mkstemp)
    out = Path(sys.argv[1])
    try:
        {body}
    except interrupt.Terminated as stop:
        print("stopped", stop.signum)
""")

_FOLDER = 'with private_folder("probe-") as folder:\n        (folder / "part").write_text("x")'
_CASES = {  # case -> (when the signal lands, what the probe does, the files it leaves on purpose)
    "removing a private folder": ("removing", _FOLDER, set()),
    "making a private folder": ("making", _FOLDER, set()),
    "removing a failed file": ("removing", 'with atomic_file(out / "book.pdf") as temp:\n        temp.write_text("x")\n        raise ValueError', set()),
    "removing a failed folder": ("removing", 'with atomic_dir(out / "html") as temp:\n        (temp / "index.html").write_text("x")\n        raise ValueError', set()),
    "making a cache entry": ("making", 'from tools.core.cache import Cache\n    Cache(out / "cache").put("chapter", "ab" * 32, [1])', set()),
    "making a replay entry": ("making", 'from tools.checks.links.replay import _write\n    _write(str(out / "replay"), "cd" * 32, b"x")', set()),
    "making a moved chapter's new text": ("making", '(out / "ch.md").write_text("a")\n    from tools.edit.move_write import _replace_with\n    _replace_with(out / "ch.md", b"b")', {"ch.md"}),
}


@pytest.mark.skipif(not hasattr(os, "kill") or sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("case", list(_CASES))
def test_a_stop_while_a_temporary_copy_is_made_or_removed_leaves_nothing(tmp_path, case):
    moment, body, kept = _CASES[case]
    private, out = tmp_path / "tmp", tmp_path / "out"
    private.mkdir()
    out.mkdir()
    script = _PROBE.replace("{body}", body).replace("{moment}", moment)
    env = dict(os.environ, TMPDIR=str(private), PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", script, str(out)], env=env, capture_output=True, text=True, timeout=60)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stdout.strip() == "stopped 15", done.stdout + done.stderr
    assert list(private.iterdir()) == []
    assert {p.name for p in out.rglob("*") if not p.is_dir()} == kept
    assert [p.name for p in out.rglob(".*")] == []
