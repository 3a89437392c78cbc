"""Tests of the book's Slurm scripts and fault-tolerance tools, against a real two-node Slurm on localhost.

A session fixture brings the cluster up with scripts/slurm-cluster.sh (installing slurm-wlm and munge
first when they are missing) and takes it down at the end. Every launcher is submitted with sbatch on one
node and on two nodes and must show the tiny training step on every rank. All tests share the one
cluster, so they run in one xdist group, one after the other.
"""
from __future__ import annotations

import contextlib
import fcntl
import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import IN_CI, require, require_tool

REPO = Path(__file__).resolve().parents[2]
CLUSTER = REPO / "scripts" / "slurm-cluster.sh"
SLURM_DIR = REPO / "chapters" / "orchestration" / "slurm"
LAUNCHERS = SLURM_DIR / "launchers"
FT = REPO / "chapters" / "training" / "fault-tolerance"
UNDRAIN = SLURM_DIR / "undrain-good-nodes.sh"
FS_WATCHDOG = FT / "fs-watchdog.py"
SLURM_STATUS = FT / "slurm-status.py"

SLURM_FILES = sorted(p for p in (REPO / "chapters").rglob("*.slurm"))
SHELL_FILES = sorted([*SLURM_FILES, *(REPO / "chapters").rglob("*.sh"), *(REPO / "scripts").glob("*.sh")])
# The scripts this file's author owns must also use bash's strict mode; the others are only linted.
OWN_SHELL_FILES = sorted([*SLURM_FILES, SLURM_DIR / "undrain-good-nodes.sh", CLUSTER])
LAUNCHER_NAMES = ["srun", "torchrun", "accelerate", "lightning"]
TASKS_PER_NODE = 2  # what every launcher asks for: srun/lightning tasks, torchrun/accelerate processes
JOB_TIMEOUT = 300  # seconds; a 2-node job takes about 20-40 s on 2 busy cores
FINAL_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL",
                "DEADLINE", "PREEMPTED"}
# Variables a launcher sets for its children; inherited from the test runner they would confuse them.
LAUNCH_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "NODE_RANK")

pytestmark = pytest.mark.xdist_group("slurm")


def _sh(cmd: list[str], env: dict[str, str] | None = None, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, **kw)


def _python() -> str:
    return os.environ.get("PYTHON") or sys.executable


# Tests that use the cluster take this lock for their whole duration, and the session fixtures of all
# pytest processes on the machine count themselves in USERS_DIR. The xdist_group mark above should already
# put every test of this file on one worker, but pytest-xdist's loadgroup silently stops grouping with
# pytest 9.2 (pytest-dev/pytest-xdist#1386), and two test runs at once (two developers, or a run started
# while another is going) would otherwise drain nodes under each other's jobs or take the cluster down.
LOCK_FILE = Path(tempfile.gettempdir()) / "mlbook-slurm-tests.lock"
USERS_DIR = Path(tempfile.gettempdir()) / "mlbook-slurm-tests.users"
STARTED_MARK = USERS_DIR / "started-by-tests"


@contextlib.contextmanager
def cluster_lock():
    with open(LOCK_FILE, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@pytest.fixture(scope="session")
def _slurm_session() -> dict[str, str]:
    """Bring the cluster up once per pytest process; the last process to finish takes it down again."""
    require(sys.platform.startswith("linux"), "the local Slurm cluster needs Linux")
    if not (shutil.which("slurmctld") and shutil.which("munged") and shutil.which("sinfo")):
        if os.geteuid() == 0:
            subprocess.run(["bash", str(REPO / "scripts" / "install-system-deps.sh")], check=False, timeout=900)
    for tool in ("slurmctld", "slurmd", "munged", "sinfo", "sbatch", "scontrol"):
        require_tool(tool)
    require(os.geteuid() == 0, "scripts/slurm-cluster.sh must run as root (munged runs as 'munge', slurmd as root)")
    env = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS and not k.startswith(("SLURM_", "SBATCH_"))}
    env_line = _sh([str(CLUSTER), "env"]).stdout.strip()
    env["SLURM_CONF"] = env_line.split("=", 1)[1]
    env["PYTHON"] = _python()
    me = USERS_DIR / str(os.getpid())
    with cluster_lock():
        USERS_DIR.mkdir(exist_ok=True)
        if _sh([str(CLUSTER), "status"], env=env).returncode != 0:
            STARTED_MARK.unlink(missing_ok=True)
            t0 = time.monotonic()
            up = _sh([str(CLUSTER), "up"], env=env, timeout=180)
            assert up.returncode == 0, f"slurm-cluster.sh up failed:\n{up.stdout}\n{up.stderr}"
            STARTED_MARK.touch()  # a cluster that was up before the tests is left running at the end
            print(f"\nslurm-cluster.sh up took {time.monotonic() - t0:.1f}s")
        me.touch()
    yield env
    with cluster_lock():
        me.unlink(missing_ok=True)
        others = [p for p in USERS_DIR.iterdir() if p.name.isdigit() and _alive(int(p.name))]
        if not others and STARTED_MARK.exists():
            down = _sh([str(CLUSTER), "down"], env=env, timeout=120)
            STARTED_MARK.unlink(missing_ok=True)
            assert down.returncode == 0, down.stderr


@pytest.fixture
def slurm_env(_slurm_session) -> dict[str, str]:
    """The cluster's environment, with the cluster to this test alone while it runs."""
    with cluster_lock():
        yield _slurm_session


def job_state(env: dict[str, str], job_id: str) -> dict[str, str]:
    out = _sh(["scontrol", "show", "job", "-o", job_id], env=env).stdout
    return dict(re.findall(r"(\w+)=(\S*)", out))


def wait_job(env: dict[str, str], job_id: str, timeout: float = JOB_TIMEOUT) -> dict[str, str]:
    """Poll until the job has ended (sbatch --wait can lag by tens of seconds); cancel it on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = job_state(env, job_id)
        if info.get("JobState") in FINAL_STATES:
            return info
        time.sleep(0.5)
    _sh(["scancel", job_id], env=env)
    pytest.fail(f"job {job_id} did not finish in {timeout}s; last state {job_state(env, job_id).get('JobState')}")


def sbatch(env: dict[str, str], script: Path, *args: str, cwd: Path | None = None) -> str:
    r = _sh(["sbatch", "--parsable", *args, str(script)], env=env, cwd=cwd or script.parent)
    assert r.returncode == 0, f"sbatch {script.name} failed: {r.stderr}"
    return r.stdout.strip().split(";")[0]


def wait_nodes_idle(env: dict[str, str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = _sh(["sinfo", "-h", "-N", "-o", "%N %t"], env=env).stdout.split("\n")
        if sorted(s for s in states if s) == ["n1 idle", "n2 idle"]:
            return
        time.sleep(0.5)
    pytest.fail(f"nodes not idle after {timeout}s: {states}")


@pytest.fixture
def restore_nodes(slurm_env):
    """Whatever a test drains, resume every node afterwards and wait until both are idle again."""
    yield slurm_env
    for node in ("n1", "n2"):
        _sh(["scontrol", "update", f"nodename={node}", "state=resume"], env=slurm_env)
    wait_nodes_idle(slurm_env)


def drain(env: dict[str, str], node: str, reason: str) -> None:
    r = _sh(["scontrol", "update", f"nodename={node}", "state=drain", f"reason={reason}"], env=env)
    assert r.returncode == 0, r.stderr


def node_state(env: dict[str, str], node: str) -> str:
    """The node's long state without sinfo's flag suffix ('idle*' right after a resume is still idle)."""
    return _sh(["sinfo", "-h", "-N", "-n", node, "-o", "%T"], env=env).stdout.strip().rstrip("*~#!%$@^-")


# --- static checks: every script parses, lints and is accepted by sbatch ---------------------------------

def test_the_scripts_exist():
    names = {p.name for p in SLURM_FILES}
    assert {f"{n}-launcher.slurm" for n in LAUNCHER_NAMES} <= names
    assert {"example.slurm", "cron-hourly.slurm", "cron-daily.slurm", "slurm-status.slurm"} <= names
    assert UNDRAIN.is_file() and FS_WATCHDOG.is_file() and SLURM_STATUS.is_file()


@pytest.mark.parametrize("path", SHELL_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_bash_syntax(path):
    r = _sh(["bash", "-n", str(path)])
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("path", SHELL_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_shellcheck(path):
    shellcheck = require_tool("shellcheck")
    r = _sh([shellcheck, "--shell=bash", "--external-sources", str(path)])
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("path", OWN_SHELL_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_safety_settings(path):
    text = path.read_text()
    assert text.startswith("#!"), "a script starts with a shebang line"
    assert "set -euo pipefail" in text


@pytest.mark.parametrize("path", SLURM_FILES, ids=lambda p: p.name)
def test_sbatch_test_only(slurm_env, path):
    r = _sh(["sbatch", "--test-only", "--output=/dev/null", str(path)], env=slurm_env, cwd=path.parent)
    assert r.returncode == 0, r.stderr
    assert "to start at" in r.stderr


def test_cluster_up_is_idempotent(slurm_env):
    t0 = time.monotonic()
    r = _sh([str(CLUSTER), "up"], env=slurm_env)
    assert r.returncode == 0 and "already up" in r.stderr
    assert time.monotonic() - t0 < 10
    status = _sh([str(CLUSTER), "status"], env=slurm_env)
    assert status.returncode == 0, status.stdout
    assert re.search(r"n1 .*idle", status.stdout) and re.search(r"n2 .*idle", status.stdout)


# --- the launchers, for real -----------------------------------------------------------------------------

def test_train_tiny_runs_alone():
    """train_tiny.py without any launcher: one process, world size 1."""
    env = {k: v for k, v in os.environ.items() if k not in LAUNCH_VARS and not k.startswith("SLURM_")}
    r = _sh([_python(), str(LAUNCHERS / "train_tiny.py"), "--steps", "2"], env=env)
    assert r.returncode == 0, r.stderr
    assert "rank=0 world_size=1 local_rank=0" in r.stdout and "DONE rank=0 world_size=1" in r.stdout


@functools.cache
def _has_module(python: str, module: str) -> bool:
    """Whether `python` can import `module`, asked without importing it (torch alone takes seconds)."""
    code = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({module!r}) is None)"
    return _sh([python, "-c", code]).returncode == 0


@pytest.mark.parametrize("nodes", [1, 2])
@pytest.mark.parametrize("launcher", LAUNCHER_NAMES)
def test_launcher(slurm_env, tmp_path, launcher, nodes):
    for module in ("torch", *([launcher] if launcher in ("accelerate", "lightning") else [])):
        require(_has_module(slurm_env["PYTHON"], module),
                f"the Python package '{module}' is not installed in {slurm_env['PYTHON']}")
    script = LAUNCHERS / f"{launcher}-launcher.slurm"
    job = sbatch(slurm_env, script, f"--nodes={nodes}", f"--output={tmp_path}/%x-%j.out", "--time=5")
    info = wait_job(slurm_env, job)
    out_file = tmp_path / f"{launcher}-launcher-{job}.out"
    output = out_file.read_text() if out_file.exists() else "(no output file)"
    assert info["JobState"] == "COMPLETED", f"job {job} ended {info['JobState']}:\n{output}"

    world = nodes * TASKS_PER_NODE
    assert f"{nodes} node(s)" in output
    for rank in range(world):
        for step in range(3):
            assert re.search(rf"^rank={rank} world_size={world} local_rank=\d node=n\d step={step} loss=[\d.]+$",
                             output, re.M), f"rank {rank} step {step} missing:\n{output}"
        assert f"DONE rank={rank} world_size={world}" in output, output
    assert len(re.findall(r"^DONE rank=", output, re.M)) == world
    seen_nodes = set(re.findall(r"node=(n\d)", output))
    assert seen_nodes == ({"n1"} if nodes == 1 else {"n1", "n2"}), seen_nodes
    local_ranks = set(re.findall(r"local_rank=(\d)", output))
    assert local_ranks == {str(i) for i in range(TASKS_PER_NODE)}


def test_example_job(slurm_env, tmp_path):
    job = sbatch(slurm_env, SLURM_DIR / "example.slurm", f"--output={tmp_path}/%x-%j.out", "--nodes=2")
    info = wait_job(slurm_env, job)
    output = (tmp_path / f"example-{job}.out").read_text()
    assert info["JobState"] == "COMPLETED", output
    assert re.search(r"^0: task 0 of 2 on .* \(node n1\)$", output, re.M), output
    assert re.search(r"^1: task 1 of 2 on .* \(node n2\)$", output, re.M), output
    assert f"job {job} finished" in output


# --- self-resubmitting jobs --------------------------------------------------------------------------------

def _cancel_pending(env: dict[str, str], name: str) -> list[str]:
    ids = _sh(["squeue", "-h", f"--name={name}", "--states=PENDING", "-o", "%i"], env=env).stdout.split()
    if ids:
        _sh(["scancel", *ids], env=env)
    return ids


@pytest.mark.parametrize("period", ["hourly", "daily"])
def test_cron_job_resubmits_then_works(slurm_env, tmp_path, period):
    name = f"cron-{period}"
    _cancel_pending(slurm_env, name)
    tasks = tmp_path / f"cron.{period}"
    tasks.mkdir()
    (tasks / "10-mark").write_text(f"#!/bin/sh\necho ran > {tmp_path}/marker\n")
    (tasks / "20-fails").write_text("#!/bin/sh\nexit 3\n")
    (tasks / "30-not-executable").write_text("#!/bin/sh\necho should not run\n")
    (tasks / "10-mark").chmod(0o755)
    (tasks / "20-fails").chmod(0o755)
    env = dict(slurm_env, CRON_DIR=str(tmp_path))
    try:
        job = sbatch(env, SLURM_DIR / f"{name}.slurm", f"--output={tmp_path}/%x-%j.out", cwd=tmp_path)
        info = wait_job(env, job, timeout=120)
        output = (tmp_path / f"{name}-{job}.out").read_text()
        # The failing task fails the run, but only after the next run was queued and the other task ran.
        assert info["JobState"] == "FAILED", output
        assert (tmp_path / "marker").read_text() == "ran\n"
        assert "FAILED (exit 3)" in output and "should not run" not in output
        assert "next run queued for" in output
        pending = _sh(["squeue", "-h", f"--name={name}", "--states=PENDING", "-o", "%i %r %S"], env=env).stdout
        assert len(pending.splitlines()) == 1, pending
        next_id, reason, start = pending.split()
        assert reason == "BeginTime" and next_id != job
        delay = time.mktime(time.strptime(start, "%Y-%m-%dT%H:%M:%S")) - time.time()
        limit = 3600 if period == "hourly" else 2 * 86400
        assert 0 < delay <= limit + 60, f"next run at {start}"
    finally:
        _cancel_pending(slurm_env, name)


def test_slurm_status_job(slurm_env, tmp_path):
    _cancel_pending(slurm_env, "slurm-status")
    env = dict(slurm_env, STATUS_MIN_NODES="2", STATUS_EVERY="30 minutes")
    try:
        job = sbatch(env, FT / "slurm-status.slurm", f"--output={tmp_path}/%x-%j.out", cwd=tmp_path)
        info = wait_job(env, job, timeout=120)
        output = (tmp_path / f"slurm-status-{job}.out").read_text()
        assert info["JobState"] == "COMPLETED", output
        assert "partition debug: 2 of 2 nodes usable, need 2: ok" in output
        assert "next check queued for" in output
        assert _cancel_pending(slurm_env, "slurm-status"), "the next check was not queued"
    finally:
        _cancel_pending(slurm_env, "slurm-status")


# --- undrain-good-nodes.sh against the real cluster ----------------------------------------------------------

def test_undrain_help():
    r = _sh(["bash", str(UNDRAIN), "--help"])
    assert r.returncode == 0 and "--dry-run" in r.stdout and "--check" in r.stdout
    bad = _sh(["bash", str(UNDRAIN), "--no-such-option"])
    assert bad.returncode == 2 and "unknown argument" in bad.stderr


def test_undrain_resumes_a_healthy_node(restore_nodes):
    env = restore_nodes
    drain(env, "n2", "test")
    assert node_state(env, "n2") == "drained"
    r = _sh(["bash", str(UNDRAIN), "--check", "getent hosts {node}"], env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "n2: drained (test): healthy, resumed" in r.stdout
    deadline = time.monotonic() + 30
    while node_state(env, "n2") != "idle" and time.monotonic() < deadline:
        time.sleep(0.5)
    assert node_state(env, "n2") == "idle"
    again = _sh(["bash", str(UNDRAIN), "--check", "true"], env=env)
    assert again.returncode == 0 and "no drained nodes" in again.stdout


def test_undrain_keeps_unhealthy_and_dry_run_changes_nothing(restore_nodes):
    env = restore_nodes
    drain(env, "n1", "Kill task failed")
    drain(env, "n2", "Kill task failed")
    check = 'test "$NODE" = n2'  # n1 "fails" its health check
    dry = _sh(["bash", str(UNDRAIN), "--dry-run", "--check", check], env=env)
    assert dry.returncode == 1, dry.stdout
    assert "n2: drained (Kill task failed): healthy, would resume (dry run)" in dry.stdout
    assert node_state(env, "n1") == node_state(env, "n2") == "drained"
    skipped = _sh(["bash", str(UNDRAIN), "--reason", "^Not responding$", "--check", "true"], env=env)
    assert skipped.returncode == 0 and skipped.stdout.count("', skipped\n") == 2, skipped.stdout
    assert "summary: 2 drained, 2 skipped, 0 healthy, 0 failed the check" in skipped.stdout
    assert node_state(env, "n2") == "drained"
    real = _sh(["bash", str(UNDRAIN), "--check", check], env=env)
    assert real.returncode == 1
    assert "n1: drained (Kill task failed): health check failed (exit 1), left drained" in real.stdout
    assert "n2: drained (Kill task failed): healthy, resumed" in real.stdout
    assert node_state(env, "n1") == "drained"
    assert node_state(env, "n2") == "idle"


# --- slurm-status.py against the real cluster ----------------------------------------------------------------

def _status(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return _sh([_python(), str(SLURM_STATUS), *args], env=env)


def test_slurm_status_help():
    r = _sh([_python(), str(SLURM_STATUS), "--help"])
    assert r.returncode == 0 and "--min-nodes" in r.stdout and "--partition" in r.stdout


def test_slurm_status_reports_drained_nodes(restore_nodes):
    env = restore_nodes
    ok = _status(env, "--partition", "debug")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "partition debug: 2 of 2 nodes usable, need 2: ok" in ok.stdout
    drain(env, "n2", "test")
    bad = _status(env, "--partition", "debug", "--min-nodes", "2")
    assert bad.returncode == 1
    assert "1 of 2 nodes usable, need 2: PROBLEM: 1 short" in bad.stdout
    assert re.search(r"^\s+n2\s+drained\s+reason: test$", bad.stdout, re.M), bad.stdout
    enough = _status(env, "--min-nodes", "1", "--quiet")
    assert enough.returncode == 0 and enough.stdout == ""
    as_json = _status(env, "--json")
    data = json.loads(as_json.stdout)
    assert as_json.returncode == 1 and data["ok"] is False
    assert data["partitions"]["debug"]["usable"] == 1
    assert data["partitions"]["debug"]["unusable"][0]["name"] == "n2"
    missing = _status(env, "--partition", "no-such-partition")
    assert missing.returncode == 2


def test_slurm_status_alert_command(restore_nodes, tmp_path):
    env = restore_nodes
    drain(env, "n1", "bad gpu")
    r = _sh([_python(), str(SLURM_STATUS), "--alert-cmd", "cat > alert.txt"], env=env, cwd=tmp_path)
    assert r.returncode == 1
    alert = (tmp_path / "alert.txt").read_text()
    assert "PROBLEM" in alert and "n1" in alert and "bad gpu" in alert


def test_slurm_status_state_classification():
    spec = importlib.util.spec_from_file_location("slurm_status", SLURM_STATUS)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the class is created
    spec.loader.exec_module(mod)
    for state in ("idle", "mixed", "allocated", "completing", "mixed-", "IDLE"):
        assert mod.is_usable(state), state
    for state in ("drained", "draining", "down", "down*", "idle*", "idle~", "fail", "inval", "unknown", "idle$"):
        assert not mod.is_usable(state), state
    parts = mod.parse_sinfo("n1|gpu*|idle|none\nn2|gpu*|drained|bad gpu\nn2|cpu|drained|bad gpu\n")
    assert sorted(parts) == ["cpu", "gpu"]
    assert [n.name for n in parts["gpu"].unusable] == ["n2"]
    text, ok = mod.report(parts, 1)
    assert not ok and "partition cpu: 0 of 1 nodes usable, need 1: PROBLEM: 1 short" in text


# --- fs-watchdog.py on a temporary directory ----------------------------------------------------------------

def _watchdog(*args: str, **kw) -> subprocess.CompletedProcess:
    return _sh([_python(), str(FS_WATCHDOG), *args], **kw)


def test_fs_watchdog_help():
    r = _watchdog("--help")
    assert r.returncode == 0 and "--threshold" in r.stdout and "--once" in r.stdout


def test_fs_watchdog_below_threshold(tmp_path):
    r = _watchdog("--once", "--threshold", "100", "--inode-threshold", "100", "-v", str(tmp_path))
    # 100% would only be reached on a completely full filesystem.
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(rf"^{re.escape(str(tmp_path))}: \d+% of space used", r.stdout, re.M)
    assert "ALERT" not in r.stdout


def test_fs_watchdog_alerts_with_command(tmp_path):
    out = tmp_path / "alerts.txt"
    cmd = f'{{ echo "$FS_WATCHDOG_KIND $FS_WATCHDOG_STATE $FS_WATCHDOG_PERCENT"; cat; }} >> {out}'
    r = _watchdog("--once", "--threshold", "0", "--alert-cmd", cmd, str(tmp_path))
    assert r.returncode == 1
    text = out.read_text()
    assert re.search(r"^space over \d+$", text, re.M), text
    assert f"ALERT {tmp_path}:" in text and "at or above the 0% threshold" in text


def test_fs_watchdog_missing_path_fails(tmp_path):
    r = _watchdog("--once", str(tmp_path / "does-not-exist"))
    assert r.returncode == 1 and "cannot check" in r.stderr


def test_fs_watchdog_alerts_once_while_over(tmp_path):
    """In watch mode a filesystem that stays over the threshold is reported once, not every interval."""
    proc = subprocess.Popen([_python(), str(FS_WATCHDOG), "--threshold", "0", "--interval", "0.2", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    proc.terminate()
    out, _ = proc.communicate(timeout=10)
    assert out.count("ALERT") == 1, out


def test_fs_watchdog_rejects_bad_threshold(tmp_path):
    r = _watchdog("--once", "--threshold", "120", str(tmp_path))
    assert r.returncode == 2 and "percentage" in r.stderr


def test_ci_runs_everything():
    """Under CI the cluster tests must not be skippable: the tools they need are declared for installation."""
    wanted = (REPO / "build" / "apt-packages.txt").read_text()
    for pkg in ("slurm-wlm", "munge", "shellcheck"):
        assert re.search(rf"^{pkg}\b", wanted, re.M), pkg
    if IN_CI:
        for tool in ("slurmctld", "munged", "shellcheck"):
            require_tool(tool)
