"""The split search index of a running `tools serve`, updated section by section after an edit.

`search_index_files` (tools/render/site/search.py) makes the whole index from every section of the book; at the upstream
book's size that is most of a one-chapter rebuild (about 0.2 s). `SearchMemo` keeps what it made, the gram sets as
bitsets, and after an edit that keeps the number of sections flips only the changed sections' bits, encodes again
only the grams whose sets changed and writes again only the parts that hold them. Its files are always exactly
those `search_index_files` makes of the same sections (tests/test_search_memo.py checks it on random edits); when
the number of sections, the language or the number of gram parts changes, it makes them all again."""
from __future__ import annotations

from tools.render.site.search import DOC_PART_BYTES, GRAM_PART_BYTES, RUNS, _encoded, _json, _script, _word_grams, _words, gram_hash


def _grams(text: str) -> set[str]:
    """The gram set of one section's title or text, as `_word_grams` gives it a bit."""
    found: set[str] = set()
    for word in set(RUNS.findall(text.lower())):
        found.update(word[i : i + n] for n in (1, 2, 3) for i in range(len(word) - n + 1))
    return found


class SearchMemo:
    """The index of the last build (see the module's doc)."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.entries: list[dict] = []
        self.language: str | None = None
        self.bits: tuple[dict[str, int], dict[str, int]] = ({}, {})  # gram -> sections whose title / text holds it
        self.values: dict[str, list] = {}  # gram -> its two encoded sets, as the part holds them
        self.weight: dict[str, int] = {}  # gram -> what it adds to the total that sets the number of parts
        self.total = 0
        self.parts: list[set[str]] = []  # the grams of each gram part
        self.sizes: list[int] = []  # each section's bytes in its part
        self.docs: list[int] = []
        self.files: dict[str, str] = {}

    def index_files(self, entries: list[dict], language: str) -> dict[str, str]:
        if self.language != language or len(entries) != len(self.entries) or not entries:
            return self._all(entries, language)
        changed = [i for i, (old, new) in enumerate(zip(self.entries, entries)) if old != new]
        if not changed:
            return dict(self.files)
        touched: set[str] = set()
        for i in changed:
            old, new = self.entries[i], entries[i]
            for side, key in enumerate(("t", "x")):
                before, after = _grams(old.get(key, "")), _grams(new.get(key, ""))
                bits, bit = self.bits[side], 1 << i
                for gram in before - after:
                    bits[gram] &= ~bit
                for gram in after - before:
                    bits[gram] = bits.get(gram, 0) | bit
                touched |= before ^ after
        self.entries = [dict(entry) for entry in entries]
        for gram in touched:
            self._encode(gram)
        if max(1, self.total // GRAM_PART_BYTES) != len(self.parts):
            return self._all(entries, language)
        files = self._doc_files(changed)
        stale = {gram_hash(gram) % len(self.parts) for gram in touched}
        for number in stale:
            self.parts[number] = {gram for gram in self.parts[number] if gram in self.values}
        for gram in touched:
            if gram in self.values:
                self.parts[gram_hash(gram) % len(self.parts)].add(gram)
        for number in range(len(self.parts)):
            name = f"search/g{number}.js"
            files[name] = self._gram_part(number) if number in stale else self.files[name]
        files["search-index.js"] = self._meta()
        self.files = files
        return dict(files)

    def _encode(self, gram: str) -> None:
        """The gram's entry from its bitsets: gone when no section holds it."""
        self.total -= self.weight.pop(gram, 0)
        self.values.pop(gram, None)
        titles, texts = self.bits[0].get(gram, 0), self.bits[1].get(gram, 0)
        if not titles and not texts:
            self.bits[0].pop(gram, None)
            self.bits[1].pop(gram, None)
            return
        value = [_encoded(titles, len(self.entries)), _encoded(texts, len(self.entries))]
        self.values[gram] = value
        self.weight[gram] = len(gram) + 8 + sum(len(v) if isinstance(v, str) else 4 * len(v) for v in value)
        self.total += self.weight[gram]

    def _all(self, entries: list[dict], language: str) -> dict[str, str]:
        self._reset()
        self.entries, self.language = [dict(entry) for entry in entries], language
        self.bits = (_word_grams(_words([e.get("t", "") for e in entries])), _word_grams(_words([e.get("x", "") for e in entries])))
        for gram in sorted(self.bits[0].keys() | self.bits[1].keys()):
            self._encode(gram)
        self.parts = [set() for _ in range(max(1, self.total // GRAM_PART_BYTES))]
        for gram in self.values:
            self.parts[gram_hash(gram) % len(self.parts)].add(gram)
        self.sizes = [len(_json(entry).encode()) for entry in entries]
        files = self._doc_files(None)
        for number in range(len(self.parts)):
            files[f"search/g{number}.js"] = self._gram_part(number)
        files["search-index.js"] = self._meta()
        self.files = files
        return dict(files)

    def _doc_files(self, changed: list[int] | None) -> dict[str, str]:
        """The section parts, cut as `search_index_files` cuts them; a part is made again only when its range or
        one of its sections changed (`changed` None: every part)."""
        for i in changed or ():
            self.sizes[i] = len(_json(self.entries[i]).encode())
        starts: list[int] = []
        size = 0
        for index, bytes_ in enumerate(self.sizes):
            if not starts or size >= DOC_PART_BYTES:
                starts.append(index)
                size = 0
            size += bytes_
        count = len(self.entries)
        old = set(zip(self.docs, self.docs[1:] + [count])) if changed is not None else set()
        dirty = sorted(changed or ())
        files: dict[str, str] = {}
        for number, (start, end) in enumerate(zip(starts, starts[1:] + [count])):
            name = f"search/d{number}.js"
            reuse = (start, end) in old and self.docs.index(start) == number and not any(start <= i < end for i in dirty)
            files[name] = self.files[name] if reuse else _script(f"d{number}", self.entries[start:end])
        self.docs = starts
        return files

    def _gram_part(self, number: int) -> str:
        return _script(f"g{number}", {gram: self.values[gram] for gram in sorted(self.parts[number])})

    def _meta(self) -> str:
        meta = {"language": self.language, "count": len(self.entries), "docs": self.docs, "grams": len(self.parts)}
        return "window.BOOK_SEARCH_INDEX = " + _json(meta) + ";\n"
