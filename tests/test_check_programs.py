"""`tools check-programs`: the scripts a book links to, found through the model, and whether each one starts."""
from __future__ import annotations

import json
import posixpath
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import REPO, require_tool
from tools.book.link_model import TargetKind
from tools.book.load import load_book
from tools.checks.programs.run import classify, discover, interpreter_name, read_shebang
from tools.cli import main

GOOD_PY = '#!/usr/bin/env python3\n"""A good script."""\nimport argparse\n\nparser = argparse.ArgumentParser(description="Adds one.")\nparser.add_argument("--n", type=int, default=1)\n\nif __name__ == "__main__":\n    print(parser.parse_args().n + 1)\n'
BROKEN_PY = '#!/usr/bin/env python3\nimport argparse\nimport not_a_real_module_xyz  # noqa\n\nif __name__ == "__main__":\n    argparse.ArgumentParser().parse_args()\n'
IN_CODE_PY = 'raise SystemExit("this script is only named inside a code block and must never run")\n'
GOOD_SH = '#!/usr/bin/env bash\nset -euo pipefail\necho "hello ${1:-world}"\n'
BROKEN_SH = '#!/bin/bash\nif true; then\n  echo "never closed"\n'
LINT_SH = '#!/bin/bash\nset -eu\nrm -rf $1/tmp\n'
JOB_SLURM = '#!/bin/bash\n#SBATCH --job-name=tiny\n#SBATCH --nodes=1\n#SBATCH --ntasks-per-node=1\n#SBATCH --time=00:01:00\nset -euo pipefail\nsrun hostname\n'
LIB_PY = '"""A helper module: no shebang and no __main__ block, so it only has to import."""\n\n\ndef add(a, b):\n    return a + b\n'
RUNME = '#!/usr/bin/env python3\nprint("usage: runme [--help]")\n'

README = """# Scripts

Run [the good one](bin/good.py) and [the broken one](bin/broken.py).

Shell: [good.sh](bin/good.sh), [broken.sh](bin/broken.sh), [lint.sh](bin/lint.sh) and the job [job.slurm](bin/job.slurm).

The library [lib.py](bin/lib.py), the tool [runme](bin/runme), and some [notes](bin/notes) that are data.

Gone: [missing](bin/missing.py).

```markdown
A link in code is text: [in code](bin/in_code.py)
```

And inline: `[in code](bin/in_code.py)`.
"""
SECOND = "# Again\n\nText.\n\nThe [same script](bin/good.py), linked a second time.\n"

FILES = {
    "README.md": README,
    "second.md": SECOND,
    "bin/good.py": GOOD_PY,
    "bin/broken.py": BROKEN_PY,
    "bin/in_code.py": IN_CODE_PY,
    "bin/good.sh": GOOD_SH,
    "bin/broken.sh": BROKEN_SH,
    "bin/lint.sh": LINT_SH,
    "bin/job.slurm": JOB_SLURM,
    "bin/lib.py": LIB_PY,
    "bin/runme": RUNME,
    "bin/notes": "plain text, not a program\n",
}
EXPECTED = {
    "bin/good.py": "ok", "bin/broken.py": "failed", "bin/good.sh": "ok", "bin/broken.sh": "failed", "bin/lint.sh": "failed",
    "bin/job.slurm": "ok", "bin/lib.py": "ok", "bin/runme": "ok", "bin/missing.py": "missing",
}


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


@pytest.fixture
def book(tmp_book) -> Path:
    root = tmp_book(FILES)
    (root / "bin/runme").chmod(0o755)
    return root


def run_cli(*args: str):
    return CliRunner().invoke(main, ["check-programs", *args], catch_exceptions=False)


def test_discovery_follows_the_model(book):
    programs = {p.path: p for p in discover(load_book(book))}
    assert list(programs) == list(EXPECTED)  # book order of first link; notes and the code-block script are not programs
    kinds = {path: p.kind for path, p in programs.items()}
    assert kinds == {
        "bin/good.py": "python", "bin/broken.py": "python", "bin/good.sh": "shell", "bin/broken.sh": "shell", "bin/lint.sh": "shell",
        "bin/job.slurm": "slurm", "bin/lib.py": "module", "bin/runme": "python", "bin/missing.py": "missing",
    }
    twice = programs["bin/good.py"]
    assert [(link.source, link.line) for link in twice.links] == [("README.md", line_of(README, "bin/good.py")), ("second.md", line_of(SECOND, "bin/good.py"))]
    assert "bin/in_code.py" not in programs


def test_shebangs_and_classification(tmp_path):
    assert interpreter_name(["/usr/bin/env", "-S", "python3", "-u"]) == "python3"
    assert interpreter_name(["/bin/bash", "-e"]) == "bash"
    assert interpreter_name([]) == ""
    (tmp_path / "tool").write_text("#!/usr/bin/env -S python3 -u\nprint(1)\n")
    assert read_shebang(tmp_path / "tool") == ["/usr/bin/env", "-S", "python3", "-u"]
    assert classify(tmp_path, "tool") == ("python", ["/usr/bin/env", "-S", "python3", "-u"])
    (tmp_path / "data").write_text("no shebang\n")
    assert classify(tmp_path, "data") is None
    (tmp_path / "data").chmod(0o755)
    assert classify(tmp_path, "data") == ("executable", [])
    (tmp_path / "table.csv").write_text("a,b\n")
    (tmp_path / "table.csv").chmod(0o755)
    assert classify(tmp_path, "table.csv") is None


def test_text_report_locates_every_problem(book):
    require_tool("shellcheck")
    result = run_cli("--book", str(book))
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    for path, status in EXPECTED.items():
        label = {"ok": "ok", "failed": "FAIL", "missing": "MISSING"}[status]
        assert any(line.split()[:2] == [label, path] for line in lines), (path, result.stdout)
    assert "bin/in_code.py" not in result.output
    assert lines[-1].startswith("Checked 9 scripts linked from 10 places: 5 ok, 3 failed, 1 missing in ")
    err = result.stderr
    broken_py = f"README.md:{line_of(README, 'bin/broken.py')}:"
    assert broken_py in err and "No module named 'not_a_real_module_xyz'" in err and "Install 'not_a_real_module_xyz'" in err
    assert f"README.md:{line_of(README, 'bin/broken.sh')}:" in err and "bash cannot parse the script 'bin/broken.sh'" in err
    assert "shellcheck finds" in err and "SC2086" in err and "https://www.shellcheck.net/wiki/SC2086" in err
    assert f"README.md:{line_of(README, 'bin/missing.py')}:" in err and "does not exist" in err and "tools check-links" in err
    assert "job.slurm" not in err and "good.py" not in err


def test_json_report(book):
    require_tool("shellcheck")
    result = run_cli("--book", str(book), "--format", "json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    scripts = {s["path"]: s for s in report["scripts"]}
    assert {path: s["status"] for path, s in scripts.items()} == EXPECTED
    assert report["summary"] == {**report["summary"], "scripts": 9, "links": 10, "ok": 5, "failed": 3, "missing": 1}
    good = scripts["bin/good.py"]
    assert [link["file"] for link in good["linked_from"]] == ["README.md", "second.md"]
    assert good["checks"][0]["name"] == "--help" and good["checks"][0]["returncode"] == 0 and "usage" in good["checks"][0]["output"]
    assert [c["name"] for c in scripts["bin/job.slurm"]["checks"]] == ["bash -n", "shellcheck"]
    assert [c["name"] for c in scripts["bin/broken.sh"]["checks"]] == ["bash -n"]  # shellcheck would repeat the parse error
    assert scripts["bin/lib.py"]["checks"][0]["name"] == "import"
    lint = scripts["bin/lint.sh"]["problems"][0]
    assert lint["code"] == "shellcheck" and lint["file"] == "README.md" and lint["line"] == line_of(README, "bin/lint.sh") and lint["suggestion"]
    assert any("SC2086" in f for f in scripts["bin/lint.sh"]["checks"][1]["findings"])
    assert scripts["bin/broken.py"]["problems"][0]["code"] == "fails-to-start"
    assert scripts["bin/missing.py"]["problems"][0]["code"] == "missing-script"


def test_missing_shellcheck_is_a_clear_error(book, monkeypatch):
    monkeypatch.setattr("tools.commands.check_programs.find_shellcheck", lambda: None)
    result = run_cli("--book", str(book))
    assert result.exit_code == 2
    assert "shellcheck is not installed" in result.output and "apt-get install shellcheck" in result.output and "--no-shellcheck" in result.output
    result = run_cli("--book", str(book), "--no-shellcheck", "--format", "json")
    statuses = {s["path"]: s["status"] for s in json.loads(result.stdout)["scripts"]}
    assert statuses["bin/lint.sh"] == "ok" and statuses["bin/broken.sh"] == "failed"  # bash -n still runs


def test_silent_slow_and_unstartable_programs(tmp_book):
    root = tmp_book({
        "README.md": "# T\n\n[silent](silent.py), [slow](slow.py), [no shebang](tool), [fine](fine.py).\n",
        "silent.py": 'if __name__ == "__main__":\n    pass\n',
        "slow.py": 'import subprocess, sys, time\nif __name__ == "__main__":\n    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])\n    time.sleep(60)\n',
        "tool": "echo this file is executable but has no shebang\n",
        "fine.py": GOOD_PY,
    })
    (root / "tool").chmod(0o755)
    start = time.perf_counter()
    result = run_cli("--book", str(root), "--timeout", "1.5", "--format", "json")
    assert time.perf_counter() - start < 20  # the timeout kills the script and its child, whose pipe would keep us waiting
    assert result.exit_code == 1
    problems = {s["path"]: s["problems"] for s in json.loads(result.stdout)["scripts"]}
    assert problems["fine.py"] == []
    assert problems["silent.py"][0]["code"] == "help-silent" and "argparse" in problems["silent.py"][0]["suggestion"]
    assert problems["slow.py"][0]["code"] == "help-timeout" and "1.5 s" in problems["slow.py"][0]["message"]
    assert problems["tool"][0]["code"] == "no-shebang" and "chmod -x" in problems["tool"][0]["suggestion"]


def test_python_option(book, tmp_path):
    result = run_cli("--book", str(book), "--python", str(tmp_path / "no-such-python"))
    assert result.exit_code == 2 and "no-such-python" in result.output and "--python" in result.output
    # A wrapper Python that leaves a mark: the .py scripts and the module run through it.
    marks = tmp_path / "marks"
    wrapper = tmp_path / "wrapped-python"
    wrapper.write_text(f'#!/bin/bash\necho "$@" >> {marks}\nexec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    result = run_cli("--book", str(book), "--python", str(wrapper), "--no-shellcheck", "--format", "json")
    assert json.loads(result.stdout)["python"] == str(wrapper)
    used = marks.read_text()
    assert all(name in used for name in ("bin/good.py", "bin/broken.py", "bin/lib.py", "bin/runme"))


def test_cli_in_a_real_subprocess(book, tmp_book):
    require_tool("shellcheck")
    done = subprocess.run([sys.executable, "-m", "tools", "check-programs", "--book", str(book), "--format", "json", "-j", "2"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert {s["path"]: s["status"] for s in json.loads(done.stdout)["scripts"]} == EXPECTED
    good = tmp_book({"README.md": "# Good\n\n[a](a.py), [b](b.sh), [c](c.slurm)\n", "a.py": GOOD_PY, "b.sh": GOOD_SH, "c.slurm": JOB_SLURM}, name="good")
    done = subprocess.run([sys.executable, "-m", "tools", "check-programs", "--book", str(good)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("Checked 3 scripts linked from 3 places: 3 ok, 0 failed in ")
    assert done.stderr == ""
    assert not list(good.rglob("__pycache__"))  # checks leave nothing in the book
    helptext = subprocess.run([sys.executable, "-m", "tools", "--help"], capture_output=True, text=True).stdout
    assert "check-programs" in helptext


@pytest.mark.xdist_group("torchrun")
def test_our_book():
    """Our own chapters: discovery finds the linked scripts that exist, and the run completes (scripts are still being written)."""
    require_tool("shellcheck")
    chapters = REPO / "chapters"
    done = subprocess.run([sys.executable, "-m", "tools", "check-programs", "--book", "chapters", "--format", "json", "--timeout", "120"], cwd=REPO, capture_output=True, text=True, timeout=900)
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    scripts = {s["path"]: s for s in report["scripts"]}
    assert all(s["status"] in ("ok", "failed", "missing") for s in scripts.values())
    existing = {path for path, s in scripts.items() if s["status"] != "missing"}
    assert existing and all((chapters / path).is_file() for path in existing)
    # Every linked file with a script suffix is found (read through the model, as the command does).
    book = load_book(chapters)
    linked = {link.target.path for link in book.links() if link.target and link.target.kind is TargetKind.FILE}
    assert {p for p in linked if posixpath.splitext(p)[1] in (".py", ".sh", ".bash", ".slurm")} <= existing
    # Scripts that many chapters link to today.
    widely_linked = {"network/benchmarks/all_reduce_bench.py", "compute/accelerator/benchmarks/mamf-finder.py", "development/debug/torch-distributed-gpu-test.py"}
    assert widely_linked <= linked <= existing | {p for p in linked if classify(chapters, p) is None}
    assert report["summary"]["scripts"] == len(scripts)
    failing = {path: [p["message"] for p in s["problems"]] for path, s in scripts.items() if s["status"] != "ok"}
    print(json.dumps(failing, indent=2))  # shown with -rP: which of the book's scripts fail today
