"""Where the parser follows the GFM spec (0.29) over markdown-it-py's defaults (tools/markdown/gfm_rules.py): inline HTML
comments, front matter only when it is a YAML mapping; and how a processing instruction ends (tools/markdown/html_sanitize.py)."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings, strategies as st

from tools.markdown.gfm_rules import comment_029
from tools.markdown.html_sanitize import clean_html
from tools.markdown.parser import create_markdown

MD = create_markdown(())
# The GFM spec 0.29's HTML comment: `<!--` + text + `-->`, the text not starting with `>` or `->`, not ending with
# `-` and holding no `--`.
SPEC_COMMENT = re.compile(r"<!---->|<!--(?:-?[^>-])(?:-?[^-])*-->")


@settings(deadline=None)
@given(st.lists(st.sampled_from(["<!--", "-->", "-", ">", "a", " ", "--", "<", "!"]), max_size=8).map("".join))
def test_a_comment_is_what_the_spec_calls_one(text):
    assert comment_029(text) == bool(SPEC_COMMENT.fullmatch(text))


@pytest.mark.parametrize("markdown,shown", [
    ("foo <!-- a -- b --> bar", "<p>foo &lt;!-- a -- b --&gt; bar</p>"),
    ("foo <!--> bar -->", "<p>foo &lt;!--&gt; bar --&gt;</p>"),
    ("foo <!---> bar -->", "<p>foo &lt;!---&gt; bar --&gt;</p>"),
    ("foo <!-- a - b --> bar", "<p>foo <!-- a - b --> bar</p>"),
    ("foo <!----> bar", "<p>foo <!----> bar</p>"),
])
def test_inline_comments_follow_the_spec(markdown, shown):
    assert MD.render(markdown).strip() == shown


@pytest.mark.parametrize("markdown,types", [
    ("---\ntitle: A\ntags: [x]\n---\n# Body\n", ["front_matter", "heading_open"]),
    ("---\nFoo\n---\nBar\n---\nBaz\n", ["hr", "heading_open", "heading_open", "paragraph_open"]),
    ("---\n---\n", ["hr", "hr"]),
    ("---\n- a\n- b\n---\n", ["hr", "bullet_list_open", "hr"]),
    ("---\na: [unclosed\n---\ntext\n", ["hr", "heading_open", "paragraph_open"]),
    ("---\nkey: value\n...\ntext\n", ["front_matter", "paragraph_open"]),
])
def test_front_matter_only_when_a_yaml_mapping(markdown, types):
    tokens = MD.parse(markdown, {})
    assert [t.type for t in tokens if t.nesting >= 0 and t.level == 0 and t.type != "inline"] == types


@settings(deadline=None)  # the first example imports PyYAML
@given(st.lists(st.sampled_from(["---", "\n", "a", ": ", "- ", "[", "{", "&x", "*y", "!!python/object:os.system", "..."]), max_size=12).map("".join))
def test_any_file_that_begins_with_dashes_parses(text):
    tokens = MD.parse("---\n" + text, {})
    assert all(token.type != "front_matter" or isinstance(token.content, str) for token in tokens)


def test_a_processing_instruction_ends_at_its_first_greater_than_sign():
    """As a browser (and github.com) reads it: `<?php echo '>'; ?>` shows `'; ?>`; nothing after it is markup."""
    assert clean_html("<?php\n\n  echo '>';\n\n?>\n") == "';\n\n?>\n"
    cleaned = clean_html("<?x > <script>alert(1)</script> ?>")
    assert "<script" not in cleaned and "alert(1)" in cleaned
