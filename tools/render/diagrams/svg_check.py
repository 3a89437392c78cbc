"""What a drawn diagram may hold before it goes into a page, checked in Python after the browser is done.

The browser already strips scripts, handlers and links out of mermaid's SVG, but that runs beside a mermaid.js that
may come from the book's own folder, so its result is checked again here, where no script can interfere: SVG
drawing elements only (and `<a>`, which mermaid keeps around a node with a `click` link), no event handler, links to ids inside the drawing only, and styles that load nothing.
"""
from __future__ import annotations

import re
from xml.etree import ElementTree

SVG_ELEMENTS = frozenset("""svg g defs style title desc path rect circle ellipse line polyline polygon text tspan textPath
a marker use symbol clipPath mask pattern linearGradient radialGradient stop filter feBlend feColorMatrix
feComponentTransfer feComposite feFlood feGaussianBlur feMerge feMergeNode feMorphology feOffset feDropShadow
feFuncA feFuncB feFuncG feFuncR switch""".split())
LOADING_STYLE = re.compile(r"@import|image-set\(|expression\(|\\|url\(\s*(?!['\"]?#)", re.I)


def _local(name: str) -> str:
    return name.rpartition("}")[2]


def unsafe_svg(svg: str) -> str | None:
    """Why the SVG may not go into a page (a sentence's end), or None when it may."""
    try:
        root = ElementTree.fromstring(svg)
    except ElementTree.ParseError:
        return "it is not well-formed SVG"
    for element in root.iter():
        name = _local(str(element.tag))
        if name not in SVG_ELEMENTS:
            return f"it holds a <{name}> element"
        if name == "style" and LOADING_STYLE.search(element.text or ""):
            return "its style would load something"
        for attr, value in element.attrib.items():
            attr = _local(attr).lower()
            if attr.startswith("on"):
                return f"it has an event handler ({attr})"
            if attr == "href" and not value.startswith("#"):
                return "it links outside the drawing"
            if attr == "style" and LOADING_STYLE.search(value):
                return "its style would load something"
    return None
