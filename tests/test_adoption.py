"""Other repositories adopting the tool (issue 35, item 5): the GitHub Action (action.yml), the pre-commit hooks
(.pre-commit-hooks.yaml), and this repository's workflows that use them (links.yml with `uses: ./`, pages.yml, the
fresh-machine `make book` of book.yml). Each file is checked against its schema (check-jsonschema's built-in copies,
no network); the action's check step runs here on a small book; pre-commit runs the hooks from this checkout."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from ruamel.yaml import YAML  # comes with check-jsonschema

from conftest import REPO, require, write_book

WORKFLOWS = REPO / ".github" / "workflows"
ACTION_CACHE = "${{ runner.temp }}/mlbook-links-cache"


def validator() -> str:
    found = shutil.which("check-jsonschema") or str(Path(sys.executable).parent / "check-jsonschema")
    require(Path(found).is_file(), "check-jsonschema is not installed (make install-dev installs it)")
    return found


def load(path: Path) -> dict:
    return YAML(typ="safe").load(path.read_text(encoding="utf-8"))


def triggers(workflow: dict) -> dict:
    return workflow[True] if True in workflow else workflow["on"]  # a YAML 1.1 reader turns a bare `on` into true


def make_targets() -> set[str]:
    return set(re.findall(r"^([a-zA-Z][\w-]*):", (REPO / "Makefile").read_text(), re.M))


def check_links_options() -> set[str]:
    from tools.commands.check_links import check_links

    return {opt for param in check_links.params for opt in param.opts + param.secondary_opts}


def test_the_action_and_every_workflow_are_valid():
    done = subprocess.run([validator(), "--builtin-schema", "vendor.github-actions", str(REPO / "action.yml")], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    workflows = sorted(WORKFLOWS.glob("*.yml"))
    assert {path.name for path in workflows} >= {"links.yml", "pages.yml", "book.yml", "package.yml"}
    done = subprocess.run([validator(), "--builtin-schema", "vendor.github-workflows", *map(str, workflows)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_action_installs_from_its_checkout_and_keeps_the_url_cache():
    action = load(REPO / "action.yml")
    assert set(action["inputs"]) == {"book", "args", "changed-since", "python-version", "cache"}
    steps = action["runs"]["steps"]
    assert action["runs"]["using"] == "composite"
    install = next(step for step in steps if "pip install" in step.get("run", ""))
    assert install["env"]["ACTION_PATH"] == "${{ github.action_path }}" and '"$ACTION_PATH"' in install["run"]
    cache = next(step for step in steps if step.get("uses", "").startswith("actions/cache@"))
    check = steps[-1]
    assert cache["with"]["path"] == ACTION_CACHE == check["env"]["TOOLS_LINKS_CACHE_DIR"]
    assert all("${{" not in line for line in check["run"].splitlines()), "inputs reach the script through env, never pasted into it"


def _run_check_step(tmp_path: Path, book: Path, **inputs: str) -> subprocess.CompletedProcess:
    """The action's last step, as the runner runs it (bash -e), with the tool of this checkout as the installed one."""
    step = load(REPO / "action.yml")["runs"]["steps"][-1]
    runner_temp = tmp_path / "runner"
    tools = runner_temp / "mlbook-tools" / "bin" / "tools"
    tools.parent.mkdir(parents=True, exist_ok=True)
    tools.write_text(f'#!/bin/bash\nPYTHONPATH={REPO} exec {sys.executable} -m tools "$@"\n')
    tools.chmod(0o755)
    env = dict(os.environ, RUNNER_TEMP=str(runner_temp), BOOK=str(book), EXTRA_ARGS=inputs.get("args", ""), CHANGED_SINCE=inputs.get("changed-since", ""),
               TOOLS_LINKS_CACHE_DIR=str(runner_temp / "mlbook-links-cache"))
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)


def test_the_action_reports_findings_as_annotations(tmp_path):
    book = write_book(tmp_path / "book", {"a.md": "# A\n\nSee [b](b.md#nowhere) and ![](pic.png).\n", "b.md": "# B\n\nText.\n"})
    result = _run_check_step(tmp_path, book)
    assert result.returncode == 1, result.stdout + result.stderr
    assert re.search(r"^::error file=[^,]*a\.md,line=3,col=\d+.*missing-anchor", result.stdout, re.M), result.stdout
    assert re.search(r"^::error file=[^,]*a\.md,line=3,col=\d+.*missing-image", result.stdout, re.M), result.stdout
    fixed = write_book(tmp_path / "fixed", {"a.md": "# A\n\nSee [b](b.md#b) and ![A picture](pic.png).\n", "b.md": "# B\n\nText.\n", "pic.png": b"\x89PNG\r\n\x1a\n"})
    assert _run_check_step(tmp_path, fixed, args="--strict").returncode == 0
    warned = write_book(tmp_path / "warned", {"a.md": "# A\n\n![](pic.png)\n", "pic.png": b"\x89PNG\r\n\x1a\n"})
    assert _run_check_step(tmp_path, warned).returncode == 0
    strict = _run_check_step(tmp_path, warned, args="--strict  --no-cache")  # extra arguments are split at blanks
    assert strict.returncode == 1 and "image-alt" in strict.stdout, strict.stdout + strict.stderr


def test_links_workflow_uses_the_action_for_pull_requests():
    workflow = load(WORKFLOWS / "links.yml")
    assert {"pull_request", "schedule"} <= set(triggers(workflow))
    action_inputs = set(load(REPO / "action.yml")["inputs"])
    options = check_links_options()
    used, caches, runs = [], [], []
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            if step.get("uses") == "./":
                used.append(step.get("with", {}))
            if step.get("uses", "").startswith("actions/cache@"):
                caches.append(step["with"]["path"])
            if "run" in step:
                runs.append(step["run"])
    assert len(used) == 2
    for inputs in used:
        assert set(inputs) <= action_inputs and inputs["book"] == "chapters"
        assert all(word in options for word in shlex.split(inputs.get("args", "")) if word.startswith("--"))
    assert any(inputs.get("changed-since") == "origin/${{ github.base_ref }}" for inputs in used)
    weekly = [run for run in runs if "check-links" in run]
    assert len(weekly) == 1 and shlex.split(weekly[0])[:2] == ["make", "check-links-all"] and "check-links-all" in make_targets()
    for arg in shlex.split(shlex.split(weekly[0])[2][len("LINK_ARGS="):]):
        assert not arg.startswith("--") or arg in options
    assert caches == [ACTION_CACHE]  # the weekly job restores the cache the action keeps


def test_book_workflow_runs_make_book_strictly_on_a_fresh_runner():
    workflow = load(WORKFLOWS / "book.yml")
    job = workflow["jobs"]["fresh-machine"]
    assert job["runs-on"] == "ubuntu-latest" and "pull_request" in triggers(workflow)
    runs = [step["run"] for step in job["steps"] if "run" in step]
    assert "make book BUILD_ARGS=--strict" in runs and "book" in make_targets()
    assert not any("apt-get" in run for run in runs), "make book installs the packages itself"


def test_pages_workflow_builds_the_site_and_deploys_it():
    workflow = load(WORKFLOWS / "pages.yml")
    assert workflow["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    build, deploy = workflow["jobs"]["build"], workflow["jobs"]["deploy"]
    assert any(step.get("run", "").startswith("make html") for step in build["steps"]) and "html" in make_targets()
    upload = next(step for step in build["steps"] if step.get("uses", "").startswith("actions/upload-pages-artifact@"))
    assert upload["with"]["path"] == "_build/html"
    assert deploy["needs"] == "build" and deploy["environment"]["name"] == "github-pages"
    assert deploy["steps"][0]["uses"].startswith("actions/deploy-pages@")


def test_the_pre_commit_hooks_name_real_commands():
    from tools.cli import COMMANDS

    hooks = load(REPO / ".pre-commit-hooks.yaml")
    assert [hook["id"] for hook in hooks] == ["check-links", "fix-tables", "check-style"]
    for hook in hooks:
        words = hook["entry"].split()
        assert words[0] == "tools" and words[1] in COMMANDS and hook["language"] == "python", hook
        re.compile(hook["files"])


@pytest.mark.slow
def test_pre_commit_runs_the_hooks_from_this_checkout(tmp_path):
    """`pre-commit try-repo` with this checkout as the hooks' repository: pre-commit installs the tool with pip into an
    environment of its own (PyPI for the dependencies, nothing else) and runs each hook on a small book."""
    pre_commit = shutil.which("pre-commit") or str(Path(sys.executable).parent / "pre-commit")
    require(Path(pre_commit).is_file(), "pre-commit is not installed (make install-dev installs it)")
    work = tmp_path / "repo"
    write_book(work, {"chapters-md.txt": "a.md\n", "a.md": "# A\n\nSee [the end](a.md#nowhere).\n\n| a | b |\n|---|---|\n| long cell | x |\n\nA paragraph\nwrapped by hand.\n"})
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    for command in (["git", "init", "-q"], ["git", "add", "."]):
        subprocess.run(command, cwd=work, env=env, check=True)
    result = subprocess.run([pre_commit, "try-repo", str(REPO), "--all-files", "--color", "never"], cwd=work, env=env, capture_output=True, text=True, timeout=900)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert re.search(r"links, images and anchors of the book \(tools check-links\)\.+Failed", output), output
    assert re.search(r"a\.md:3:\d+: error: the link 'a\.md#nowhere' points at '#nowhere'", output), output
    assert re.search(r"tables GitHub renders \(tools fix-tables\)\.+Failed", output) and "files were modified by this hook" in output, output
    assert re.search(r"one line per paragraph \(tools check-style\)\.+Failed", output) and "a.md:9" in output, output
    assert "| long cell | x   |" in (work / "a.md").read_text()  # re-padded by fix-tables
