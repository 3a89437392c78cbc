"""`image-alt` (issue 35, item 4): an image a screen reader could only name by its file is a warning at file:line:col
in `build` and `check-links`, as markdownlint's MD045 has it; `alt=""` on a raw `<img>` marks a decorative image and
is left alone; `[checks] image-alt = false` in book.toml turns the check off."""
from __future__ import annotations

import json
import re
from html.parser import HTMLParser

from hypothesis import given, strategies as st

from conftest import run_tools, write_book
from tools.markdown.html_attrs import has_attribute

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000" "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")
CHAPTER = """# Images

![](chart.png) is bare, ![A bar chart of the results](chart.png) is described, ![  ][chart] is blank.

<img src="chart.png">
<img src="chart.png" alt="">
<img alt="A bar chart" src="chart.png">

Inline <img src="chart.png" width="20"> here.

> ![](chart.png)

[chart]: chart.png
"""
EXPECTED = [("one.md", 3, 1, "'![](chart.png)'"), ("one.md", 3, 80, "'![  ][chart]'"), ("one.md", 5, 1, '<img src="chart.png">'),
            ("one.md", 9, 8, '<img src="chart.png" width="20">'), ("one.md", 11, 3, "'![](chart.png)'")]


def _book(tmp_path, toml: str = ""):
    files: dict[str, str | bytes] = {"one.md": CHAPTER, "chart.png": PNG}
    if toml:
        files["book.toml"] = toml
    return write_book(tmp_path / "book", files)


def _warnings(output: str) -> list[tuple[str, int, int, str]]:
    found = []
    for line in output.splitlines():
        match = re.match(r"(\S+?):(\d+):(\d+): warning: the image (.+?) has no alt (?:text|attribute), so a screen reader", line)
        if match:
            found.append((match.group(1), int(match.group(2)), int(match.group(3)), match.group(4)))
    return found


def test_check_links_warns_at_each_image_without_alt_text(tmp_path):
    root = _book(tmp_path)
    result = run_tools(root, "check-links", "--book", ".")
    assert result.returncode == 0, result.stdout + result.stderr  # warnings only
    assert _warnings(result.stdout + result.stderr) == EXPECTED, result.stdout + result.stderr
    assert "0 errors, 5 warnings" in result.stdout + result.stderr
    assert "`image-alt = false` under [checks] in book.toml turns this check off" in result.stdout
    strict = run_tools(root, "check-links", "--book", ".", "--strict")
    assert strict.returncode == 1, strict.stdout + strict.stderr


def test_the_warning_has_its_code_in_every_report_format(tmp_path):
    root = _book(tmp_path)
    report = json.loads(run_tools(root, "check-links", "--book", ".", "--format", "json").stdout)
    codes = [finding.get("code") for finding in report["findings"]]
    assert codes.count("image-alt") == 5, report
    github = run_tools(root, "check-links", "--book", ".", "--format", "github").stdout
    assert len(re.findall(r"^::warning file=one\.md,line=\d+,col=\d+.*image-alt", github, re.M)) == 5, github


def test_build_warns_once_per_image_and_every_format_counts_it(tmp_path):
    root = _book(tmp_path)
    result = run_tools(tmp_path, "build", "all", "--book", str(root), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert _warnings(result.stderr) == [("one.md", *rest) for _, *rest in EXPECTED], result.stderr
    assert len(re.findall(r"^Built \w+: .* 0 errors, 5 warnings", result.stdout, re.M)) == 3, result.stdout


def test_the_check_can_be_turned_off_in_book_toml(tmp_path):
    root = _book(tmp_path, '[book]\ntitle = "Pictures"\n\n[checks]\nimage-alt = false\n')
    result = run_tools(root, "check-links", "--book", ".", "--strict")
    assert result.returncode == 0 and "image-alt" not in result.stdout + result.stderr, result.stdout + result.stderr
    built = run_tools(tmp_path, "build", "html", "--book", str(root), "--out", str(tmp_path / "site"), "--strict")
    assert built.returncode == 0 and "0 errors, 0 warnings" in built.stdout, built.stdout + built.stderr


def test_a_wrong_switch_is_a_configuration_error_at_its_line(tmp_path):
    root = _book(tmp_path, '[book]\ntitle = "Pictures"\n\n[checks]\nimage-alt = "no"\n')
    result = run_tools(root, "check-links", "--book", ".")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "book.toml:5: 'image-alt' must be true or false (without quotes), not 'no', e.g. image-alt = false." in result.stderr, result.stderr
    unknown = _book(tmp_path / "other", '[checks]\nalt-text = false\n')
    result = run_tools(unknown, "check-links", "--book", ".")
    assert result.returncode == 2 and "book.toml:2: unknown key 'alt-text' in [checks]; known keys are: image-alt." in result.stderr, result.stderr


def test_our_book_has_alt_text_on_every_image(tmp_path):
    from conftest import REPO

    result = run_tools(tmp_path, "check-links", "--book", str(REPO / "chapters"))
    assert "image-alt" not in result.stdout + result.stderr and "has no alt" not in result.stderr, result.stderr


class _Attributes(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def handle_starttag(self, tag, attrs):
        if not self.names:
            self.names = [name for name, _ in attrs] or [""]


NAMES = st.sampled_from(["src", "alt", "width", "title", "data-alt", "altx", "ALT"])
VALUES = st.one_of(st.none(), st.text(alphabet=st.characters(blacklist_characters="\"'<>&\x00", blacklist_categories=("Cs",)), max_size=8))


@given(st.lists(st.tuples(NAMES, VALUES), max_size=5), st.sampled_from([" ", "\n", "  "]))
def test_has_attribute_agrees_with_the_html_parser(attrs, blank):
    tag = "<img" + "".join(f"{blank}{name}" if value is None else f'{blank}{name}="{value}"' for name, value in attrs) + ">"
    parser = _Attributes()
    parser.feed(tag)
    assert has_attribute(tag, "alt") == ("alt" in parser.names), tag


@given(st.text(max_size=60))
def test_has_attribute_takes_any_text(text):
    assert has_attribute(text, "alt") in (True, False)
