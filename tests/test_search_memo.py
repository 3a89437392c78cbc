"""`tools serve` updates the split search index section by section (tools/serve/search_memo.py): after any edit
its files are exactly those a whole build makes of the same sections."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from tools.render.site import search
from tools.render.site.search import search_index_files
from tools.serve.search_memo import SearchMemo

WORDS = st.sampled_from(["gpu", "node", "rank", "all-reduce", "NCCL_DEBUG", "x", "模型", "训练", "a.b", "--", "ß", "İ", "3.35", "TB/s"])
TEXT = st.lists(WORDS, max_size=12).map(" ".join)
ENTRY = st.fixed_dictionaries({"p": st.sampled_from(["a.html", "b/c.html"]), "a": st.sampled_from(["", "x", "y-1"]), "t": TEXT, "c": st.sampled_from(["A", "B"]), "x": TEXT})
EDIT = st.tuples(st.integers(0, 10_000), st.sampled_from(["t", "x", "c", "a"]), TEXT)


def _small_parts(monkeypatch) -> None:
    """Parts of a few hundred bytes, so a small book has many of each kind and edits move their borders."""
    monkeypatch.setattr(search, "DOC_PART_BYTES", 300)
    monkeypatch.setattr(search, "GRAM_PART_BYTES", 300)
    import tools.serve.search_memo as memo_module
    monkeypatch.setattr(memo_module, "DOC_PART_BYTES", 300)
    monkeypatch.setattr(memo_module, "GRAM_PART_BYTES", 300)


@settings(max_examples=60, deadline=None)
@given(entries=st.lists(ENTRY, min_size=1, max_size=25), edits=st.lists(EDIT, max_size=8))
def test_every_edit_gives_the_files_of_a_whole_build(entries, edits):
    import pytest

    with pytest.MonkeyPatch.context() as monkeypatch:
        _small_parts(monkeypatch)
        memo = SearchMemo()
        assert memo.index_files(entries, "en") == search_index_files(entries, "en")
        for where, key, text in edits:
            entries = [dict(entry) for entry in entries]
            entries[where % len(entries)][key] = text
            assert memo.index_files(entries, "en") == search_index_files(entries, "en")


def test_a_new_section_or_language_starts_afresh():
    memo = SearchMemo()
    entries = [{"p": "a.html", "a": "", "t": "One", "c": "One", "x": "first text"}]
    assert memo.index_files(entries, "en") == search_index_files(entries, "en")
    entries = entries + [{"p": "a.html", "a": "two", "t": "Two", "c": "One", "x": "second text"}]
    assert memo.index_files(entries, "en") == search_index_files(entries, "en")
    assert memo.index_files(entries, "zh") == search_index_files(entries, "zh")
    assert memo.index_files(entries, "zh") == search_index_files(entries, "zh")  # no change: the same files


@given(words=st.dictionaries(st.text(min_size=1, max_size=7), st.integers(1, 2**40), max_size=30))
def test_each_words_grams_get_its_bits(words):
    """`_word_grams` (one pass over each word, a repeated gram ORed again) is the definition: every string of one to
    three characters of a word gets that word's bits, and no other string is a gram."""
    expected: dict[str, int] = {}
    for word, bits in words.items():
        for gram in {word[i : i + n] for n in (1, 2, 3) for i in range(len(word) - n + 1)}:
            expected[gram] = expected.get(gram, 0) | bits
    assert search._word_grams(words) == expected


@given(text=st.text(max_size=60))
def test_the_words_are_the_runs_of_punctuation_and_of_the_rest(text):
    """RUNS cuts at white space and where ASCII punctuation starts or ends, whichever of its two runs comes first."""
    import re

    punctuation = "!-/:-@\\[-`{-~"
    runs = re.findall(f"[{punctuation}]+|[^\\s{punctuation}]+", text)
    assert search.RUNS.findall(text) == runs
    assert "".join(runs) == "".join(text.split())


@given(entries=st.lists(ENTRY, max_size=6), other=st.lists(ENTRY, max_size=6), language=st.sampled_from(["en", "zh"]))
def test_two_indexes_share_a_digest_only_when_they_are_the_same(entries, other, language):
    same = search.entries_digest(language, entries) == search.entries_digest("en", other)
    assert same == ((language, entries) == ("en", other))


def test_a_field_boundary_moved_changes_the_digest():
    one = [{"p": "a.html", "a": "", "t": "ab", "c": "A", "x": "c"}]
    two = [{"p": "a.html", "a": "", "t": "a", "c": "A", "x": "bc"}]
    assert search.entries_digest("en", one) != search.entries_digest("en", two)
    assert search.entries_digest("en", one + two) != search.entries_digest("en", [dict(one[0], x="c\x00")] + two)
