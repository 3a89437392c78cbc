"""Parts of the book, declared in the chapter list: a line `Part: Title` opens a part, which holds the chapters
listed after it up to the next part. Lines starting with `#` stay comments; before the first part, chapters belong
to no part. Every chapter list (the book's, a translation's) is read through `ChapterEntries`, and `tools mv` asks
`is_chapter_line` which lines are paths, so the list has one syntax."""
from __future__ import annotations

from dataclasses import dataclass, field

from tools.book.config_check import bad_character
from tools.core.errors import Diagnostics

PART_PREFIX = "part:"  # compared case-insensitively; a chapter path starting so is written `./Part:...`
MAX_TITLE = 200  # a part title is a heading, a bookmark and a navigation entry: one line


@dataclass
class Part:
    title: str
    line: int  # its line in the chapter list
    chapters: list[str] = field(default_factory=list)  # the paths of its chapters, in order

    @property
    def first(self) -> str:
        return self.chapters[0]


def part_title(entry: str) -> str | None:
    """The title of a part line (`Part: Compute`, stripped), or None when the stripped line is not one."""
    if entry[: len(PART_PREFIX)].lower() != PART_PREFIX:
        return None
    return entry[len(PART_PREFIX):].strip()


def is_chapter_line(entry: str) -> bool:
    """Whether a stripped line of the chapter list names a chapter (not blank, not a comment, not a part)."""
    return bool(entry) and not entry.startswith("#") and part_title(entry) is None


class ChapterEntries(list):
    """(path, line in the list) of every chapter in order, as a list, and the `parts` they belong to. The reader of
    a chapter list hands each line to `skip` first, then appends the chapters it accepts, then calls `finish`."""

    def __init__(self, list_name: str, diagnostics: Diagnostics):
        super().__init__()
        self.list_name = list_name
        self.diagnostics = diagnostics
        self.parts: list[Part] = []
        self._open: Part | None = None  # the part being read; None before the first one or after a bad part line
        self._titles: dict[str, int] = {}
        self._lines = 0  # chapter lines read since the open part began, accepted or not

    def skip(self, entry: str, number: int) -> bool:
        """True for a line that names no chapter: blank, a comment, or a part line (which opens a part)."""
        if not is_chapter_line(entry):
            title = part_title(entry)
            if title is not None:
                self._start(title, number)
            return True
        self._lines += 1
        return False

    def _start(self, title: str, number: int) -> None:
        self._close()
        problem = ""
        if not title:
            problem = "the part line names no title."
        elif bad_character(title):
            problem = f"the part title {title!r} holds a control or invisible character."
        elif len(title) > MAX_TITLE:
            problem = f"the part title is {len(title)} characters long; at most {MAX_TITLE} fit a heading and a bookmark."
        if problem:
            self.diagnostics.error(self.list_name, number, problem, suggestion="Write the part as 'Part: Title', e.g. 'Part: Compute'.", code="bad-part")
            self._open = None  # its chapters go to no part rather than to the part before
            return
        if title.casefold() in self._titles:
            self.diagnostics.warning(self.list_name, number, f"the part '{title}' is declared twice (first on line {self._titles[title.casefold()]}).",
                                     suggestion="Give each part its own title, or merge the two.", code="duplicate-part")
        self._titles.setdefault(title.casefold(), number)
        self._open, self._lines = Part(title, number), 0

    def append(self, item: tuple[str, int]) -> None:
        super().append(item)
        if self._open is not None:
            self._open.chapters.append(item[0])

    def _close(self) -> None:
        part, self._open = self._open, None
        if part is None:
            return
        if part.chapters:
            self.parts.append(part)
        elif not self._lines:  # lines that were all refused have been reported each at its line
            self.diagnostics.error(self.list_name, part.line, f"the part '{part.title}' holds no chapter.",
                                   suggestion="List its chapters on the lines after it, or remove the part line.", code="empty-part")

    def finish(self) -> ChapterEntries:
        self._close()
        return self


def part_of(parts: list[Part]) -> dict[str, Part]:
    """Each chapter path that belongs to a part -> its part."""
    return {path: part for part in parts for path in part.chapters}


def grouped(items: list, parts: list[Part], path_of=lambda item: item.path) -> list[tuple[Part | None, list]]:
    """`items` (chapters, or what stands for them, in book order) in runs of the same part: (part or None, items).
    Chapters before the first part form a run without a part."""
    owner = part_of(parts)
    runs: list[tuple[Part | None, list]] = []
    for item in items:
        part = owner.get(path_of(item))
        if not runs or runs[-1][0] is not part:
            runs.append((part, []))
        runs[-1][1].append(item)
    return runs
