"""Local link checks over the resolved model: every finding located at `file:line:col` with a suggestion."""
from __future__ import annotations

import posixpath

from tools.book.link_model import Link, LinkKind, Problem, TargetKind
from tools.book.model import Book
from tools.book.redirects import problems
from tools.core.errors import Diagnostics


def _suggest_anchor(wanted: str, anchors) -> str:
    import difflib  # only for a broken link: a clean book does not import it

    anchors = list(anchors)
    lowered = {a.lower(): a for a in anchors}
    if wanted.lower() in lowered:
        return f"Did you mean '#{lowered[wanted.lower()]}'? Anchors are case-sensitive."
    close = difflib.get_close_matches(wanted, anchors, n=1, cutoff=0.6)
    if not close and len(wanted) >= 3:
        close = [a for a in anchors if a.startswith(wanted.lower())][:1]
    return f"Did you mean '#{close[0]}'?" if close else ""


def _close_file(book: Book, wanted: str) -> str:
    import difflib

    suffix = posixpath.splitext(wanted)[1].lower()
    same_kind = sorted(f for f in book.index.files if posixpath.splitext(f)[1].lower() == suffix)
    close = difflib.get_close_matches(wanted, same_kind, n=1, cutoff=0.7)
    if not close and not suffix and wanted + ".md" in book.index.files:  # `./chapter#section`: the `.md` left out
        return wanted + ".md"
    return close[0] if close else ""


def _suggest_file(book: Book, link: Link) -> str:
    """A file of the book with a name close to the missing one; else, when the link's fragment is an anchor of the
    file that holds the link (`./this-chapter#section`, `missing.md#section` written in the chapter that has
    `## Section`), that anchor alone; else, for a path that starts with `www.`, the web address it looks like."""
    target = link.target
    wanted = target.path if target else ""
    close = _close_file(book, wanted)
    relative = posixpath.relpath(close, posixpath.dirname(book.index.logical(link.source)) or ".") if close else ""
    fragment = target.fragment if target else ""
    if fragment:
        own = book.by_path.get(link.source)
        here = own is not None and fragment in own.anchors
        if here and book.index.real(close) in ("", link.source):
            return f"Did you mean '#{fragment}'? It is an anchor of this file."
        chapter = book.by_path.get(book.index.real(close)) if close else None
        if chapter is not None and fragment in chapter.anchors:
            return f"Did you mean '{relative}#{fragment}'?"
        if here:
            return f"Did you mean '#{fragment}'? It is an anchor of this file."
    if relative:
        return f"Did you mean '{relative}'?"
    if wanted[:4].lower() == "www." and link.kind is not LinkKind.IMAGE:
        return f"Did you mean 'https://{link.href}'? Without a scheme, GitHub reads it as a file of the book."
    return ""


def check_link(book: Book, link: Link, diagnostics: Diagnostics) -> None:
    target = link.target
    if target is None:
        return
    where = dict(col=link.col)
    shown = link.raw or link.href
    noun = "image" if link.kind.is_image else "link"
    if target.kind is TargetKind.BROKEN:
        if target.problem is Problem.MISSING_FILE:
            message = f"the {noun} '{shown}' points at a file that does not exist ({target.path})."
            code = "missing-image" if link.kind.is_image else "missing-file"
            diagnostics.error(link.source, link.line, message, suggestion=_suggest_file(book, link), code=code, **where)
        elif target.problem is Problem.EMPTY:
            diagnostics.error(link.source, link.line, f"the {noun} has an empty destination.", suggestion="Fill in the target or remove the link.", code="empty-link", **where)
        elif target.problem is Problem.OUTSIDE_ROOT:
            diagnostics.error(link.source, link.line, f"the {noun} '{shown}' leaves the book's root folder; nothing outside it is published.", suggestion="Copy the file into the book or link to it by URL.", code="outside-root", **where)
        elif target.problem is Problem.REFUSED:
            code = "outside-root" if ("outside the book" in target.reason or "leaves the book" in target.reason) else "unsafe-file"
            diagnostics.error(link.source, link.line, (f"the {noun} '{shown}' {target.reason}." if shown == target.path else f"the {noun} '{shown}' points at '{target.path}', which {target.reason}."), suggestion="Copy the file into the book instead of linking to it." if code == "outside-root" else _refused_hint(target.reason), code=code, **where)
        elif target.problem is Problem.NESTED_URL:
            diagnostics.error(link.source, link.line, f"the URL '{shown}' holds other URLs inside it, as if pasted twice.", suggestion="Keep only the intended URL.", code="nested-url", **where)
        return
    if target.kind is TargetKind.EXTERNAL and target.url[:5].lower() == "file:":
        diagnostics.error(link.source, link.line, f"the {noun} '{shown}' is a file: URL, a file on the author's computer that no reader has; it is never read.", suggestion="Put the file in the book and link to it by relative path.", code="file-url", **where)
        return
    if target.kind in (TargetKind.CHAPTER, TargetKind.FRAGMENT) and target.fragment:
        chapter = book.by_path.get(target.path)
        if chapter is not None and target.fragment not in chapter.anchors:
            hint = _suggest_anchor(target.fragment, chapter.anchors)
            diagnostics.error(link.source, link.line, f"the link '{shown}' points at '#{target.fragment}', which is not an anchor of {target.path}.", suggestion=hint, code="missing-anchor", **where)
    elif target.kind is TargetKind.DIRECTORY and target.fragment:
        path_part = link.href.partition("#")[0]
        fixed = f"{path_part.rstrip('/')}/README.md#{target.fragment}"
        diagnostics.error(link.source, link.line, f"the link '{shown}' puts a fragment on a folder; GitHub drops it.", suggestion=f"Link to '{fixed}' instead.", code="directory-fragment", **where)
    elif target.kind is TargetKind.MARKDOWN and link.kind is not LinkKind.IMAGE:
        diagnostics.warning(link.source, link.line, f"the link '{shown}' points at {target.path}, a markdown file that is not in the chapter list; it will not be part of the PDF or EPUB.", suggestion="Add it to the chapter list or link to it by URL.", code="not-a-chapter", **where)


def check_book(book: Book) -> Diagnostics:
    """Every local problem of every link of the book, in book order."""
    diagnostics = Diagnostics()
    diagnostics.extend(book.diagnostics)
    config = book.config
    for chapter in book.chapters:
        for link in chapter.links:
            check_link(book, link, diagnostics)
        if config.checks.image_alt:
            check_alt_text(chapter.path, chapter.images_without_alt, diagnostics)
    shown = config.config_file.name if config.config_file else "book.toml"
    logical = book.index.logical  # a translation's view keeps its chapters at their real paths (`zh/a.md`)
    for key, message, suggestion in problems(config.redirects, map(logical, book.index.files), map(logical, book.by_path)):
        diagnostics.error(shown, config.redirect_lines.get(key, 0), message, suggestion=suggestion, code="redirect")
    return diagnostics


def check_alt_text(path: str, images: list[tuple[int, int, str]], diagnostics: Diagnostics) -> None:
    """`image-alt` (markdownlint's MD045): an image a screen reader can only name by its file. A markdown image with
    empty alt text and a raw `<img>` without an `alt` attribute are warned about; `alt=""` on a raw `<img>` is HTML's
    way to mark a decorative image, and is left alone."""
    for line, col, written in images:
        shown = written if len(written) <= 80 else written[:77] + "..."
        if written.startswith("<"):
            message, fix = f"the image {shown} has no alt attribute, so a screen reader can only read out its file name.", 'Add alt="what it shows" to the tag (alt="" marks a decorative image)'
        else:
            message, fix = f"the image '{shown}' has no alt text, so a screen reader can only read out its file name.", "Write what it shows between the brackets: ![what it shows](...)"
        diagnostics.warning(path, line, message, col=col, suggestion=f"{fix}; `image-alt = false` under [checks] in book.toml turns this check off.", code="image-alt")


def _refused_hint(reason: str) -> str:
    if "translation, which only" in reason:  # tools/book/translations.py: a link from one language into another's folder
        return "Link a chapter at its path in the original (each language's site shows its own version); to reach another language, link its site by URL, as every page's language switcher does."
    return "Point it at a regular file of the book."
