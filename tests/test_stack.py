"""roomy_stack: deep recursion without CPython's frame-chunk thrashing (what made the PDF build's workers spend a
sixth of their time in mmap/munmap when the CLI called them a few frames deeper)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tools.core.stack import roomy_stack


def test_it_is_a_plain_call():
    assert roomy_stack(divmod, 17, 5) == (3, 2)
    assert roomy_stack(dict, a=1) == {"a": 1}
    with pytest.raises(ZeroDivisionError):
        roomy_stack(divmod, 1, 0)


def test_recursion_limit_still_applies():
    def down(n):
        return down(n + 1)

    with pytest.raises(RecursionError):
        roomy_stack(down, 0)


PROBE = textwrap.dedent("""
    import resource, sys
    from tools.core.stack import roomy_stack

    def down(n):
        return down(n - 1) if n else 0

    def faults(depth, wrap):
        def run():
            for _ in range(1000):
                down(depth)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        roomy_stack(run) if wrap else run()
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

    # the depth where a plain call crosses a chunk boundary on every repetition, found by trying
    worst = max(range(120, 520, 7), key=lambda depth: faults(depth, False))
    print(faults(worst, False), faults(worst, True))
""")


@pytest.mark.skipif(sys.platform != "linux" or sys.implementation.name != "cpython", reason="counts Linux page faults of CPython's frame chunks")
def test_deep_calls_do_not_map_a_chunk_each_time():
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    plain, roomy = map(int, result.stdout.split())
    assert plain >= 1000, f"the probe found no thrashing depth ({plain} faults): it tests nothing on this interpreter"
    assert roomy < plain / 20, f"{roomy} page faults inside roomy_stack against {plain} in a plain call"
