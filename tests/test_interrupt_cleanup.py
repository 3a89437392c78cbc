"""A stop asked for while a temporary folder or file is being removed waits until it is gone: the removal is never
cut in half, and the stop still happens right after it (exit 143 for SIGTERM)."""
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
    out = Path(sys.argv[1])
    try:
        {body}
    except interrupt.Terminated as stop:
        print("stopped", stop.signum)
""")

_BODIES = {
    "private folder": 'with private_folder("probe-") as folder:\n            (folder / "part").write_text("x")',
    "failed file": 'with atomic_file(out / "book.pdf") as temp:\n            temp.write_text("x")\n            raise ValueError',
    "failed folder": 'with atomic_dir(out / "html") as temp:\n            (temp / "index.html").write_text("x")\n            raise ValueError',
}


@pytest.mark.skipif(not hasattr(os, "kill") or sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("case", list(_BODIES))
def test_a_stop_during_a_removal_waits_for_it_and_leaves_nothing(tmp_path, case):
    private, out = tmp_path / "tmp", tmp_path / "out"
    private.mkdir()
    out.mkdir()
    script = _PROBE.replace("{body}", _BODIES[case])
    env = dict(os.environ, TMPDIR=str(private), PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", script, str(out)], env=env, capture_output=True, text=True, timeout=60)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stdout.strip() == "stopped 15", done.stdout + done.stderr
    assert list(private.iterdir()) == [] and list(out.iterdir()) == []
