"""The pages of the last build of a running `tools serve` (`PageMemo`): what `site_files` (tools/render/site/write.py)
needs not make again when a chapter changes."""
from __future__ import annotations

from collections.abc import Callable

from tools.serve.search_memo import SearchMemo


class PageMemo:
    """The pages of the last build of a running `tools serve`: a page whose template and inputs are those of the
    last build is not rendered again (a template's output depends on its inputs only; the `book` they carry is read
    by no template)."""

    def __init__(self) -> None:
        self.last: dict[str, tuple[str, dict, bytes]] = {}
        self.navs: dict[tuple[str, str], list[dict]] = {}  # a page's navigation, for the tree and pages of `nav_key`
        self.nav_key = ""
        self.search = SearchMemo()  # the split search index, updated section by section

    def nav(self, key: str, page: str, current: str, make: Callable[[], list[dict]]) -> list[dict]:
        """A page's navigation: the last build's when the chapters' tree and pages (`key`) are the same."""
        if key != self.nav_key:
            self.navs, self.nav_key = {}, key
        found = self.navs.get((page, current))
        if found is None:
            found = self.navs[page, current] = make()
        return found

    def render(self, page: str, template, context: dict) -> bytes:
        inputs = {name: value for name, value in context.items() if name != "book"}
        old = self.last.get(page)
        if old is not None and old[0] == template.name and old[1] == inputs:
            return old[2]
        html = template.render(context).encode()
        self.last[page] = (template.name, inputs, html)
        return html
