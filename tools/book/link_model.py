"""Links and the targets they resolve to."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class LinkKind(str, Enum):
    INLINE = "link"
    REFERENCE = "reference definition"
    IMAGE = "image"
    AUTOLINK = "autolink"
    HTML_HREF = "html href"
    HTML_SRC = "html src"

    @property
    def is_image(self) -> bool:
        return self in (LinkKind.IMAGE, LinkKind.HTML_SRC)


class TargetKind(str, Enum):
    CHAPTER = "chapter"  # a markdown file in the chapter list (with an optional fragment)
    FRAGMENT = "fragment"  # `#anchor` in the same file
    MARKDOWN = "markdown"  # a markdown file that is not a chapter
    FILE = "file"  # any other file of the book: script, image, data
    DIRECTORY = "directory"
    EXTERNAL = "external"  # has a scheme (https:, mailto:) or is protocol-relative
    BROKEN = "broken"  # cannot be resolved; `reason` says why


class Problem(str, Enum):
    """Why a target is broken; also the stable codes in reports."""

    EMPTY = "empty-link"
    MISSING_FILE = "missing-file"
    OUTSIDE_ROOT = "outside-root"
    NESTED_URL = "nested-url"
    REFUSED = "unsafe-file"  # a link out of the root, a FIFO, a socket, a device, a loop: never read


@dataclass(frozen=True)
class Target:
    kind: TargetKind
    path: str = ""  # relative to the book root, posix, for local targets
    fragment: str = ""  # percent-decoded, without '#'
    url: str = ""  # for external targets
    problem: Problem | None = None
    reason: str = ""  # a sentence, for broken targets
    readme: str = ""  # for directories: the README inside, if any

    @property
    def is_local(self) -> bool:
        return self.kind not in (TargetKind.EXTERNAL, TargetKind.BROKEN)


@dataclass
class Link:
    """One link as written in one chapter."""

    source: str  # the chapter, relative to the book root
    line: int  # 1-based line of the destination
    col: int  # 1-based column of the destination (0 when unknown)
    kind: LinkKind
    href: str  # the destination as markdown understands it (unescaped, not yet percent-decoded)
    raw: str = ""  # the exact source text of the destination, as written
    offset: int | None = None  # where `raw` starts in the chapter's text; None when it could not be located
    title: str = ""
    target: Target | None = None
    tokens: list = field(default_factory=list, repr=False)  # the markdown-it tokens that render this link
    media_theme: str = ""  # "dark"/"light": a `<picture>` source's colour scheme (`media`, tools/markdown/html_attrs.py)

    @property
    def theme(self) -> str | None:
        """'dark' or 'light' for an image GitHub shows in one colour theme only (a `#gh-dark-mode-only` fragment,
        or a `<source media="(prefers-color-scheme: dark)">`), else None."""
        return (self.media_theme or theme_variant(self.href)) if self.kind.is_image else None

    @property
    def location(self) -> str:
        return f"{self.source}:{self.line}:{self.col}" if self.col else f"{self.source}:{self.line}"


class Status(str, Enum):
    """What checking an external URL found; also the stable codes in reports and in the cache."""

    OK = "ok"
    REDIRECTED = "redirected"  # works, but through HTTP 3xx or a meta refresh; the result names the final URL
    BROKEN = "broken"  # the server says it does not exist (404, 410, other 4xx), or the host is unknown
    FORBIDDEN = "forbidden"  # 401/403: often a wall for robots, not a broken link
    FAILED = "failed"  # could not be checked: timeout, 5xx or 429 after every retry, connection error
    EXCLUDED = "excluded"  # matched an exclusion pattern of book.toml or --exclude
    SKIPPED = "skipped"  # a scheme that is not fetched (mailto:, ftp:, ...)


def theme_variant(href: str) -> str | None:
    """'dark' or 'light' for an image GitHub shows in one colour theme only (`x.png#gh-dark-mode-only`), else None."""
    fragment = href.rpartition("#")[2].strip().lower() if "#" in href else ""
    return {"gh-dark-mode-only": "dark", "gh-light-mode-only": "light"}.get(fragment)
