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
    import os, shutil, signal, sys
    from pathlib import Path
    from tools import interrupt
    from tools.atomic import atomic_dir, atomic_file, private_folder

    interrupt.install()
    real_rmtree, real_unlink = shutil.rmtree, Path.unlink

    def stop_first(real):
        def removal(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGTERM)  # handled at the next instruction: inside the removal
            sum(range(1000))
            return real(*args, **kwargs)
        return removal

    shutil.rmtree, Path.unlink = stop_first(real_rmtree), stop_first(real_unlink)
    if "{making}" == "yes":  # the signal lands while the folder is being made instead
        import tempfile
        shutil.rmtree, Path.unlink = real_rmtree, real_unlink
        tempfile.mkdtemp = stop_first(tempfile.mkdtemp)
    out = Path(sys.argv[1])
    try:
        {body}
    except interrupt.Terminated as stop:
        print("stopped", stop.signum)
""")

_BODIES = {
    "private folder": 'with private_folder("probe-") as folder:\n            (folder / "part").write_text("x")',
    "making a private folder": 'with private_folder("probe-") as folder:\n            (folder / "part").write_text("x")',
    "failed file": 'with atomic_file(out / "book.pdf") as temp:\n            temp.write_text("x")\n            raise ValueError',
    "failed folder": 'with atomic_dir(out / "html") as temp:\n            (temp / "index.html").write_text("x")\n            raise ValueError',
}


@pytest.mark.skipif(not hasattr(os, "kill") or sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("case", list(_BODIES))
def test_a_stop_while_a_temporary_copy_is_made_or_removed_leaves_nothing(tmp_path, case):
    private, out = tmp_path / "tmp", tmp_path / "out"
    private.mkdir()
    out.mkdir()
    script = _PROBE.replace("{body}", _BODIES[case]).replace("{making}", "yes" if case.startswith("making") else "no")
    env = dict(os.environ, TMPDIR=str(private), PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", script, str(out)], env=env, capture_output=True, text=True, timeout=60)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stdout.strip() == "stopped 15", done.stdout + done.stderr
    assert list(private.iterdir()) == [] and list(out.iterdir()) == []
