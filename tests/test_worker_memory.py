"""What keeps the memory of a long build down: forked workers that never walk what they inherit, the print HTML
held packed, and PDF workers ended as soon as nothing is left for them."""
from __future__ import annotations

import gc

from hypothesis import given, strategies as st

from tools.core.parallel import Workers, can_fork
from tools.render.pdf import schedule
from tools.render.pdf.job import PackedTexts


def _frozen_in_worker(_request):
    return gc.get_freeze_count()


def test_a_forked_worker_never_walks_what_it_inherits_and_this_process_still_does():
    if not can_fork():
        return
    inherited = [{"chapter": n} for n in range(1000)]  # noqa: F841 - objects the worker inherits
    workers = Workers(_frozen_in_worker)
    workers.start(1)
    try:
        assert gc.get_freeze_count() == 0  # here everything stays collectable
        workers.send(0, "count")
        assert workers.gather([0])[0] > 1000
    finally:
        workers.close()


@given(st.dictionaries(st.text(max_size=20), st.text(alphabet=st.characters(), max_size=300), max_size=8))
def test_packed_texts_give_each_text_back_exactly(texts):
    packed = PackedTexts(texts.items())
    assert len(packed) == len(texts) and set(packed) == set(texts)
    assert all(key in packed and packed[key] == text for key, text in texts.items())
    assert dict(packed) == texts


def test_packed_texts_keep_a_lone_surrogate():
    text = "bytes that were not UTF-8: \udcff\udc80 and an emoji \U0001f600"
    assert PackedTexts([("a.md", text)])["a.md"] == text


class _Channel(schedule._Forked):
    def __init__(self):  # no process: only what release_idle looks at
        self.closed = False

    def close(self, failed: bool = False) -> None:
        self.closed = True


def test_a_pdf_worker_with_no_request_and_no_part_to_write_is_ended():
    pool = schedule._Pool(job=None, jobs=3)
    idle, writing, asked = _Channel(), _Channel(), _Channel()
    pool.channels = [idle, writing, asked]
    pool.owner = {0: idle, 1: writing, 2: asked, -1: asked}
    pool.busy = {id(idle): 0, id(writing): 0, id(asked): 1}
    pool.release_idle(["done", "writing", "done"])
    assert idle.closed and not writing.closed and not asked.closed
    assert pool.channels == [writing, asked]


def test_a_worker_does_its_after_work_once_the_reply_is_sent_and_before_it_ends(tmp_path):
    """`Workers(after=...)`: the reply does not wait for `after()` (a chapter worker's cache entries), `close` does,
    and an `after()` that fails changes nothing the main process sees."""
    import os
    import time

    if not can_fork():
        return
    done = tmp_path / "after"

    def after():
        if done.exists():
            raise RuntimeError("dropped: the worker goes on")
        time.sleep(1.0)
        done.write_text(str(os.getpid()))

    pool = Workers(lambda request: request * 2, after=after)
    pool.start(1)
    try:
        pool.send(0, 21)
        assert pool.gather([0]) == {0: 42}
        assert not done.exists()  # replied before its after-work
        pool.send(0, 2)
        assert pool.gather([0]) == {0: 4}  # after the first after(); the second one fails, unseen
    finally:
        pool.stop()
        pool.close()
    assert done.read_text() != str(os.getpid())  # written by the worker, before close() returned


def test_a_worker_ended_while_it_writes_its_cache_entries_leaves_no_temporary_file(tmp_path, monkeypatch):
    """`Cache.flush` holds SIGTERM back until the entries are written: the main process ending its workers (a failure,
    Ctrl-C) while they write leaves whole entries and no `.tmp-*` file in the cache."""
    import os
    import time

    from tools.core.cache import Cache

    if not can_fork():
        return
    writing = tmp_path / "writing"
    real_replace = os.replace

    def slow_replace(source, destination):  # the temporary file exists: the worker is ended now
        writing.touch()
        time.sleep(0.5)
        real_replace(source, destination)

    monkeypatch.setattr(os, "replace", slow_replace)
    cache = Cache(tmp_path / "cache")

    def handler(request):
        cache.hold()
        cache.put("chapter", "k", "v" * 1000)
        return "ok"

    pool = Workers(handler, after=cache.flush)
    pool.start(1)
    try:
        pool.send(0, 1)
        assert pool.gather([0]) == {0: "ok"}
        deadline = time.monotonic() + 10
        while not writing.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert writing.exists()
    finally:
        pool.close(failed=True)  # SIGTERM in the middle of the write
    monkeypatch.undo()
    assert not [p.name for p in (tmp_path / "cache").rglob(".tmp-*")]
    assert Cache(tmp_path / "cache").get("chapter", "k") == "v" * 1000
