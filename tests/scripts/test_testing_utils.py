"""Tests of every helper in chapters/development/testing/testing_utils.py."""
from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys
import textwrap
import unittest
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "chapters" / "development" / "testing"))

import testing_utils as tu  # noqa: E402
from testing_utils import (  # noqa: E402
    CmdFailed,
    capture_output,
    get_free_port,
    make_temp_dir,
    patch_env,
    require_package,
    run_cmd,
    temp_dir,
    torchrun_cmd,
)

PY = sys.executable


# -------------------------------------------------------------------- temp_dir
def test_temp_dir_is_created_empty_and_removed() -> None:
    with temp_dir(prefix="tu-") as path:
        assert path.is_dir() and path.name.startswith("tu-") and not any(path.iterdir())
        (path / "sub").mkdir()
        (path / "sub" / "f.txt").write_text("x")
    assert not path.exists()


def test_temp_dir_is_removed_on_error() -> None:
    with pytest.raises(ZeroDivisionError):
        with temp_dir() as path:
            (path / "f").write_text("x")
            raise ZeroDivisionError("the body failed")
    assert not path.exists()


def test_temp_dir_keep_and_env_override(tmp_path: Path, capsys) -> None:
    with temp_dir(parent=tmp_path, keep=True) as kept:
        pass
    assert kept.is_dir() and kept.parent == tmp_path
    with patch_env(KEEP_TEMP_DIRS="1"):
        with temp_dir(parent=tmp_path) as kept_by_env:
            pass
    assert kept_by_env.is_dir()
    assert f"kept {kept_by_env}" in capsys.readouterr().err


def test_make_temp_dir_with_pytest_request(request) -> None:
    made: list[Path] = []

    def check_removed() -> None:
        assert made and not made[0].exists(), "make_temp_dir's finalizer did not remove the folder"

    # Finalizers run last-in first-out: this check runs after make_temp_dir's cleanup.
    request.addfinalizer(check_removed)
    made.append(make_temp_dir(request))
    assert made[0].is_dir()


class _Finalizers:
    """Stands in for pytest's `request`."""

    def __init__(self) -> None:
        self.calls = []

    def addfinalizer(self, fn) -> None:
        self.calls.append(fn)


def test_make_temp_dir_removed_by_finalizer() -> None:
    owner = _Finalizers()
    path = make_temp_dir(owner, prefix="fin-")
    (path / "x").write_text("1")
    assert path.name.startswith("fin-") and len(owner.calls) == 1
    owner.calls[0]()
    assert not path.exists()


def test_make_temp_dir_with_unittest_case() -> None:
    seen: list[Path] = []

    class Case(unittest.TestCase):
        def test_it(self) -> None:
            path = make_temp_dir(self)
            seen.append(path)
            self.assertTrue(path.is_dir())

    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(Case).run(result)
    assert result.wasSuccessful() and len(seen) == 1
    assert not seen[0].exists()  # addCleanup ran when the test finished


def test_make_temp_dir_without_owner_registers_atexit(monkeypatch) -> None:
    registered = []
    monkeypatch.setattr(atexit, "register", registered.append)
    path = make_temp_dir()
    assert path.is_dir() and len(registered) == 1
    registered[0]()
    assert not path.exists()


def test_make_temp_dir_rejects_unknown_owner() -> None:
    with pytest.raises(TypeError, match="pytest's `request`"):
        make_temp_dir(object())


# -------------------------------------------------------------- capture_output
def test_capture_output_collects_both_streams() -> None:
    with capture_output() as cap:
        print("to stdout")
        sys.stderr.write("to stderr\n")
        assert cap.out == "to stdout\n"  # readable inside the block too
    assert cap.out == "to stdout\n" and cap.err == "to stderr\n"
    assert "to stdout" in repr(cap)


def test_capture_output_only_one_stream(capsys) -> None:
    with capture_output(stderr=False) as cap:
        print("mine")
        print("passes through", file=sys.stderr)
    assert cap.out == "mine\n" and cap.err == ""
    assert "passes through" in capsys.readouterr().err


def test_capture_output_fd_level_sees_child_processes() -> None:
    with capture_output(fd=True) as cap:
        print("python level")
        os.write(1, b"fd level\n")
        subprocess.run([PY, "-c", "import sys; print('child out'); print('child err', file=sys.stderr)"], check=True)
    assert "python level" in cap.out and "fd level" in cap.out and "child out" in cap.out
    assert "child err" in cap.err and "child out" not in cap.err


def test_capture_output_last_frame() -> None:
    text = "progress 10%\rprogress 50%\rprogress 100%\ndone\n"
    assert tu.CapturedOutput.last_frame(text) == "progress 100%\ndone\n"


# --------------------------------------------------------------------- run_cmd
def test_run_cmd_returns_both_streams_and_forwards_them() -> None:
    code = "import sys; print('out 1'); print('err 1', file=sys.stderr); print('out 2')"
    with capture_output() as cap:
        result = run_cmd([PY, "-c", code])
    assert result.rc == 0 and result.stdout == "out 1\nout 2\n" and result.stderr == "err 1\n"
    assert result.cmd[0] == PY and result.seconds > 0
    assert cap.out == "out 1\nout 2\n" and cap.err == "err 1\n"  # forwarded as it came


def test_run_cmd_forwards_output_while_the_child_still_runs(tmp_path: Path) -> None:
    # The child prints a line, then waits until the parent has seen it: if run_cmd
    # only forwarded output at the end, the child would time out and fail.
    flag = tmp_path / "seen"
    code = textwrap.dedent(
        f"""
        import os, sys, time
        print("ready", flush=True)
        deadline = time.time() + 20
        while not os.path.exists({str(flag)!r}):
            if time.time() > deadline:
                sys.exit("the parent never saw 'ready'")
            time.sleep(0.05)
        print("finished")
        """
    )

    class Watcher:
        def write(self, text: str) -> None:
            if "ready" in text:
                flag.touch()

        def flush(self) -> None:
            pass

    real_stdout = sys.stdout
    sys.stdout = Watcher()
    try:
        result = run_cmd([PY, "-c", code], timeout=60)
    finally:
        sys.stdout = real_stdout
    assert result.stdout == "ready\nfinished\n"


def test_run_cmd_failure_message() -> None:
    code = "import sys; print('some output'); print('boom: disk full', file=sys.stderr); sys.exit(3)"
    with pytest.raises(CmdFailed) as info:
        run_cmd([PY, "-c", code], echo=False)
    message = str(info.value)
    assert "exited with code 3" in message and "boom: disk full" in message and "some output" in message
    assert PY in message
    assert info.value.result.rc == 3


def test_run_cmd_check_false_and_echo_false() -> None:
    with capture_output() as cap:
        result = run_cmd([PY, "-c", "print('quiet'); raise SystemExit(5)"], check=False, echo=False)
    assert result.rc == 5 and result.stdout == "quiet\n"
    assert cap.out == ""


def test_run_cmd_timeout() -> None:
    with pytest.raises(CmdFailed, match=r"timed out after 0.5s"):
        run_cmd([PY, "-c", "import time; time.sleep(30)"], timeout=0.5, echo=False)


def test_run_cmd_env_cwd_input_and_string_command(tmp_path: Path) -> None:
    code = "import os, sys; print(os.environ['TU_VAR'], os.getcwd(), sys.stdin.read().upper())"
    result = run_cmd([PY, "-c", code], env={"TU_VAR": "hello"}, cwd=tmp_path, input="abc", echo=False)
    assert result.stdout.split() == ["hello", str(tmp_path), "ABC"]
    assert "PATH" in os.environ  # env is merged, the parent's environment is untouched
    assert run_cmd(f"{PY} -c 'print(40 + 2)'", echo=False).stdout == "42\n"


def test_run_cmd_tail_lines() -> None:
    code = "import sys; [print(f'line {i}', file=sys.stderr) for i in range(100)]; sys.exit(1)"
    with pytest.raises(CmdFailed) as info:
        run_cmd([PY, "-c", code], echo=False, tail_lines=5)
    message = str(info.value)
    assert "line 99" in message and "line 95" in message and "line 94" not in message
    assert "(95 earlier lines)" in message


# --------------------------------------------------------------- skip decorators
def _runs(fn) -> bool:
    try:
        fn()
    except unittest.SkipTest:
        return False
    return True


def test_require_torch_gpu_follows_the_gpu_count(monkeypatch) -> None:
    for count, single, multi in ((0, False, False), (1, True, False), (2, True, True)):
        monkeypatch.setattr(tu, "get_gpu_count", lambda c=count: c)
        assert _runs(tu.require_torch_gpu(lambda: None)) is single
        assert _runs(tu.require_torch_multi_gpu(lambda: None)) is multi


def test_require_multi_gpu_reason(monkeypatch) -> None:
    monkeypatch.setattr(tu, "get_gpu_count", lambda: 1)
    with pytest.raises(unittest.SkipTest, match="2 or more CUDA GPUs, found 1"):
        tu.require_torch_multi_gpu(lambda: None)()


def test_get_gpu_count_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    expected = torch.cuda.device_count() if torch.cuda.is_available() else 0
    assert tu.get_gpu_count() == expected


def test_skip_decorators_on_a_testcase_class(monkeypatch) -> None:
    monkeypatch.setattr(tu, "get_gpu_count", lambda: 0)

    @tu.require_torch_gpu
    class NeedsGpu(unittest.TestCase):
        def test_it(self) -> None:
            raise AssertionError("must not run")

    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(NeedsGpu).run(result)
    assert len(result.skipped) == 1 and not result.failures


def test_require_package() -> None:
    assert _runs(require_package("json")(lambda: None))
    assert not _runs(require_package("no_such_package_for_tests")(lambda: None))
    assert _runs(require_package("pytest", min_version="1.0")(lambda: None))
    with pytest.raises(unittest.SkipTest, match="pytest>=999"):
        require_package("pytest", min_version="999")(lambda: None)()


def test_skip_decorators_under_pytest(tmp_path: Path) -> None:
    # Run a small pytest session in a child process to see the decorators as pytest reports them.
    (tmp_path / "test_demo.py").write_text(textwrap.dedent(
        """
        import pytest
        from testing_utils import require_package

        @pytest.fixture
        def answer():
            return 42

        @require_package("no_such_package_for_tests")
        def test_skipped():
            raise AssertionError("must be skipped")

        @require_package("json")
        def test_runs_with_fixture(answer):
            assert answer == 42
        """
    ))
    env = {"PYTHONPATH": str(REPO / "chapters" / "development" / "testing"), "CI": ""}
    result = run_cmd([PY, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p", "no:xdist", str(tmp_path)],
                     env=env, cwd=tmp_path, check=False, echo=False, timeout=120)
    assert result.rc == 0, result.stdout + result.stderr
    assert "1 passed, 1 skipped" in result.stdout
    assert "test requires the package no_such_package_for_tests" in result.stdout


def test_package_version_parsing() -> None:
    assert tu._version_tuple("2.13.0+cpu") == (2, 13, 0)
    assert tu._version_tuple("1.4rc1") == (1, 4)
    assert tu.is_package_available("json") and not tu.is_package_available("no.such.module")
    assert tu._skip_unless(True, "x")(len) is len


def test_require_torch() -> None:
    have = tu.is_package_available("torch")
    assert _runs(tu.require_torch(lambda: None)) is have


# -------------------------------------------------------------------- patch_env
def test_patch_env_sets_unsets_and_restores(monkeypatch) -> None:
    monkeypatch.setenv("TU_KEEP", "old")
    monkeypatch.setenv("TU_DROP", "there")
    monkeypatch.delenv("TU_NEW", raising=False)
    with patch_env(TU_KEEP="new", TU_DROP=None, TU_NEW=7):
        assert os.environ["TU_KEEP"] == "new" and os.environ["TU_NEW"] == "7"
        assert "TU_DROP" not in os.environ
    assert os.environ["TU_KEEP"] == "old" and os.environ["TU_DROP"] == "there"
    assert "TU_NEW" not in os.environ


def test_patch_env_restores_on_error_and_accepts_a_dict(monkeypatch) -> None:
    monkeypatch.delenv("TU.DOTTED", raising=False)
    with pytest.raises(KeyError):
        with patch_env({"TU.DOTTED": "1"}):
            assert os.environ["TU.DOTTED"] == "1"
            raise KeyError("x")
    assert "TU.DOTTED" not in os.environ


def test_patch_env_as_decorator(monkeypatch) -> None:
    monkeypatch.delenv("TU_DECO", raising=False)

    @patch_env(TU_DECO="on")
    def read() -> str:
        return os.environ["TU_DECO"]

    assert read() == "on" and read() == "on"
    assert "TU_DECO" not in os.environ


# ---------------------------------------------------------------- ports, torchrun
def test_get_free_port_can_be_bound() -> None:
    port = get_free_port()
    assert 1024 <= port <= 65535
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", port))
        sock.listen()


def test_torchrun_cmd() -> None:
    cmd = torchrun_cmd("train.py", "--lr", "0.1", nproc=4, port=12345)
    assert cmd[:3] == [sys.executable, "-m", "torch.distributed.run"]
    assert cmd[cmd.index("--nproc_per_node") + 1] == "4"
    assert cmd[cmd.index("--master_port") + 1] == "12345"
    assert cmd[-3:] == ["train.py", "--lr", "0.1"]
    auto = torchrun_cmd(Path("x.py"))
    assert int(auto[auto.index("--master_port") + 1]) > 0 and auto[-1] == "x.py"


@pytest.mark.xdist_group("torchrun")
def test_torchrun_cmd_runs_two_ranks(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    script = tmp_path / "ranks.py"
    # One write per line: the ranks share the output pipe, and print() with several arguments writes them in
    # pieces when output is unbuffered, so two ranks' lines could interleave ("rankrank 0 of 2").
    script.write_text("import os, sys; sys.stdout.write(f\"rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']}\\n\"); sys.stdout.flush()\n")
    result = run_cmd(torchrun_cmd(script, nproc=2), env={"OMP_NUM_THREADS": "1"}, timeout=120, echo=False)
    assert sorted(line for line in result.stdout.splitlines() if line.startswith("rank")) == [
        "rank 0 of 2",
        "rank 1 of 2",
    ]
