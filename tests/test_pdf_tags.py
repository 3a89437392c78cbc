"""The PDF is tagged (PDF/UA-1): its structure tree, read with pypdf, has every chapter's heading on the page that
prints it, lists, tables (header cells with their scope), figures with their alt text, and one parent tree whose keys
every page and link uses once; pdfua finds no error, and the PDF claims PDF/UA-1 unless an image lacks alt text; on
the chapter-at-a-time route (the parts' trees merged) and on one render of the whole document."""
from __future__ import annotations

import io
from pathlib import Path

import pytest

from conftest import REPO, run_tools, write_book
from pdf_check import PdfReport
from validators import pdfua_errors, ua_claimed


def _png() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (60, 40), (30, 60, 120)).save(buffer, format="PNG")
    return buffer.getvalue()


TITLES = ["Welcome Aboard", "Gradient Descent", "Serving Models"]
CHAPTERS = {
    "intro.md": "# Welcome Aboard\n\nSee [serving](serve.md#batching) later.\n\n## Who reads this\n\nEveryone.\n\n"
                "- first item\n- second item\n- third item\n",
    "train.md": "# Gradient Descent\n\n![A loss curve going down](img/loss.png)\n\n## The update rule\n\n"
                "The step is $w - \\eta g$ each time.\n\n| Rate | Steps |\n|------|-------|\n| 0.1 | 100 |\n| 0.01 | 1000 |\n",
    "serve.md": "# Serving Models\n\n## Batching\n\nBack to [the start](intro.md).\n\n1. queue\n2. batch\n",
    "img/loss.png": _png(),
}
WHOLE_ONLY = "@page :left { margin-left: 25mm; }\n"  # a page's place in the book: one render of the whole document


def _build(tmp: Path, route: str, changed: dict | None = None) -> Path:
    files: dict = {**CHAPTERS, **(changed or {})}
    files["book.toml"] = '[book]\ntitle = "Tagged Book"\nlanguage = "fr"\n'
    if route == "whole":
        files["book.toml"] += 'theme = "theme"\n'
        files["theme/print.css"] = (REPO / "tools/render/theme/print.css").read_text(encoding="utf-8") + WHOLE_ONLY
    files["chapters-md.txt"] = "intro.md\ntrain.md\nserve.md\n"
    root = write_book(tmp / "book", files)
    out = tmp / "book.pdf"
    result = run_tools(tmp, "build", "pdf", "--book", str(root), "--out", str(out), "--no-cache")
    assert result.returncode == 0, result.stdout + result.stderr
    return out


class Tree:
    """The structure tree's elements in reading order, each as (role, page index or None, element), with checks of
    the links between them made while walking."""

    def __init__(self, report: PdfReport):
        self.report = report
        catalog = report.reader.trailer["/Root"]
        self.root = catalog["/StructTreeRoot"]
        kids = self.root["/K"]
        self.top = kids if isinstance(kids, list) else [kids]
        self.elements: list[tuple[str, int | None, object]] = []
        for kid in self.top:
            self._walk(kid, self.root)

    def _walk(self, reference, parent) -> None:
        element = reference.get_object()
        if element.get("/Type") in ("/OBJR", "/MCR"):
            return
        assert element["/P"].get_object() == parent.get_object(), "an element's /P is the element holding it"
        page = element.get("/Pg")
        index = self.report._page_of(page) if page is not None else None
        self.elements.append((str(element["/S"]), index, element))
        kids = element.get("/K")
        for kid in kids if isinstance(kids, list) else [] if kids is None else [kids]:
            if not isinstance(kid, int):
                self._walk(kid, element)

    def roles(self, role: str) -> list[tuple[int | None, object]]:
        return [(page, element) for name, page, element in self.elements if name == role]

    def parent_tree(self) -> dict[int, object]:
        nums = self.root["/ParentTree"]["/Nums"]
        assert len(nums) % 2 == 0
        keys = [int(key) for key in nums[::2]]
        assert len(set(keys)) == len(keys), "parent tree keys are unique"
        return dict(zip(keys, nums[1::2]))


@pytest.fixture(scope="module", params=["parts", "whole"])
def tagged(request, tmp_path_factory) -> tuple[PdfReport, Tree]:
    report = PdfReport(_build(tmp_path_factory.mktemp(f"tags-{request.param}"), request.param))  # qpdf --check first
    return report, Tree(report)


def test_each_route_is_the_one_asked_for(tagged, request):
    _, tree = tagged
    merged = "/ParentTreeNextKey" in tree.root  # written by the merge; WeasyPrint's own tree leaves it out
    assert merged == ("[parts]" in request.node.name)


def test_the_catalog_says_tagged_language_and_title(tagged):
    report, _ = tagged
    catalog = report.reader.trailer["/Root"]
    assert bool(catalog["/MarkInfo"]["/Marked"])
    assert catalog["/Lang"] == "fr", "the book's language"
    assert bool(catalog["/ViewerPreferences"]["/DisplayDocTitle"])
    assert report.metadata.get("/Title") == "Tagged Book"
    xmp = catalog["/Metadata"].get_object().get_data().decode("utf-8")
    assert "Tagged Book" in xmp and "pdfuaid:part" in xmp


def test_one_document_root_holds_every_chapter_heading_in_order(tagged):
    report, tree = tagged
    assert len(tree.top) == 1 and tree.top[0].get_object()["/S"] == "/Document"
    assert sum(1 for name, _, _ in tree.elements if name == "/Document") == 1
    headings = [page for page, _ in tree.roles("/H1")]
    assert len(headings) == len(TITLES) + 2  # the cover's and the contents' titles too
    assert headings == sorted(headings) and len(set(headings)) == len(headings)
    chapters = headings[-len(TITLES):]
    for title, page in zip(TITLES, chapters):
        assert page is not None and title in report.text(page), f"{title!r} is printed on its H1's page"
    subheadings = [page for page, _ in tree.roles("/H2")]
    for title, page in zip(["Who reads this", "The update rule", "Batching"], subheadings[-3:]):
        assert page is not None and title in report.text(page)


def test_lists_tables_and_figures_are_tagged(tagged):
    _, tree = tagged
    roles = {name for name, _, _ in tree.elements}
    assert {"/L", "/LI", "/Table", "/TR", "/TH", "/TD", "/Figure"} <= roles
    assert len(tree.roles("/LI")) >= 5  # three bullets and two numbered items at least
    alts = [str(element.get("/Alt", "")) for _, element in tree.roles("/Figure")]
    assert alts == ["A loss curve going down"]  # a formula is a drawing behind its LaTeX as text, not a figure
    assert "w - \\eta g" in "".join(page.extract_text() for page in tree.report.reader.pages)


def test_both_routes_pass_pdfua_with_scoped_headers_and_claim_pdf_ua(tagged):
    report, tree = tagged
    assert pdfua_errors(report.path) == []
    assert [str(element["/A"].get("/Scope")) for _, element in tree.roles("/TH")] == ["/Column", "/Column"]
    assert ua_claimed(report.path)


@pytest.mark.parametrize("route", ["parts", "whole"])
def test_an_image_without_alt_text_drops_the_claim_on_both_routes(route, tmp_path):
    out = _build(tmp_path, route, {"serve.md": CHAPTERS["serve.md"] + "\n![](img/loss.png)\n"})
    assert not ua_claimed(out)
    assert [e for e in pdfua_errors(out) if e.startswith("UA-13-004")], "the figure without /Alt is what pdfua reports"


def test_pages_and_links_have_their_own_parent_tree_keys(tagged):
    report, tree = tagged
    parents = tree.parent_tree()
    keys = [page.get("/StructParents") for page in report.reader.pages]
    assert None not in keys and len(set(keys)) == len(keys)
    for index, key in enumerate(keys):
        marked = parents[key]
        for element in marked.get_object():  # each marked content's element is on this page
            assert report._page_of(element.get_object().get("/Pg")) == index
    annotation_keys = [annotation.get_object()["/StructParent"] for page in report.reader.pages
                       for annotation in page.get("/Annots", [])]
    assert annotation_keys, "the links between chapters are annotations"
    assert len(set(annotation_keys)) == len(annotation_keys) and not set(annotation_keys) & set(keys)
    for key in annotation_keys:
        assert parents[key].get_object()["/S"] == "/Link"
    assert int(tree.root.get("/ParentTreeNextKey", max(parents) + 1)) > max(parents)
