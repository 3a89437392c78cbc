"""A book's languages: the original and each `[translations.<tag>]` of book.toml, each read as a view of one book.

A translation's view has the original's chapters at their logical paths (the same relative paths as the original),
each read from the translation's folder when it holds that file, else from the original (a fallback chapter, shown
in the original's language and marked). Chapters keep their real paths (`zh/a.md`), so every diagnostic and cache
key names the real file; the file index's `folder` makes the resolver (tools/link_resolve.py) follow a link from
its chapter's logical place and land on the translated file when there is one, else on the original. Anchors are
then checked against the page a link really lands on, by the one checker.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from .book import Book, add_chapters, parse_chapter, read_chapter_list, scan_files
from .cache import Cache, key_of
from .config import BookConfig
from .errors import BookError, Diagnostics
from .git import repository_prefix
from .link_resolve import FileIndex


@dataclass(frozen=True)
class LanguageSite:
    """One language's site, as the others' language switchers need it."""

    language: str
    base: str  # its folder inside the original's site: '' for the original, 'zh/' for a translation
    chapters: frozenset[str]  # the logical paths of its chapters


def original_language(config: BookConfig) -> str:
    return config.original_language or config.language or "en"


def languages(config: BookConfig) -> list[str]:
    """Every language of the book, the original first, then the translations in book.toml's order."""
    return [original_language(config), *config.translations]


def chosen_languages(config: BookConfig, wanted: str | None) -> list[str]:
    """The languages `--lang` asks for (all of them without it); an unknown tag is a usage error naming the known ones."""
    known = languages(config)
    if not wanted:
        return known
    for tag in known:
        if tag.casefold() == wanted.strip().casefold():
            return [tag]
    raise BookError(f"--lang '{wanted}': the book has no such language; its languages are {', '.join(known)} (declare a translation as [translations.<tag>] in book.toml).")


def view_config(config: BookConfig, language: str) -> BookConfig:
    """The configuration of one language's view: a translation's tag, title, description and chapter list."""
    if language == original_language(config) or language not in config.translations:
        return config
    translation = config.translations[language]
    return replace(config, language=language, title=translation.title or config.title, description=translation.description or config.description,
                   chapters=translation.chapters or config.chapters, translation=translation, original_language=original_language(config),
                   site_url=f"{config.site_url}{language}/" if config.site_url else "")


def site_base(config: BookConfig, language: str) -> str:
    return "" if language == original_language(config) else f"{language}/"


def language_output(path: Path, config: BookConfig, language: str, folder: bool) -> Path:
    """Where a language's output goes: the original's at `path`; a translation's site in `<path>/<tag>/`, its
    files beside the original's as `book.<tag>.pdf`."""
    if language == original_language(config):
        return path
    return path / language if folder else path.with_name(f"{path.stem}.{language}{path.suffix}")


def _under(path: str, folders: list[str]) -> bool:
    return any(path == folder or path.startswith(folder + "/") for folder in folders)


def open_view(config: BookConfig, output: Path | None = None) -> tuple[Book, list[tuple[str, int]]]:
    """`book.open_book` for one language's view: the file index without the other translations' folders (the
    original's without any), and its chapters at their real paths, in the order of its chapter list."""
    diagnostics = Diagnostics()
    refused: dict[str, str] = {}
    all_files, all_dirs = scan_files(config.root, output, refused)
    own = config.translation.folder if config.translation else ""
    others = [t.folder for t in config.translations.values() if t.folder != own]
    files = {f for f in all_files if not _under(f, others)}
    dirs = {d for d in all_dirs if not _under(d, others)}
    refused = {path: why for path, why in refused.items() if not _under(path, others)}
    for language, translation in config.translations.items():  # said instead of "does not exist" at a list entry or a link
        if translation.folder != own:
            refused[translation.folder] = f"is the folder of the {language} translation, which only the {language} site publishes"
    if own:
        cut = len(own) + 1
        sources = {f[cut:]: f for f in files if _under(f, [own]) and f != own}
        logical_files = {f for f in files if not _under(f, [own])} | set(sources)
        logical_dirs = {d for d in dirs if not _under(d, [own])} | {d[cut:] for d in dirs if d.startswith(own + "/")}
        logical_refused = {path[cut:] if _under(path, [own]) else path: why for path, why in refused.items()}
        listed = read_chapter_list(config, logical_files, diagnostics, logical_dirs, logical_refused, sources)
        entries = [(sources.get(path, path), line) for path, line in listed]
        parts = [replace(part, chapters=[sources.get(path, path) for path in part.chapters]) for part in getattr(listed, "parts", [])]  # at their real paths
    else:
        entries = read_chapter_list(config, files, diagnostics, dirs, refused)
        parts = getattr(entries, "parts", [])
    if config.repository_path is None:  # settled once, as open_book does
        config = replace(config, repository_path=repository_prefix(config.root))
    prefix = (config.repository_path or "").strip("/")
    index = FileIndex(frozenset(files), frozenset(dirs), frozenset(path for path, _ in entries), prefix, refused, own)
    return Book(config, [], index, diagnostics, parts), entries


def mark_chapters(book: Book) -> None:
    """Each chapter's language, whether it falls back to the original, and (in a translation's view) a cache key
    of its own: a fallback chapter's results are never taken for the original's, nor the other way round."""
    config = book.config
    own = config.translation.folder if config.translation else ""
    for chapter in book.chapters:
        chapter.fallback = bool(own) and not _under(chapter.path, [own])
        chapter.language = original_language(config) if chapter.fallback else config.language or "en"
        if own and chapter.key:
            chapter.key = key_of("translation", chapter.key, config.language, chapter.path)


def load_view(config: BookConfig, output: Path | None = None, cache: Cache | None = None) -> Book:
    """`book.load_book` for one language's view (`tools check-links`): every chapter parsed here, links resolved."""
    book, entries = open_view(config, output)
    parsed = []
    for path, line in entries:
        found = Diagnostics()
        parsed.append((parse_chapter(config.root, path, line, found, None, cache), found.items))
    add_chapters(book, parsed)
    mark_chapters(book)
    return book


def language_site(book: Book) -> LanguageSite:
    config = book.config
    return LanguageSite(config.language or "en", site_base(config, config.language or "en") if config.translation else "",
                        frozenset(book.index.logical(path) for path in book.index.chapters))


def explain_fallbacks(book: Book, diagnostics: Diagnostics) -> Diagnostics:
    """In a translation's view, a fallback chapter's link to an anchor the translated page lacks is reported at the
    original's file (the link is the original's), saying that it is the translation's site where it breaks and how
    the translation keeps the anchor; every other finding at a fallback chapter is the original's own."""
    own = book.config.translation.folder if book.config.translation else ""
    if not own:
        return diagnostics
    landing: dict[tuple[str, int, int], str] = {}
    for chapter in book.chapters:
        for link in chapter.links if chapter.fallback else ():
            target = link.target
            if target is not None and target.fragment and _under(target.path, [own]) and target.path in book.by_path:
                landing[(link.source, link.line, link.col)] = target.path
    explained = Diagnostics()
    for diag in diagnostics.items:
        path = landing.get((diag.file, diag.line, diag.col)) if diag.code == "missing-anchor" else None
        if path:
            message = f"{diag.message.rstrip('.')} (in the {book.config.language} translation, which shows {diag.file} untranslated, the link lands on the translated {path})."
            hint = f"Keep the original's id in {path}, e.g. an <a id=\"...\"></a> beside the translated heading. {diag.suggestion}".strip()
            diag = replace(diag, message=message, suggestion=hint)
        explained.add(diag)
    return explained
