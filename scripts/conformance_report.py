"""How many examples of GitHub's own suites the tool renders as github.com shows them: passed/total per section and
per file of ../shared/conformance (the GFM spec, cmark-gfm's extension and regression cases, github-slugger's
headings), by the harness of tests/conformance (the same rendering, references and normalisation as the tests).

    python scripts/conformance_report.py            # every section
    python scripts/conformance_report.py --files    # only the totals per file

"passed" counts the examples whose HTML is GitHub's; "+N documented" the ones that match once the tool's
documented differences (tests/conformance/test_gfm_spec.py, DIFFERENCES) are made.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from conformance.harness import SLUGGER, tally, verdict  # noqa: E402
from conformance.render import cmark_available, render_book  # noqa: E402
from conformance.suites import SHARED, available, gfm_examples, slugger_headings  # noqa: E402
from conformance.test_gfm_spec import DIFFERENCES, GITHUB_OUTPUT, KNOWN_BUGS  # noqa: E402


def _row(name: str, passed: int, documented: int, total: int) -> str:
    extra = f" (+{documented} documented)" if documented else ""
    return f"  {passed:4d}/{total:<4d} {name}{extra}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", action="store_true", help="only the totals per file")
    args = parser.parse_args()
    if not available():
        print(f"The suites are not at {SHARED} (set TOOLS_SHARED_DIR to the folder that holds conformance/).", file=sys.stderr)
        return 2
    if not cmark_available():
        print("cmarkgfm is not installed (pip install -e '.[dev]'): the examples github.com renders otherwise cannot be checked.", file=sys.stderr)
        return 2
    examples = gfm_examples()
    headings = slugger_headings()
    documents = {example.id: example.markdown for example in examples}
    documents[SLUGGER] = "".join(f"{heading['markdown']}\n\n" for heading in headings)
    rendered = render_book(documents)
    verdicts = [verdict(example, rendered[example.id].html, GITHUB_OUTPUT, DIFFERENCES) for example in examples]
    counts = tally(verdicts)
    suites: dict[str, list[int]] = {}
    for item in verdicts:
        row = suites.setdefault(item.example.suite, [0, 0, 0])
        row[2] += 1
        row[0 if not item.documented else 1] += item.passed
    files: dict[str, list[int]] = {}
    current = ""
    for (file, section), (passed, documented, total) in counts.items():
        totals = files.setdefault(file, [0, 0, 0])
        totals[0] += passed
        totals[1] += documented
        totals[2] += total
        if not args.files:
            if file != current:
                print(f"gfm/{file}")
                current = file
            print(_row(section, passed, documented, total))
    anchors = rendered[SLUGGER].anchors
    slugs = sum(1 for heading, anchor in zip(headings, anchors) if heading["expected"] == anchor)
    print("\nPer file:")
    for file, (passed, documented, total) in files.items():
        print(_row(f"gfm/{file}", passed, documented, total))
    print(_row("github-slugger/headings.json", slugs, 0, len(headings)))
    print("\nPer suite:")
    names = {"core": "CommonMark core (spec.txt)", "extensions": "GFM extensions (spec.txt's extension sections, extensions.txt)", "regression": "cmark-gfm regressions (regression.txt)"}
    for suite in ("core", "extensions", "regression"):
        passed, documented, total = suites.get(suite, [0, 0, 0])
        print(_row(names[suite], passed, documented, total))
    print(_row("github-slugger anchors", slugs, 0, len(headings)))
    failing = [item.example.id for item in verdicts if not item.passed]
    if failing:
        print(f"\nNot as on GitHub: {', '.join(failing)}")
        for name in failing:
            if name in KNOWN_BUGS:
                print(f"  {name}: a known bug: {KNOWN_BUGS[name]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
