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

_FONT_SIZE = 24.0  # ziamath's default size, in SVG user units per em: dimensions are divided by it to give ems
_SVG_BOX = re.compile(r'<svg[^>]*?\bwidth="([\d.]+)"[^>]*?\bheight="([\d.]+)"[^>]*?\bviewBox="([-\d.]+) ([-\d.]+) ')


def math_html(latex: str, display: bool, svg: bool = False, in_paragraph: bool = False) -> str:
    """The formula as HTML: MathML, or (`svg`) an image of it; LaTeX that does not convert is shown as code.
    Display math `in_paragraph` (`$$...$$` inside a line) is a block-styled span: a paragraph holds no div."""
    try:
        body = _svg_image(latex, display) if svg else to_mathml(latex, display)
    except MathError:
        code = html_lib.escape(latex.strip())
        if display and not in_paragraph:
            return f'<pre class="math-error"><code>{code}</code></pre>\n'
        return f'<code class="math-error">{code}</code>'
    if in_paragraph:
        return f'<span class="math display">{body}</span>'
    if display:
        return f'<div class="math display">{body}</div>\n'
    return f'<span class="math inline">{body}</span>'


@lru_cache(maxsize=4096)
def _svg_image(latex: str, display: bool) -> str:
    """An `<img>` of the formula as a `data:` SVG, sized in ems so it follows the text, its baseline on the line's."""
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
    return f'<img class="math" src="data:image/svg+xml;base64,{data}" alt="{html_lib.escape(latex.strip())}" style="{style}">'
