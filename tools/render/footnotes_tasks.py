"""Footnotes and task-list checkboxes as GitHub renders them, from the tokens of mdit-py-plugins' footnote and
tasklists plugins (their parse is kept; only the HTML differs).

GitHub shows a reference as a bare superscript number, the notes in a section at the end under a "Footnotes" heading
that only screen readers read (`sr-only`), and one `↩` back link per reference (the second one `↩2`). Every id goes
through the format's `id_for`, so the PDF, one document of all chapters, prefixes them with their chapter.
"""
from __future__ import annotations

import html
from collections.abc import Callable, Sequence

from markdown_it.token import Token

IdFor = Callable[[str], str]
BACK_ARROW = "\u21a9"  # ↩, as GitHub writes it


def _number(token: Token) -> str:
    return str(token.meta["id"] + 1)  # footnotes are numbered in order of their first reference


def _ref_id(token: Token) -> str:
    sub = token.meta.get("subId", 0) or 0
    return f"fnref-{_number(token)}" + (f"-{sub + 1}" if sub > 0 else "")


def _id(id_for: IdFor, anchor: str) -> str:
    return html.escape(id_for(anchor))


def footnote_ref(token: Token, id_for: IdFor) -> str:
    number = _number(token)
    return (f'<sup><a href="#{_id(id_for, "fn-" + number)}" id="{_id(id_for, _ref_id(token))}" class="footnote-ref" '
            f'data-footnote-ref="" aria-label="Footnote {number}">{number}</a></sup>')


def footnote_block_open(heading: bool) -> str:
    """The notes' section. Its hidden label has no id (every heading with an id in the site has a permalink, which a
    hidden one cannot show), so references carry their own `aria-label` where GitHub points at it; without `heading`
    (the EPUB, whose navigation lists every h2 of a chapter) the label is a paragraph."""
    tag = "h2" if heading else "p"
    return f'<section class="footnotes" data-footnotes="">\n<{tag} class="sr-only">Footnotes</{tag}>\n<ol>\n'


def footnote_block_close() -> str:
    return "</ol>\n</section>\n"


def footnote_open(token: Token, id_for: IdFor) -> str:
    return f'<li id="{_id(id_for, "fn-" + _number(token))}">'


def footnote_anchor(token: Token, id_for: IdFor) -> str:
    sub = token.meta.get("subId", 0) or 0
    label = _number(token) + (f"-{sub + 1}" if sub > 0 else "")
    mark = BACK_ARROW + (f"<sup>{sub + 1}</sup>" if sub > 0 else "")
    return (f' <a href="#{_id(id_for, _ref_id(token))}" class="footnote-backref" data-footnote-backref="" '
            f'aria-label="Back to reference {label}">{mark}</a>')


_CHECKBOX = '<input class="task-list-item-checkbox"'


def is_task_checkbox(tokens: Sequence[Token], idx: int) -> bool:
    """Whether `tokens[idx]` is the checkbox the tasklists plugin put first in a task item. An author's own raw
    `<input>` is never one: every raw-HTML token of the source carries its `span` (tools/markdown/parser.py)."""
    token = tokens[idx]
    return idx == 0 and "span" not in token.meta and token.content.startswith(_CHECKBOX)


def task_checkbox(token: Token, xhtml: bool, glyphs: bool) -> str:
    """A disabled checkbox, as GitHub shows it; the PDF draws ☑/☐ (WeasyPrint lays an `<input>` out as a block)."""
    checked = 'checked="checked"' in token.content
    if glyphs:
        return f'<span class="task-list-item-checkbox">{"☑" if checked else "☐"}</span>'
    mark = ' checked="checked"' if checked else ""
    if xhtml:
        return f'<input type="checkbox" class="task-list-item-checkbox" disabled="disabled"{mark}/>'
    return f'<input type="checkbox" class="task-list-item-checkbox" disabled="disabled"{mark}>'
