"""The site's full-text search index, built at build time: one entry per section of every chapter, and the site's
language, so that `search.js` splits a query as that language writes words.

The index is split so that one search fetches a small part of it, however large the book: `search-index.js` holds
the language, the number of sections and where each part of them starts; `search/d<k>.js` hold the sections
themselves (about `DOC_PART_BYTES` each, in book order) and `search/g<b>.js` the gram sets: for every string of one
to three characters (code points) of the lowercased words, cut at white space and where ASCII punctuation starts or
ends, the sections
whose title holds it and those whose text does, each as ascending gaps or a base64 bitset, whichever is shorter; a
gram's part (about `GRAM_PART_BYTES`) is its FNV-1a hash modulo the number of parts. A section can match a query only
where each query word's grams (each of its runs, punctuation or not: itself up to three characters, else
trigrams covering it) are all in its title or all in its text: `search.js` ranks those
candidates by their best possible score and reads the sections of the best ones only, scoring each exactly as it
always did, until no candidate left could enter the top twenty. So the results are the same as with one index."""
from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable

from markdown_it.token import Token

from tools.book.model import Chapter
from tools.markdown.math import is_math_fence

_TEXT_TOKENS = ("text", "code_inline")
# Scripts written without spaces between words: Han, kana, CJK punctuation, full-width forms (Hangul has spaces).
UNSPACED = "\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef\U00020000-\U0003134f"
_SPACE_IN_UNSPACED = re.compile(f"(?<=[{UNSPACED}])\\s+(?=[{UNSPACED}])")


def inline_text(children: list[Token]) -> str:
    """The words of an inline token as a reader sees them: emphasis and link marks join their text to the next
    (`模**型**` is one word), a line break, an image or a formula between words is a space."""
    return "".join(c.content if c.type in _TEXT_TOKENS else "" if c.type.endswith(("_open", "_close")) else " " for c in children)


def section_text(parts: list[str]) -> str:
    """One line of the section's text. A line break between two Chinese or Japanese characters is no space (the
    source wraps its lines anywhere), so two adjacent characters stay adjacent for search."""
    return _SPACE_IN_UNSPACED.sub("", " ".join(" ".join(parts).split()))


def sections(chapter: Chapter, tokens: list[Token] | None = None) -> list[dict]:
    """[{a: anchor, t: heading, x: text}] in order; text before the first heading belongs to the chapter title."""
    found: list[dict] = [{"a": "", "t": chapter.title, "x": []}]
    tokens = chapter.tokens if tokens is None else tokens
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and "anchor" in token.meta:
            title = tokens[index + 1].content if index + 1 < len(tokens) else ""
            if found[-1]["a"] == "" and not found[-1]["x"] and len(found) == 1:
                found[-1] = {"a": token.meta["anchor"], "t": chapter.title, "x": []}
                if token.tag != "h1":
                    found[-1]["t"] = title
            else:
                found.append({"a": token.meta["anchor"], "t": title, "x": []})
            continue
        if token.type == "inline" and not (index > 0 and tokens[index - 1].type == "heading_open"):
            found[-1]["x"].append(inline_text(token.children or []))
        elif token.type == "code_block" or (token.type == "fence" and not is_math_fence(token)):  # LaTeX is no text to find
            found[-1]["x"].append(token.content)
    for section in found:
        section["x"] = section_text(section["x"])
    return found


DOC_PART_BYTES = 8_000
GRAM_PART_BYTES = 8_000


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _script(name: str, value: object) -> str:
    """A script, not JSON, so that a part loads from file:// where fetch() is refused."""
    return _script_of_json(name, _json(value))


def _script_of_json(name: str, value: str) -> str:
    return f"window.BOOK_SEARCH_PART({_json(name)},{value});\n"


def gram_hash(gram: str) -> int:
    """FNV-1a over the code points, as search.js computes it."""
    value = 0x811C9DC5
    for char in gram:
        value = ((value ^ ord(char)) * 0x01000193) & 0xFFFFFFFF
    return value


def _word_grams(words: dict[str, int]) -> dict[str, int]:
    """gram -> bitset (an int) from word -> bitset: each distinct word's strings of one to three characters get the
    word's bits (a gram twice in a word is ORed twice: cheaper than a set of them per word)."""
    grams: dict[str, int] = {}
    get = grams.get
    for word, bits in words.items():
        length = len(word)
        for start in range(length):
            gram = word[start]
            grams[gram] = get(gram, 0) | bits
            if start + 2 <= length:
                gram = word[start : start + 2]
                grams[gram] = get(gram, 0) | bits
                if start + 3 <= length:
                    gram = word[start : start + 3]
                    grams[gram] = get(gram, 0) | bits
    return grams


# The gram index's words: runs of ASCII punctuation and runs of anything else but white space. search.js cuts a
# query word into the same runs (its RUNS), so every gram it asks for is one the index has.
RUNS = re.compile(r"[^\s!-/:-@\[-`{-~]+|[!-/:-@\[-`{-~]+")  # the common run first: it is tried first


def _words(texts: list[str]) -> dict[str, int]:
    """word -> bitset of the texts holding it, the texts lowercased as search.js lowercases them."""
    words: dict[str, int] = {}
    get, findall = words.get, RUNS.findall
    for number, text in enumerate(texts):
        bit = 1 << number
        for word in set(findall(text.lower())):
            words[word] = get(word, 0) | bit
    return words


def _encoded(bits: int, count: int) -> list[int] | str:
    """The set as gaps between ascending indices (the first from -1), or as a base64 bitset when that is shorter."""
    if not bits:
        return []
    size = (count + 7) // 8
    if bits.bit_count() * 3 > size * 4 // 3:
        return base64.b64encode(bits.to_bytes(size, "little")).decode()
    gaps, last = [], -1
    if count > 4096:  # each step below costs the set's length: a big book's sets are read as a string of bits
        digits = bin(bits)[:1:-1]  # bit i at position i
        index = digits.find("1")
        while index >= 0:
            gaps.append(index - last)
            last, index = index, digits.find("1", index + 1)
        return gaps
    while bits:  # lowest set bit first
        low = bits & -bits
        index = low.bit_length() - 1
        gaps.append(index - last)
        last = index
        bits ^= low
    return gaps


def doc_files(entries: list[dict]) -> tuple[dict[str, str], list[int]]:
    """The sections' parts, `search/d<k>.js`, about `DOC_PART_BYTES` each in book order, and where each starts."""
    files: dict[str, str] = {}
    docs: list[int] = []
    part: list[str] = []  # the part's sections, each as JSON
    size = 0
    for index, entry in enumerate(entries):
        if part and size >= DOC_PART_BYTES:
            files[f"search/d{len(docs) - 1}.js"] = _script_of_json(f"d{len(docs) - 1}", "[" + ",".join(part) + "]")
            part, size = [], 0
        if not part:
            docs.append(index)
        text = _json(entry)
        part.append(text)
        size += len(text.encode())
    if part:
        files[f"search/d{len(docs) - 1}.js"] = _script_of_json(f"d{len(docs) - 1}", "[" + ",".join(part) + "]")
    return files, docs


def gram_files(entries: list[dict]) -> tuple[dict[str, str], int]:
    """The gram parts, `search/g<b>.js`, and how many there are (see the module's doc)."""
    texts = _word_grams(_words([e.get("x", "") for e in entries]))
    titles = _word_grams(_words([e.get("t", "") for e in entries]))
    sets = {gram: [_encoded(titles.get(gram, 0), len(entries)), _encoded(texts.get(gram, 0), len(entries))]
            for gram in sorted(titles.keys() | texts.keys())}
    total = sum(len(gram) + 8 + sum(len(v) if isinstance(v, str) else 4 * len(v) for v in value) for gram, value in sets.items())
    buckets = max(1, total // GRAM_PART_BYTES)
    parts: list[dict] = [{} for _ in range(buckets)]
    for gram, value in sets.items():
        parts[gram_hash(gram) % buckets][gram] = value
    return {f"search/g{number}.js": _script(f"g{number}", bucket) for number, bucket in enumerate(parts)}, buckets


def entries_digest(language: str, entries: list[dict]) -> str:
    """A hash of everything the index is made of: each entry's fields, each name and value length-prefixed, so no
    two different indexes share it (a third of the time of hashing their repr, which a cold build waits for)."""
    digest = hashlib.sha256()
    for text in _fields(language, entries):
        data = text.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def _fields(language: str, entries: list[dict]):
    yield language
    for entry in entries:
        yield str(len(entry))
        for name, value in entry.items():
            yield name
            yield value if isinstance(value, str) else repr(value)


def index_meta(language: str, count: int, docs: list[int], buckets: int) -> str:
    """`search-index.js`: what a search loads first."""
    return "window.BOOK_SEARCH_INDEX = " + _json({"language": language, "count": count, "docs": docs, "grams": buckets}) + ";\n"


def search_index_files(entries: list[dict], language: str, grams_made: Callable[[], tuple[dict[str, str], int]] | None = None) -> dict[str, str]:
    """The index as files under `assets/`: `search-index.js` and its parts in `search/` (see the module's doc);
    `entries` are every chapter's sections in book order. `grams_made`: `gram_files(entries)`'s result from another
    process, asked for once the sections' parts are made here (a build makes the two kinds of part at once)."""
    files, docs = doc_files(entries)
    grams, buckets = grams_made() if grams_made is not None else gram_files(entries)
    files.update(grams)
    files["search-index.js"] = index_meta(language, len(entries), docs, buckets)
    return files
