"""One document for the whole book (the PDF's source): ids prefixed per chapter, every chapter link internal."""
from __future__ import annotations

import html as html_lib
import re
from collections.abc import Callable, Mapping

from markupsafe import Markup

from tools.book.collect import ELEMENT_DEPTH
from tools.book.interface_text import interface_text
from tools.book.link_model import Link, TargetKind
from tools.book.model import Book, Chapter, repository_config
from tools.book.parts import grouped, part_of
from tools.book.translations import chapter_language
from tools.core.atomic import build_time
from tools.core.errors import Diagnostics
from tools.core.git import revision
from tools.markdown.parser import create_markdown
from tools.render.alerts import print_icons_css
from tools.render.html import LinkPolicy, render_chapter_html
from tools.render.pages import unique_names
from tools.render.policy import inside_root, normalized_link, remote_image
from tools.render.templates import asset_text, environment


def chapter_prefix(path: str) -> str:
    """`network/benchmarks/README.md` -> `network-benchmarks-readme`: a valid id without `--`, so that an anchor id
    `prefix--anchor` names one chapter; `SingleDocumentPolicy` makes it unique (`a/b.md` and `a-b.md`)."""
    stem = re.sub(r"\.(md|markdown)$", "", path, flags=re.IGNORECASE).lower()
    return re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9_-]+", "-", stem)).strip("-") or "chapter"


def prefixed_id(prefix: str, anchor: str) -> str:
    """An anchor's id in the print document: its chapter's prefix, `--`, the anchor."""
    return f"{prefix}--{anchor}"


PRINT_IDS = ("cover", "cover-image", "contents")  # ids of print.html's own sections


class SingleDocumentPolicy:
    """Links between chapters become `#prefix--anchor`; files link to the repository; images stay local files."""

    def __init__(self, book: Book, diagnostics: Diagnostics):
        self.book = book
        self.diagnostics = diagnostics
        self.config = repository_config(book)
        self.part_ids = {part.line: f"part-{number}" for number, part in enumerate(book.parts, 1)}  # a part's page
        self.part_of = part_of(book.parts)
        self.prefixes = unique_names([(chapter.path, chapter_prefix(chapter.path)) for chapter in book.chapters], PRINT_IDS + tuple(self.part_ids.values()))

    def anchor_id(self, chapter_path: str, anchor: str) -> str:
        return prefixed_id(self.prefixes[chapter_path], anchor)

    def _chapter_url(self, path: str, fragment: str) -> str:
        if fragment and fragment not in self.book.by_path[path].anchors:
            fragment = ""  # the checks report the missing anchor; the link still opens the chapter
        return "#" + (self.anchor_id(path, fragment) if fragment else self.prefixes[path])

    def url_for(self, link: Link) -> str | None:
        target = link.target
        if target is not None and target.kind is TargetKind.EXTERNAL and link.kind.is_image:
            remote_image(link, self.diagnostics)
            return None
        if target is None or target.kind in (TargetKind.EXTERNAL, TargetKind.BROKEN):
            return normalized_link(target.url or link.href) if target is not None and target.kind is TargetKind.EXTERNAL else None
        if target.kind is TargetKind.FRAGMENT:
            return self._chapter_url(link.source, target.fragment)
        if target.kind is TargetKind.CHAPTER:
            return self._chapter_url(target.path, target.fragment)
        if target.kind is TargetKind.DIRECTORY and target.readme in self.book.by_path:
            return self._chapter_url(target.readme, target.fragment)
        if link.kind.is_image:  # drawn into the page from the book's folder; a text link to an image goes online
            return target.path if target.kind is TargetKind.FILE and inside_root(self.book.root, target.path) else None
        is_dir = target.kind is TargetKind.DIRECTORY and not target.readme
        url = self.config.blob_url(target.readme or target.path, is_dir=is_dir)
        if url and target.fragment and not is_dir:
            url += f"#{target.fragment}"  # e.g. a line of a script: `tool.py#L10`
        return url or None  # no repository configured: the text stays, without a dead link


# How many characters of code fit on one printed line (tools/render/theme/print.css: A4, 18 mm side margins, 8.2 pt mono).
PRINT_CODE_COLUMNS = 92
_CODE_BLOCK = re.compile(r'(<pre class="highlight"[^>]*><code>)(.*?)(</code></pre>)', re.DOTALL)
_TAG = re.compile(r"<[^>]+>")


def _wrappable_code(html: str) -> str:
    """Code blocks with a line too long for the page lose their highlighting spans in print.

    WeasyPrint wraps each inline box on its own: a highlighted token that does not fit at the end of a line is cut
    in the middle ('o' / 'ption_007') even where a space came just before it. A block of plain text wraps at its
    spaces and cuts only a word longer than a whole line, so long code stays readable (and copyable).
    """
    def plain(match: re.Match) -> str:
        text = _TAG.sub("", match.group(2))
        if max((len(html_lib.unescape(line)) for line in text.split("\n")), default=0) <= PRINT_CODE_COLUMNS:
            return match.group(0)
        return match.group(1) + text + match.group(3)

    return _CODE_BLOCK.sub(plain, html)


LONG_WORD = 60  # a word longer than this may break anywhere, every WORD_PIECE characters
WORD_PIECE = 30
_RAW_TEXT = re.compile(r"<(style|script)\b", re.IGNORECASE)  # elements whose text is code, not words
_CLOSE = {"style": re.compile(r"</style", re.IGNORECASE), "script": re.compile(r"</script", re.IGNORECASE)}
_LONG = re.compile(rf"[^\s<>]{{{LONG_WORD},}}")
_CHARACTER = re.compile(r"&#?\w+;|.", re.DOTALL)  # an entity is one character


def _pieces(word: re.Match) -> str:
    characters = _CHARACTER.findall(word.group(0))
    return "<wbr>".join("".join(characters[i : i + WORD_PIECE]) for i in range(0, len(characters), WORD_PIECE))


def breakable_words(html: str) -> str:
    """Give every very long word (a hash, a URL, a 100,000-letter line) a break opportunity every few characters.

    WeasyPrint looks for where to cut a word longer than the line by laying it out again and again, which takes
    minutes for a 100,000-character word; with `<wbr>` every 30 characters it lays out pieces, in linear time.
    Only text is touched: tags, attributes, comments, styles and scripts stay as they are."""
    if not _LONG.search(html):
        return html
    ahead: dict[str, int] = {}  # the next place of each needle: positions only grow, so each search is done once

    def next_of(needle: str, start: int) -> int:
        found = ahead.get(needle)
        if found is None or -1 < found < start:
            pattern = _CLOSE.get(needle)
            if pattern is not None:
                match = pattern.search(html, start)
                found = match.start() if match else -1
            else:
                found = html.find(needle, start)
            ahead[needle] = found
        return found

    out, position, size = [], 0, len(html)
    while position < size:
        tag = next_of("<", position)
        if tag != position:  # text up to the next tag
            stop = size if tag < 0 else tag
            out.append(_LONG.sub(_pieces, html[position:stop]))
            position = stop
            continue
        if html.startswith("<!--", position):
            end = next_of("-->", position + 4)
            stop = size if end < 0 else end + 3
        else:
            end = next_of(">", position)
            stop = size if end < 0 else end + 1
            raw = _RAW_TEXT.match(html, position)
            if raw and end >= 0:  # a style or script: its text stays as it is, up to its end tag
                close = next_of(raw.group(1).lower(), stop)
                stop = size if close < 0 else close
        out.append(html[position:stop])
        position = stop
    return "".join(out)


def print_title(title: str) -> str:
    """A title for running headers and bookmarks: a page's margin cannot show a title of thousands of characters."""
    return title if len(title) <= 200 else title[:199] + "…"


def render_chapter(md, book: Book, chapter: Chapter, policy: SingleDocumentPolicy) -> str:
    """The chapter's HTML in the print document (its tokens asked of the chapter)."""
    return chapter_print_html(md, chapter, chapter.tokens, policy.url_for, policy.prefixes[chapter.path])


def chapter_print_html(md, chapter: Chapter, tokens: list, url_for: Callable[[Link], str | None], prefix: str) -> str:
    """The chapter's HTML in the print document, from its tokens: links get `url_for`, ids the chapter's `prefix`."""
    link_policy = LinkPolicy(url_for=url_for, id_for=lambda anchor: prefixed_id(prefix, anchor), permalinks=False, max_depth=ELEMENT_DEPTH, print_style=True, dark_images=False, math_svg=True, checkbox_glyphs=True)
    env = dict(chapter.env, docId=prefix)
    return breakable_words(_wrappable_code(render_chapter_html(md, tokens, chapter.links, link_policy, env, chapter.drawings)))



def chapter_entry(chapter: Chapter, policy: SingleDocumentPolicy, html: str) -> dict:
    """What the print template knows of a chapter: its id, title, rendered body and the headings of its contents; the
    part it opens (its title page comes before the chapter), and whether it is in a part (its bookmarks one deeper)."""
    part = policy.part_of.get(chapter.path)
    return {
        "path": chapter.path,
        "part": {"id": policy.part_ids[part.line], "title": print_title(part.title)} if part is not None and part.first == chapter.path else None,
        "in_part": part is not None,
        "id": policy.prefixes[chapter.path],
        "title": print_title(chapter.title),
        "language": chapter_language(policy.book, chapter),
        "html": Markup(html),
        "notice": interface_text(policy.book.config.language)["not_translated"] if chapter.fallback else "",
        "sections": [{"id": policy.anchor_id(chapter.path, h.anchor), "text": h.text, "level": h.level} for h in chapter.headings if h.level in (2, 3)],
    }


def print_variables(book: Book, chapters: list[dict]) -> dict:
    """Everything the print template reads besides the chapters' bodies: title, metadata, cover, build time, styles."""
    cover = book.config.cover if book.config.cover and inside_root(book.root, book.config.cover) else ""
    now = build_time()
    return {
        "title": book.title,
        "authors": ", ".join(book.config.authors),
        "description": book.config.description,
        "subject": book.config.subject or book.config.description,
        "language": book.config.language,
        "ui": interface_text(book.config.language),
        "date": now.strftime("%Y-%m-%d"),
        "timestamp": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "revision": revision(book.root),
        "cover": cover,
        "chapters": chapters,
        "groups": [{"part": entries[0]["part"] if part is not None else None, "chapters": entries}
                   for part, entries in grouped(chapters, book.parts, path_of=lambda entry: entry["path"])],
        "stylesheet": Markup(asset_text("print.css") + print_icons_css()),
    }


def print_document(book: Book, diagnostics: Diagnostics, template: str = "print.html",
                   chapter_html: Mapping[str, str] | None = None) -> str:
    """The whole book as one HTML document: cover, table of contents, then every chapter on its own page.

    `chapter_html` maps a chapter's path to its body as `render_chapter` returns it (rendered elsewhere, e.g. while
    the chapter's tokens were at hand); a chapter it lacks is rendered here."""
    md = create_markdown()
    policy = SingleDocumentPolicy(book, diagnostics)
    given = chapter_html or {}
    chapters = [chapter_entry(chapter, policy, given[chapter.path] if chapter.path in given else render_chapter(md, book, chapter, policy))
                for chapter in book.chapters]
    return environment().get_template(template).render(print_variables(book, chapters))
