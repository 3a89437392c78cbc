"""A book's languages: the original and each `[translations.<tag>]` of book.toml, each read as a view of one book.

A translation's view has the original's chapters at their logical paths (the same relative paths as the original),
each read from the translation's folder when it holds that file, else from the original (a fallback chapter, shown
in the original's language and marked). Chapters keep their real paths (`zh/a.md`), so every diagnostic and cache
key names the real file; the file index's `folder` makes the resolver (tools/book/resolve.py) follow a link from
its chapter's logical place and land on the translated file when there is one, else on the original. Anchors are
then checked against the page a link really lands on, by the one checker.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from tools.book.config import BookConfig
from tools.book.model import Book, Chapter
from tools.core.cache import key_of
from tools.core.errors import BookError, Diagnostics


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


@dataclass
class ViewFiles:
    """The file index of one language's view: its files and folders at their real paths, and, for the chapter list,
    the same at their logical paths (a translation's `zh/a.md` is `a.md`; `sources` maps back)."""

    files: set[str]
    dirs: set[str]
    refused: dict[str, str]
    folder: str  # the translation's folder; '' for the original
    logical_files: set[str]
    logical_dirs: set[str]
    logical_refused: dict[str, str]
    sources: dict[str, str]  # logical path -> real path, for the translation's own files


def view_files(config: BookConfig, all_files: set[str], all_dirs: set[str], refused: dict[str, str]) -> ViewFiles:
    """What one language's view sees of the scanned files: never the other translations' folders (the original sees
    none of them), which are refused with a sentence saying whose they are."""
    own = config.translation.folder if config.translation else ""
    others = [t.folder for t in config.translations.values() if t.folder != own]
    files = {f for f in all_files if not _under(f, others)}
    dirs = {d for d in all_dirs if not _under(d, others)}
    refused = {path: why for path, why in refused.items() if not _under(path, others)}
    for language, translation in config.translations.items():  # said instead of "does not exist" at a list entry or a link
        if translation.folder != own:
            refused[translation.folder] = f"is the folder of the {language} translation, which only the {language} site publishes"
    if not own:
        return ViewFiles(files, dirs, refused, "", files, dirs, refused, {})
    cut = len(own) + 1
    sources = {f[cut:]: f for f in files if _under(f, [own]) and f != own}
    logical_files = {f for f in files if not _under(f, [own])} | set(sources)
    logical_dirs = {d for d in dirs if not _under(d, [own])} | {d[cut:] for d in dirs if d.startswith(own + "/")}
    logical_refused = {path[cut:] if _under(path, [own]) else path: why for path, why in refused.items()}
    return ViewFiles(files, dirs, refused, own, logical_files, logical_dirs, logical_refused, sources)


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


def chapter_language(book: Book, chapter: Chapter) -> str:
    """The chapter's BCP 47 tag, for every format that declares it (the PDF's sections, which pick fonts and
    hyphenation by it, and the EPUB's documents): its own when it has one (a translation's chapter), else the book's."""
    return getattr(chapter, "language", None) or book.config.language or "en"


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
