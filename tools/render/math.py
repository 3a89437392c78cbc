"""Math rendered at build time, no script in any output: MathML for the site and the EPUB (browsers and reading
systems lay it out), SVG for the PDF (WeasyPrint does not lay out MathML), drawn by ziamath with its own math font.

LaTeX that cannot be converted is shown as code; `collect` reported it with its line (tools/markdown/math.py).
"""
from __future__ import annotations

import base64
import html as html_lib
import re
from functools import lru_cache

from tools.markdown.math import MathError, converter_latex, to_mathml

_MONO_ADVANCE = 0.61  # DejaVu Sans Mono's advance and ascent, in ems (print.css sets it for `.math-text`, line-height 1)
_ASCENT = 0.86
_FONT_SIZE = 24.0  # ziamath's default size, in SVG user units per em: dimensions are divided by it to give ems
_SVG_BOX = re.compile(r'<svg[^>]*?\bwidth="([\d.]+)"[^>]*?\bheight="([\d.]+)"[^>]*?\bviewBox="([-\d.]+) ([-\d.]+) ')


def math_html(latex: str, display: bool, svg: bool = False, in_paragraph: bool = False, labelled: bool = False) -> str:
    """The formula as HTML: MathML, or (`svg`) an image of it; LaTeX that does not convert is shown as code.
    Display math `in_paragraph` (`$$...$$` inside a line) is a block-styled span: a paragraph holds no div.
    `labelled`: the MathML's span is named by the LaTeX (role="math"), for a header cell that holds only math."""
    try:
        body = _svg_image(latex, display) if svg else to_mathml(latex, display)
    except MathError:
        code = html_lib.escape(latex.strip())
        if display and not in_paragraph:
            return f'<pre class="math-error"><code>{code}</code></pre>\n'
        return f'<code class="math-error">{code}</code>'
    label = f' role="math" aria-label="{html_lib.escape(latex.strip())}"' if labelled and not svg else ""
    if in_paragraph:
        return f'<span class="math display"{label}>{body}</span>'
    if display:
        return f'<div class="math display">{body}</div>\n'
    return f'<span class="math inline"{label}>{body}</span>'


@lru_cache(maxsize=4096)
def _svg_image(latex: str, display: bool) -> str:
    """The formula drawn as a `data:` SVG background, sized in ems so it follows the text, its baseline on the line's;
    inside it, its LaTeX as transparent text sized to the drawing's width. WeasyPrint paints a background as an
    artifact and tags the text: a PDF reader's search, copy and screen reader find the formula's text where it is
    drawn, and a tagged Figure without words is not needed (print.css styles `.math-image` and `.math-text`)."""
    import ziamath

    to_mathml(latex, display)  # the same errors as the site and the EPUB
    try:
        svg = ziamath.Latex(converter_latex(latex), inline=not display).svg()
    except Exception as exc:  # noqa: BLE001 - a layout failure of ziamath is shown as code, like a LaTeX error
        raise MathError(str(exc)) from None
    box = _SVG_BOX.search(svg)
    if box is None:
        raise MathError("no drawing")
    width, height, _, top = (float(value) for value in box.groups())
    depth = height + top  # the baseline is at y = 0; below it lies height + top
    style = f"width:{width / _FONT_SIZE:.3f}em;height:{height / _FONT_SIZE:.3f}em;vertical-align:{-depth / _FONT_SIZE:.3f}em"
    data = base64.b64encode(svg.encode()).decode()
    text = " ".join(latex.split())
    size = max(0.01, min(0.5, 0.95 * width / _FONT_SIZE / (_MONO_ADVANCE * max(len(text), 1))))  # narrower than the drawing
    above = max(0.0, (height - depth) / _FONT_SIZE - _ASCENT * size)  # from the box's top to the text's top: on the line's baseline
    return (f'<span class="math-image" style="{style};background-image:url(data:image/svg+xml;base64,{data})">'
            f'<span class="math-text" style="font-size:{size:.3f}em;top:{above / size:.3f}em">{html_lib.escape(text)}</span></span>')
