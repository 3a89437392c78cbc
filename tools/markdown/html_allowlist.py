"""The raw HTML GitHub shows: its elements, attributes and URL schemes.

Where this comes from:
- the elements and attributes of html-pipeline's `SanitizationFilter` (github.com/gjtorikian/html-pipeline,
  lib/html_pipeline/sanitization_filter.rb, DEFAULT_CONFIG), the filter github.com's own sanitizer grew from;
- what github.com does today, as recorded by rehype-github (github.com/rehypejs/rehype-github,
  packages/sanitize-schema/test/fixtures/tag-names.html): it also keeps `picture`, `source` (with `srcset`,
  `media`), `section` and `mark`;
- cmark-gfm's tagfilter extension (the GFM spec, "Disallowed Raw HTML"): these elements are escaped, so their text
  shows.
"""
from __future__ import annotations

ELEMENTS = frozenset("""
    h1 h2 h3 h4 h5 h6 br b i strong em a pre code img tt div ins del sup sub p ol ul table thead tbody tfoot
    blockquote dl dt dd kbd q samp var hr ruby rt rp li tr td th s strike summary details caption figure figcaption
    abbr bdo cite dfn mark small span time wbr picture source section
""".split())

# cmark-gfm's tagfilter: escaped rather than removed, on GitHub too.
TAGFILTER = frozenset("title textarea style xmp iframe noembed noframes script plaintext".split())

GLOBAL_ATTRIBUTES = frozenset("""
    abbr accept accept-charset accesskey action align alt aria-describedby aria-hidden aria-label aria-labelledby
    axis border cellpadding cellspacing char charoff charset checked clear cols colspan color compact coords datetime
    dir disabled enctype for frame headers height hreflang hspace id ismap label lang maxlength media method multiple
    name nohref noshade nowrap open progress prompt readonly rel rev role rows rowspan rules scope selected shape size
    span start summary tabindex title type usemap valign value width itemprop
""".split())

ELEMENT_ATTRIBUTES = {
    "a": frozenset({"href"}),
    "img": frozenset({"src", "longdesc"}),
    "div": frozenset({"itemscope", "itemtype"}),
    "blockquote": frozenset({"cite"}),
    "del": frozenset({"cite"}),
    "ins": frozenset({"cite"}),
    "q": frozenset({"cite"}),
    "source": frozenset({"srcset", "media", "sizes"}),  # `<picture>` light and dark images
}

# Schemes a URL attribute may carry; a relative URL (no scheme) is always allowed.
_WEB = frozenset({"http", "https"})
PROTOCOLS = {
    "href": frozenset({"http", "https", "mailto", "xmpp", "irc", "ircs"}),
    "src": _WEB | {"data-image"},  # `data:image/...` only; never `data:text/html`
    "srcset": _WEB | {"data-image"},
    "longdesc": _WEB,
    "cite": _WEB,
    "itemtype": _WEB,
}

# The EPUB is XHTML 5, which rejects HTML 4's presentational attributes (epubcheck RSC-005): there a raw-HTML
# element keeps only these (`align` becomes a `text-align` style, `<a name>` an id; see tools/markdown/html_sanitize.py).
XHTML_GLOBAL = frozenset({"id", "title", "lang", "dir", "aria-label"})
XHTML_ATTRIBUTES = {
    "a": frozenset({"href", "hreflang", "name"}),
    "img": frozenset({"src", "alt", "width", "height"}),
    "source": frozenset({"srcset", "media", "sizes", "type"}),
    "td": frozenset({"colspan", "rowspan", "headers"}),
    "th": frozenset({"colspan", "rowspan", "headers", "scope", "abbr"}),
    "ol": frozenset({"start", "reversed"}),
    "li": frozenset({"value"}),
    "details": frozenset({"open"}),
    "blockquote": frozenset({"cite"}),
    "q": frozenset({"cite"}),
    "del": frozenset({"cite", "datetime"}),
    "ins": frozenset({"cite", "datetime"}),
    "time": frozenset({"datetime"}),
}
XHTML_INTEGER = frozenset({"width", "height", "colspan", "rowspan", "start", "value"})  # digits only, or dropped
XHTML_BOOLEAN = frozenset({"open", "reversed"})
TEXT_ALIGN = frozenset({"div", "p", "h1", "h2", "h3", "h4", "h5", "h6", "td", "th", "summary", "section", "figure", "caption"})


def allowed_attribute(tag: str, name: str) -> bool:
    return name in GLOBAL_ATTRIBUTES or name in ELEMENT_ATTRIBUTES.get(tag, ())


def xhtml_attribute(tag: str, name: str) -> bool:
    return name in XHTML_GLOBAL or name in XHTML_ATTRIBUTES.get(tag, ())


# Every element name of HTML (the HTML Living Standard's, with the obsolete ones browsers still know, as lxml's
# `lxml.html.defs.tags` lists them, plus a few it lacks). One that GitHub leaves out loses its tag and keeps its
# text, on GitHub and in the book; any other name (`<jobid>`, `<your-file>`) is a placeholder an author meant as
# text: it is escaped so it shows. Written out here so that checking a chapter imports no lxml.
HTML_ELEMENTS = frozenset("""a abbr acronym address applet area article aside audio b base basefont bdi bdo big blink
blockquote body br button canvas caption center cite code col colgroup command data datalist dd del details dfn
dialog dir div dl dt em embed fieldset figcaption figure font footer form frame frameset h1 h2 h3 h4 h5 h6 head
header hgroup hr html i iframe image img input ins isindex kbd keygen label legend li link listing main map mark
marquee math menu meta meter nav nobr noscript object ol optgroup option output p param picture pre progress q rp
rt ruby s samp script search section select slot small source span strike strong style sub summary sup svg table
tbody td template textarea tfoot th thead time title tr track tt u ul var video wbr""".split())


def html_elements() -> frozenset[str]:
    return HTML_ELEMENTS
