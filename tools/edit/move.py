"""Moving a file or folder of the book and rewriting the links that the move would break.

The plan is made from the book model: every markdown file is parsed by the one parser, every link is resolved by
`resolve` as the book was before the move, and each link that the move affects gets a new destination written
over its recorded span (`Link.offset`, `Link.raw`). Nothing else in a file changes: fragments, queries, titles,
angle brackets, `./` prefixes, trailing slashes, percent-encoding and backslash escapes of unchanged path segments
are kept, code is never a link in the model so it is never touched, and external links are left alone.

A destination is rewritten when the move breaks it, or when it was written in the canonical form (the shortest
relative path, in the link's own style), which is then kept canonical. This makes `mv A B` followed by `mv B A`
give back every byte: canonical links are a function of the layout, and the others are only touched when broken.
"""
from __future__ import annotations

import difflib
import html
import os  # noqa: F401 - tests patch os.replace through this module
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

from markdown_it.common.utils import unescapeAll

from tools.book.chapter_list import read_chapter_list
from tools.book.config import BookConfig, load_config
from tools.book.files import scan_files
from tools.book.link_model import Link, LinkKind, TargetKind
from tools.book.load import parse_chapter
from tools.book.parts import is_chapter_line
from tools.book.resolve import MARKDOWN_SUFFIXES, FileIndex, resolve
from tools.core.errors import BookError, Diagnostics
from tools.core.git import repository_prefix
from tools.core.safe_io import CHAPTER_LIMIT, CONFIG_LIMIT, UnsafeFile, read_bytes
from tools.edit.move_paths import MoveError, check_move_paths, relative_to_root, translation_notes
from tools.edit.move_redirects import plan_redirects
from tools.edit.move_style import LinkStyle, decode_segment, encode_segment, split_raw
from tools.edit.move_write import apply_move, write_changes  # noqa: F401 - re-exported for the command and the tests


def under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")


def remap(path: str, src: str, dst: str) -> str:
    """Where `path` (relative to the root) is after moving `src` to `dst`."""
    if path == src:
        return dst
    if path.startswith(src + "/"):
        return dst + path[len(src) :]
    return path


def ancestors(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


@dataclass
class Edit:
    file: str  # the file's path after the move
    line: int
    col: int
    offset: int
    old: str
    new: str


@dataclass
class FileChange:
    old_path: str
    new_path: str
    before: str  # the text as read
    after: str
    bom: bool = False
    edits: list[Edit] = field(default_factory=list)


@dataclass
class MovePlan:
    root: Path
    src: str
    dst: str
    is_dir: bool
    moved_files: list[tuple[str, str]]
    changes: dict[str, FileChange]  # by the file's old path
    chapter_list: FileChange | None
    notes: list[str] = field(default_factory=list)
    config_change: FileChange | None = None  # book.toml's [redirects] table

    @property
    def edits(self) -> list[Edit]:
        return [edit for change in self.changes.values() for edit in change.edits]

    @property
    def files(self) -> list[FileChange]:
        """Every file the plan rewrites: the link changes, then the chapter list and book.toml."""
        return list(self.changes.values()) + [change for change in (self.chapter_list, self.config_change) if change]

    def diff(self) -> str:
        """What the move does, as a unified diff (renames named in its header)."""
        out = [f"# move {self.src}{'/' if self.is_dir else ''} -> {self.dst}{'/' if self.is_dir else ''} ({len(self.moved_files)} file{'s' if len(self.moved_files) != 1 else ''})\n"]
        for change in sorted(self.files, key=lambda c: c.new_path):
            out.extend(difflib.unified_diff(
                change.before.splitlines(keepends=True), change.after.splitlines(keepends=True),
                fromfile=f"a/{change.old_path}", tofile=f"b/{change.new_path}",
            ))
            if out and not out[-1].endswith("\n"):
                out[-1] += "\n\\ No newline at end of file\n"
        return "".join(out)


def _is_destination(text: str, link: Link) -> bool:
    """A guard before writing over a span: it must sit where its kind of destination sits (after `(` for inline
    links and images, after `]:` for definitions, inside an attribute for raw HTML), never over other text."""
    if link.offset is None:
        return False
    before = text[: link.offset].rstrip(" \t\r\n")
    if link.kind in (LinkKind.INLINE, LinkKind.IMAGE):
        return before.endswith("(")
    if link.kind is LinkKind.REFERENCE:
        return before.endswith(":")
    if link.kind in (LinkKind.HTML_HREF, LinkKind.HTML_SRC):
        if text[: link.offset].rstrip("\"'").rstrip(" \t").endswith("="):
            return True
        head = text[max(0, link.offset - 4096) : link.offset]  # a later candidate of a srcset: "a.png 1x, b.png 2x"
        return link.kind is LinkKind.HTML_SRC and head[-1:] in (" ", ",", "\t", "\n") and bool(_SRCSET_OPEN.search(head))
    return False


_SRCSET_OPEN = re.compile(r"""\bsrcset\s*=\s*["']?[^"'<>]*$""", re.IGNORECASE)


class _Layout:
    """The files of the book before and after the move, and the index of each."""

    def __init__(self, config: BookConfig, src: str, dst: str, moved: bool) -> None:
        output = (config.root / config.output) if config.output else None
        files, dirs = scan_files(config.root, output)
        self.src, self.dst, self.moved = src, dst, moved
        if moved:
            back = lambda p: remap(p, dst, src)  # noqa: E731
            self.old_files = {back(f) for f in files}
            self.old_dirs = {back(d) for d in dirs} | set(ancestors(src))
            if any(under(d, src) for d in dirs if not under(d, dst)) or any(under(f, src) for f in files if not under(f, dst)):
                raise MoveError(f"'{src}' still exists; after a move only '{dst}' should. Did you mean `tools mv`?")
        else:
            self.old_files, self.old_dirs = set(files), set(dirs)
        self.is_dir = src in self.old_dirs
        if src not in self.old_files and not self.is_dir:
            where = dst if moved else src
            raise MoveError(f"'{where}' is not a file or folder of the book.")
        self.new_files = {remap(f, src, dst) for f in self.old_files}
        old_parents = {a for f in self.old_files for a in ancestors(f)}
        new_parents = {a for f in self.new_files for a in ancestors(f)} | set(ancestors(dst))
        self.new_dirs = {remap(d, src, dst) for d in self.old_dirs if under(d, src)}
        self.new_dirs |= {d for d in self.old_dirs if not under(d, src) and (d in new_parents or d not in old_parents)}
        self.new_dirs |= set(ancestors(dst)) | ({dst} if self.is_dir else set())

    def read_path(self, old_path: str) -> str:
        """Where the file that was at `old_path` is now on disk."""
        return remap(old_path, self.src, self.dst) if self.moved else old_path


def _with_own_line_ends(data: bytes, text: str, after: str, shown: str) -> tuple[str, str]:
    """(before, after) as the file writes them: the parser may see CRLF line ends as LF; they are written back as
    they were, so a move changes only the link destinations."""
    raw = data.decode("utf-8-sig", errors="replace")
    if raw == text:
        return text, after
    if "\r" in raw and raw.replace("\r\n", "\n") == text and "\r" not in text:
        return raw, after.replace("\n", "\r\n")
    raise MoveError(f"{shown}: its line ends are mixed (CRLF and LF), so its links cannot be rewritten without changing other lines; make them uniform first. Nothing was changed.")


class _Planner:
    def __init__(self, config: BookConfig, layout: _Layout, cache=None) -> None:
        self.config = config
        self.layout = layout
        self.cache = cache
        self.prefix = (config.repository_path if config.repository_path is not None else repository_prefix(config.root)).strip("/")
        diagnostics = Diagnostics()
        try:
            entries = read_chapter_list(config, layout.old_files, diagnostics) if config.chapters else []
        except BookError:
            entries = []
        self.chapters = {path: line for path, line in entries}
        self.old_index = FileIndex(frozenset(layout.old_files), frozenset(layout.old_dirs), frozenset(self.chapters), self.prefix)
        new_chapters = frozenset(remap(c, layout.src, layout.dst) for c in self.chapters)
        self.new_index = FileIndex(frozenset(layout.new_files), frozenset(layout.new_dirs), new_chapters, self.prefix)
        self.notes: list[str] = []
        self.text = ""
        from tools.markdown.parser import create_markdown

        self.md = create_markdown()

    def canonical(self, source: str, target: str, style: LinkStyle, is_dir: bool) -> str:
        """The destination path written in the link's style: relative and shortest, or from the root."""
        if style.absolute:
            body = "/" + "/".join(part for part in (self.prefix, target) if part)
            if body == "/" or (style.trailing and is_dir):
                body = body.rstrip("/") + "/"
            return body
        rel = posixpath.relpath(target or ".", posixpath.dirname(source) or ".")
        body = "" if rel == "." else rel
        if style.dot:  # its own folder in the ./ style: `././` and `./.`, since a plain `./` reads as `.` plus a slash
            body = "./" + (body or ("./" if style.trailing else "."))
        elif body == "":
            body = "./" if style.trailing else "."
        if style.trailing and is_dir and not body.endswith("/"):
            body += "/"
        return body

    def _encode(self, path: str, written: str, style: LinkStyle) -> str:
        """Write `path` reusing the written form of every segment that did not change."""
        known: dict[str, str] = {}
        for segment in written.split("/"):
            known.setdefault(decode_segment(segment, style.html), segment)
        out = []
        for segment in path.split("/"):
            if segment in known:
                out.append(known[segment])
            elif segment in ("", ".", ".."):
                out.append(segment)
            else:
                out.append(encode_segment(segment, style))
        return "/".join(out)

    def _quote_of(self, link: Link) -> str:
        if link.kind not in (LinkKind.HTML_HREF, LinkKind.HTML_SRC) or link.offset is None or link.offset == 0:
            return ""
        before = self.text[link.offset - 1]
        return before if before in "\"'" else ""

    def plan_link(self, source: str, link: Link) -> tuple[str, str] | None:
        """(new raw, reason) for a link that must change, or None."""
        if link.kind is LinkKind.AUTOLINK:
            return None
        layout = self.layout
        target = resolve(source, link.href, self.old_index)
        if target.kind in (TargetKind.EXTERNAL, TargetKind.BROKEN, TargetKind.FRAGMENT):
            return None
        new_source = remap(source, layout.src, layout.dst)
        old_is_dir = is_dir = target.kind is TargetKind.DIRECTORY
        old_target = target.path
        new_target = remap(old_target, layout.src, layout.dst)
        if is_dir and target.readme and under(target.readme, layout.src) and not under(old_target, layout.src):
            # The link meant the folder's README, which moves out of it: follow the chapter, not the folder.
            new_target, is_dir = remap(target.readme, layout.src, layout.dst), False
            self.notes.append(f"{link.location}: '{link.raw}' opened the README of {old_target or '.'}/, which moves to {new_target}; the link now names that file (moving it back keeps the file form).")
        if is_dir and not under(old_target, layout.src) and old_target not in layout.new_dirs and old_target:
            self.notes.append(f"{link.location}: '{link.raw}' links to the folder {old_target}/, which the move leaves empty; the link will be broken.")
        if new_source == source and new_target == old_target:
            return None
        bracketed, written, rest = split_raw(link.raw)
        style = LinkStyle(
            bracketed=bracketed,
            dot=written.startswith("./") and written != "./",  # `./` alone is the folder itself with a trailing slash
            absolute=written.startswith("/"),
            trailing=written.endswith("/") and len(written) > 1,
            percent=bool(re.search(r"%[0-9A-Fa-f]{2}", written)),
            html=link.kind in (LinkKind.HTML_HREF, LinkKind.HTML_SRC),
            quote=self._quote_of(link),
        )
        decoded = "/".join(decode_segment(segment, style.html) for segment in written.split("/"))
        was_canonical = decoded == self.canonical(source, old_target, style, old_is_dir)
        still = resolve(new_source, link.href, self.new_index)
        if not was_canonical and still.kind is not TargetKind.BROKEN and still.path == new_target:
            return None
        path = self.canonical(new_source, new_target, style, is_dir)
        encoded = self._encode(path, written, style)
        raw = ("<" if bracketed else "") + encoded + rest + (">" if bracketed else "")
        if raw == link.raw:
            return None
        check_href = (unescapeAll(encoded) if not style.html else html.unescape(encoded)) + (unescapeAll(rest) if not style.html else html.unescape(rest))
        check = resolve(new_source, check_href, self.new_index)
        if check.kind is TargetKind.BROKEN or check.path != new_target:
            raise MoveError(f"{link.location}: cannot rewrite '{link.raw}' so that it still reaches {new_target} (got {check.reason or check.path}); nothing was changed.")
        return raw, ""

    def plan_file(self, old_path: str) -> FileChange | None:
        layout = self.layout
        read = layout.read_path(old_path)
        try:
            data = read_bytes(self.config.root / read, self.config.root, CHAPTER_LIMIT, shown=read)
        except UnsafeFile as exc:  # a FIFO, a link leading out of the book, a huge file: not read, not rewritten
            self.notes.append(f"{exc}; its links are not rewritten.")
            return None
        diagnostics = Diagnostics()
        chapter = parse_chapter(self.config.root, read, self.chapters.get(old_path, 0), diagnostics, self.md, self.cache)
        text = self.text = chapter.text
        edits: list[Edit] = []
        for link in chapter.links:
            link.source = old_path
            planned = self.plan_link(old_path, link)
            if planned is None:
                continue
            new_raw, _ = planned
            if link.offset is None or text[link.offset : link.offset + len(link.raw)] != link.raw or not _is_destination(text, link):
                raise MoveError(f"{link.location}: the link '{link.raw}' must change but its place in the file is not known; nothing was changed.")
            if diagnostics.errors:
                raise MoveError(f"{diagnostics.errors[0].location()}: {diagnostics.errors[0].message} Links in it must change; fix the file first; nothing was changed.")
            new_path = remap(old_path, layout.src, layout.dst)
            edits.append(Edit(new_path, link.line, link.col, link.offset, link.raw, new_raw))
        if not edits:
            return None
        after = text
        for edit in sorted(edits, key=lambda e: e.offset, reverse=True):
            after = after[: edit.offset] + edit.new + after[edit.offset + len(edit.old) :]
        before, after = _with_own_line_ends(data, text, after, read)
        return FileChange(old_path, remap(old_path, layout.src, layout.dst), before, after, data.startswith(b"\xef\xbb\xbf"), sorted(edits, key=lambda e: e.offset))

    def plan_chapter_list(self) -> FileChange | None:
        if not self.config.chapters:
            return None
        list_rel = self.config.chapters
        if under(list_rel, self.layout.src):
            raise MoveError(f"the move would take the chapter list {list_rel} along; move it separately.")
        try:
            data = read_bytes(self.config.chapter_list, self.config.root, CONFIG_LIMIT, shown=list_rel)
            text = data.decode("utf-8-sig")
        except UnsafeFile as exc:
            raise MoveError(f"{exc}; the chapter list must be updated by the move, so nothing was changed.") from None
        except UnicodeDecodeError as exc:
            bad_line = data.count(b"\n", 0, exc.start) + 1
            raise MoveError(f"{list_rel}:{bad_line}: the chapter list is not valid UTF-8 (byte 0x{data[exc.start]:02x}); save it as UTF-8. Nothing was changed.") from None
        lines = text.splitlines(keepends=True)
        changed = False
        for number, line in enumerate(lines):
            body = line.rstrip("\r\n")
            entry = body.strip()
            if not is_chapter_line(entry):  # blank, a comment or a part line: kept as written
                continue
            path = posixpath.normpath(entry.lstrip("/"))
            new = remap(path, self.layout.src, self.layout.dst)
            if new == path:
                continue
            written = ("/" if entry.startswith("/") else "") + new
            start = body.index(entry)
            lines[number] = body[:start] + written + body[start + len(entry) :] + line[len(body) :]
            changed = True
        if not changed:
            return None
        return FileChange(list_rel, list_rel, text, "".join(lines), data.startswith(b"\xef\xbb\xbf"))


def plan_move(root: Path | str, src: str | Path, dst: str | Path, moved: bool = False, config: BookConfig | None = None, cache=None) -> MovePlan:
    """What moving `src` to `dst` changes (paths relative to the current folder, or absolute).

    `moved`: the files already are at `dst` (`tools mv-links` after a move done by hand); otherwise they are still
    at `src` (`tools mv` plans first, then moves, then writes).
    """
    config = config or load_config(Path(root))
    src_rel, dst_rel = relative_to_root(config, src, "SRC"), relative_to_root(config, dst, "DST")
    check_move_paths(config, src_rel, dst_rel, src, dst, moved)
    if not moved:
        if not ((config.root / src_rel).exists() or (config.root / src_rel).is_symlink()):
            raise MoveError(f"'{src}' does not exist.")
        if (config.root / dst_rel).exists() or (config.root / dst_rel).is_symlink():
            raise MoveError(f"'{dst}' already exists; refusing to overwrite it. Choose a new path.")
        for parent in ancestors(dst_rel):
            if (config.root / parent).is_file():
                raise MoveError(f"'{parent}' is a file, so '{dst}' cannot be created.")
    else:
        if not ((config.root / dst_rel).exists() or (config.root / dst_rel).is_symlink()):
            raise MoveError(f"'{dst}' does not exist; `tools mv-links` rewrites links after a move, so move the files first (or use `tools mv`).")
        if (config.root / src_rel).exists():
            raise MoveError(f"'{src}' still exists; after a move only '{dst}' should. Did you mean `tools mv`?")
    layout = _Layout(config, src_rel, dst_rel, moved)
    planner = _Planner(config, layout, cache)
    changes: dict[str, FileChange] = {}
    for old_path in sorted(layout.old_files):
        if old_path.lower().endswith(MARKDOWN_SUFFIXES):
            change = planner.plan_file(old_path)
            if change is not None:
                changes[old_path] = change
    moved_files = sorted((f, remap(f, src_rel, dst_rel)) for f in layout.old_files if under(f, src_rel))
    if config.config_file is not None and config.cover and under(posixpath.normpath(config.cover), src_rel):
        planner.notes.append(f"{config.config_file.name}: the cover '{config.cover}' moves to {remap(posixpath.normpath(config.cover), src_rel, dst_rel)}; update book.toml.")
    planner.notes.extend(translation_notes(config, src_rel, dst_rel))
    chapters = planner.chapters if config.chapters else [f for f in layout.old_files if f.lower().endswith(MARKDOWN_SUFFIXES)]
    redirects = plan_redirects(config, src_rel, dst_rel, chapters, moved_files, planner.notes)
    config_change = FileChange(redirects[0], redirects[0], *redirects[1:]) if redirects else None
    return MovePlan(config.root, src_rel, dst_rel, layout.is_dir, moved_files, changes, planner.plan_chapter_list(), planner.notes, config_change)
