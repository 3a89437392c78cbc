"""The GFM suites' examples rendered by the tool and compared with their reference, one verdict per example.

The reference of an example is the HTML the spec gives, or, for the examples where github.com's parser (cmark-gfm with
GitHub's extensions always on) gives something else, what cmark-gfm gives (`github_output`). Both sides are
normalised (tests/conformance/normalize.py); an example the tool renders differently on purpose is compared after
its documented substitutions (the tool's text -> GitHub's) are made, each of which must apply.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .normalize import normalize
from .render import github_html
from .suites import Example

SLUGGER = "github-slugger"  # the document that holds github-slugger's 78 headings, in order


@dataclass(frozen=True)
class Difference:
    """An example the tool renders differently from GitHub on purpose."""

    reason: str
    substitutions: tuple[tuple[str, str], ...]  # (in the tool's normalised HTML, what GitHub's has instead)


@dataclass(frozen=True)
class Verdict:
    example: Example
    reference: str  # "spec" or "github"
    expected: str
    got: str  # the tool's normalised HTML, after a documented difference's substitutions
    documented: str  # the reason of a documented difference, or ""
    problem: str  # why a documented difference does not apply as written, or ""

    @property
    def passed(self) -> bool:
        return not self.problem and (self.got == self.expected or self.example.html.strip() == "<IGNORE>")

    def message(self) -> str:
        return (f"{self.example.where} differs from {'github.com (cmark-gfm)' if self.reference == 'github' else 'the spec'}"
                f"{' (' + self.problem + ')' if self.problem else ''}\n--- markdown\n{self.example.markdown}"
                f"--- expected\n{self.expected}\n--- the tool\n{self.got}")


def verdict(example: Example, rendered: str, github_output: Iterable[str], differences: Mapping[str, Difference]) -> Verdict:
    use_github = example.id in set(github_output)
    reference = github_html(example.markdown) if use_github else example.html
    expected = normalize(reference, github=True)
    got = normalize(rendered)
    difference = differences.get(example.id)
    problem = ""
    if difference is not None:
        for ours, theirs in difference.substitutions:
            if ours not in got:
                problem = f"the documented difference {ours!r} is not in the tool's output"
                break
            got = got.replace(ours, theirs)
    return Verdict(example, "github" if use_github else "spec", expected, got, difference.reason if difference else "", problem)


def github_differs(example: Example) -> bool:
    """Whether cmark-gfm with GitHub's extensions gives other HTML than the spec (both normalised as github.com
    shows them); an example whose HTML the spec does not give (`<IGNORE>`: it must only not crash) never does."""
    if example.html.strip() == "<IGNORE>":
        return False
    return normalize(github_html(example.markdown), github=True) != normalize(example.html, github=True)


def tally(verdicts: Iterable[Verdict]) -> dict[tuple[str, str], list[int]]:
    """(file, section) -> [passed, documented, total]; documented: passes once its documented difference is made."""
    counts: dict[tuple[str, str], list[int]] = {}
    for item in verdicts:
        row = counts.setdefault((item.example.file, item.example.section), [0, 0, 0])
        row[2] += 1
        if item.passed and not item.documented:
            row[0] += 1
        elif item.passed:
            row[1] += 1
    return counts
