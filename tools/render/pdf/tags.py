"""The PDF's structure tree (tagged PDF, PDF/UA-1) on the chapter-at-a-time route: what WeasyPrint tagged in one
part (`struct_of`), and the parts' trees merged into one (`TreeMerge`): one Document element holding every part's
top elements in book order, one parent tree whose keys (each page's `/StructParents`, each annotation's
`/StructParent`) are shifted past the keys of the parts merged before it (the parts come in any order: keys are
unique, elements in book order)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

PDF_VARIANT = "pdf/ua-1"  # both routes ask WeasyPrint for it: tags, and the XMP metadata with the title
TAGGED_CATALOG = ("StructTreeRoot", "MarkInfo", "ViewerPreferences", "Metadata")  # what the merge makes for the book

_STRUCT_PARENT = re.compile(rb"\((?:\\.|[^\\)])*\)|(/StructParents? )(\d+)", re.DOTALL)
_CELL_ID = re.compile(rb"\((\d+-\d+-\d+)\)")  # WeasyPrint's table header ids: object number within the part, row, column
_UA_CLAIM = re.compile(rb'\s*pdfuaid:part="\d+"')  # WeasyPrint's XMP: `<rdf:Description rdf:about="" pdfuaid:part="1" />`


def finish_tags(pdf) -> int:
    """What PDF/UA asks of WeasyPrint's structure tree and WeasyPrint leaves out, added to the pydyf PDF before it is
    written: each table header cell's `/Scope` (Column in a header row, Row in a body row after the first). Returns
    how many Figures have neither `/Alt` nor `/ActualText`: WeasyPrint gives an image its alt text and an SVG its
    `<title>`; one without either makes the PDF fall short of PDF/UA (`BookWriter.finish`, `ua_claimed`)."""
    import pydyf

    objects = {obj.number: obj for obj in pdf.objects if obj.number is not None}
    unlabelled = 0
    for obj in pdf.objects:
        if not isinstance(obj, pydyf.Dictionary) or isinstance(obj, pydyf.Stream) or obj.get("Type") != "/StructElem":
            continue
        role = obj.get("S")
        if role == "/Figure" and not obj.get("Alt") and not obj.get("ActualText"):
            unlabelled += 1
        elif role == "/TH" and isinstance(obj.get("A"), dict) and "Scope" not in obj["A"]:
            row = objects.get(_number(obj["P"])) if "P" in obj else None
            section = objects.get(_number(row["P"])) if isinstance(row, dict) and "P" in row else None
            ident = obj.get("ID")
            first_row = isinstance(ident, pydyf.String) and str(ident.string).split("-")[1:2] == ["0"]
            in_header = isinstance(section, dict) and section.get("S") == "/THead"
            obj["A"]["Scope"] = "/Column" if in_header or first_row else "/Row"
    return unlabelled


def finish_whole(pdf) -> int:
    """`finish_tags` for one render of the whole document (WeasyPrint's `finisher`), and its XMP's PDF/UA claim
    removed when a Figure has no words; returns how many have none."""
    unlabelled = finish_tags(pdf) if "StructTreeRoot" in pdf.catalog else 0
    if unlabelled and "Metadata" in pdf.catalog:
        metadata = next(obj for obj in pdf.objects if obj.number == _number(pdf.catalog["Metadata"]))
        metadata.stream = [_UA_CLAIM.sub(b"", b"".join(bytes(part) for part in metadata.stream))]
    return unlabelled


def without_ua_claim(head: bytes, stream: bytes) -> tuple[bytes, bytes]:
    """The XMP metadata stream (dictionary, data) without `pdfuaid:part`: a PDF that is not PDF/UA does not say it is."""
    import zlib

    packed = b"/FlateDecode" in head
    text = _UA_CLAIM.sub(b"", zlib.decompress(stream) if packed else stream)
    data = zlib.compress(text) if packed else text
    return re.sub(rb"/Length \d+", b"/Length %d" % len(data), head, count=1), data


@dataclass
class StructPart:
    """One part's structure tree, numbered within the part."""

    root: int  # the part's StructTreeRoot, its parent tree and Document element: replaced by the book's
    parent_tree: int
    document: int
    kids: list[int]  # the Document element's children, in order
    nums: list[tuple[int, bytes]]  # parent tree: key -> an array of references (a page's marked content) or one
    keys: int  # how many keys the part uses (0 to keys - 1)
    carriers: list[int]  # the objects holding /StructParents or /StructParent
    objrs: dict[int, int]  # annotation -> the object reference (OBJR) that puts it in the tree
    cells: list[int]  # table cells holding a header id or a list of them
    metadata: int = 0  # the XMP metadata stream
    unlabelled: int = 0  # Figures without /Alt or /ActualText (an image without alt text): the book is not PDF/UA then
    role_map: dict[str, bytes] = field(default_factory=dict)
    class_map: dict[str, bytes] = field(default_factory=dict)


def _number(reference) -> int:
    return int(bytes(reference).split()[0]) if not isinstance(reference, int) else reference


def struct_of(pdf) -> StructPart | None:
    """What WeasyPrint's `add_tags` made in the pydyf PDF of a part, or None for an untagged part."""
    import pydyf

    if "StructTreeRoot" not in pdf.catalog:
        return None
    objects = {obj.number: obj for obj in pdf.objects if obj.number is not None}
    root = objects[_number(pdf.catalog["StructTreeRoot"])]
    parent_tree = objects[_number(root["ParentTree"])]
    document = objects[_number(root["K"][0])]
    flat = list(parent_tree["Nums"])
    nums = [(int(key), pydyf._to_bytes(value)) for key, value in zip(flat[::2], flat[1::2])]
    carriers, objrs, cells = [], {}, []
    for obj in pdf.objects:
        if not isinstance(obj, pydyf.Dictionary) or isinstance(obj, pydyf.Stream):
            continue
        if "StructParents" in obj or "StructParent" in obj:
            carriers.append(obj.number)
        if obj.get("Type") == "/OBJR":
            objrs[_number(obj["Obj"])] = obj.number
        if "ID" in obj or (isinstance(obj.get("A"), dict) and "Headers" in obj["A"]):
            cells.append(obj.number)

    def mapping(name: str) -> dict[str, bytes]:
        found = root.get(name)
        return {str(key): pydyf._to_bytes(value) for key, value in found.items()} if isinstance(found, dict) else {}

    metadata = _number(pdf.catalog["Metadata"]) if "Metadata" in pdf.catalog else 0
    return StructPart(root.number, parent_tree.number, document.number, [_number(kid) for kid in document["K"]], nums,
                      max((key for key, _ in nums), default=-1) + 1, carriers, objrs, cells, metadata, 0,
                      mapping("RoleMap"), mapping("ClassMap"))


class TreeMerge:
    """The book's structure tree, filled part by part as the merge renumbers them (`write.BookWriter.add`)."""

    def __init__(self, book) -> None:
        self.book = book
        self.root, self.document, self.parent_tree = book.reserve(), book.reserve(), book.reserve()
        self.kids: dict[int, list[int]] = {}  # part -> its top elements
        self.nums: list[bytes] = []
        self.keys = 0
        self.role_map: dict[str, bytes] = {}
        self.class_map: dict[str, bytes] = {}
        self.metadata = 0  # the front matter's XMP metadata, in the book's numbering

    def replaced(self, tags: StructPart | None, front: bool) -> dict[int, int]:
        """The part's objects the book's tree stands for (not written), and what references to them become."""
        if tags is None:
            return {}
        replaced = {tags.root: self.root, tags.parent_tree: self.parent_tree, tags.document: self.document}
        if tags.metadata and not front:
            replaced[tags.metadata] = 0  # only the front matter's (the book's title) is kept; nothing refers to it
        return replaced

    def dropped(self, tags: StructPart | None, dropped: set[int]) -> set[int]:
        """A dropped link annotation takes its object reference with it (the Link element keeps its text)."""
        if tags is None:
            return dropped
        return dropped | {tags.objrs[number] for number in dropped if number in tags.objrs}

    def edit(self, tags: StructPart | None, index: int):
        """What the merge does to each of the part's values before renumbering: parent tree keys shifted past the earlier
        parts', table header ids made unique in the book."""
        if tags is None:
            return None
        carriers, cells, offset = set(tags.carriers), set(tags.cells), self.keys

        def shift(match: re.Match) -> bytes:
            return match.group(0) if match.group(1) is None else match.group(1) + b"%d" % (int(match.group(2)) + offset)

        def edit(local: int, value: bytes) -> bytes:
            if local in carriers:
                value = _STRUCT_PARENT.sub(shift, value)
            if local in cells:
                value = _CELL_ID.sub(lambda m: b"(%d-%s)" % (index, m.group(1)), value)
            return value

        return edit

    def add(self, tags: StructPart | None, renumber, index: int) -> None:
        """Take part `index`'s top elements and parent tree once the part is renumbered (`renumber(bytes)`); part 0
        is the front matter."""
        if tags is None:
            return
        front = index == 0
        self.kids[index] = [int(renumber(b"%d 0 R" % kid).split()[0]) for kid in tags.kids]
        for key, value in tags.nums:
            self.nums.append(b"%d %s" % (key + self.keys, renumber(value)))
        self.keys += tags.keys
        for name, value in tags.role_map.items():
            self.role_map.setdefault(name, value)
        for name, value in tags.class_map.items():
            self.class_map.setdefault(name, renumber(value))
        if front and tags.metadata:
            self.metadata = int(renumber(b"%d 0 R" % tags.metadata).split()[0])

    def finish(self, catalog: dict, clean=lambda value: value) -> None:
        """Write the tree's objects; `catalog` gets what PDF/UA asks of it. `clean(bytes)`: what removes the
        references to dropped links."""
        import pydyf

        kids = [kid for index in sorted(self.kids) for kid in self.kids[index]]
        self.book.put(self.document, b"<</Type /StructElem /S /Document /P %d 0 R /K [%s]>>" % (
            self.root, b" ".join(b"%d 0 R" % kid for kid in kids)))
        self.book.put(self.parent_tree, b"<</Nums [%s]>>" % clean(b" ".join(self.nums)))
        root = b"<</Type /StructTreeRoot /K [%d 0 R] /ParentTree %d 0 R /ParentTreeNextKey %d" % (
            self.document, self.parent_tree, self.keys)
        for name, entries in (("RoleMap", self.role_map), ("ClassMap", self.class_map)):
            if entries:
                root += b" /%s <<%s>>" % (name.encode(), b" ".join(b"/%s %s" % (key.encode(), value) for key, value in entries.items()))
        self.book.put(self.root, root + b">>")
        catalog["StructTreeRoot"] = b"%d 0 R" % self.root
        catalog["MarkInfo"] = pydyf.Dictionary({"Marked": "true"})
        catalog["ViewerPreferences"] = pydyf.Dictionary({"DisplayDocTitle": "true"})
        if self.metadata:
            catalog["Metadata"] = b"%d 0 R" % self.metadata


_ALT = re.compile(r"""\salt\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE)


def images_without_alt(book) -> list[tuple[str, int, str, bool]]:
    """(chapter, line, destination, decorative) of each image the PDF draws whose alt text is empty: `![](x.png)`,
    or a raw `<img>` without `alt` or with a blank one (`decorative`: `alt=""`, which HTML reads as decoration, but
    which the PDF still draws as a figure without words). Read from the chapter's text at the link (the tokens are
    gone by now); a reference-style image (`![alt][ref]`) is taken to have its words."""
    from tools.book.link_model import LinkKind, TargetKind

    found = []
    for chapter in book.chapters:
        text = chapter.text
        for link in chapter.links:
            target = link.target
            if not link.kind.is_image or link.theme == "dark" or link.offset is None or target is None or target.kind in (TargetKind.EXTERNAL, TargetKind.BROKEN):
                continue
            before = text[:link.offset].rstrip("< \t")
            decorative = False
            if link.kind is LinkKind.IMAGE and before.endswith("]("):
                opening = text.rfind("![", 0, len(before))
                empty = opening >= 0 and not text[opening + 2:len(before) - 2].strip()
            elif link.kind is LinkKind.HTML_SRC:
                tag = text[text.rfind("<", 0, link.offset):text.find(">", link.offset) + 1]
                alt = _ALT.search(tag)
                empty = tag[:4].lower() == "<img" and not (alt and "".join(v or "" for v in alt.groups()).strip())
                decorative = alt is not None
            else:
                continue
            if empty:
                found.append((link.source, link.line, link.raw or link.href, decorative))
    return found


def report_missing_alt(book, diagnostics, unlabelled: int) -> None:
    """One warning for the PDF when it is not marked PDF/UA because figures lack alt text: at the first image without
    alt text, counting the others (each has its own `image-alt` warning from the book's check, unless book.toml turns
    that off), or, when no image of the text explains them (raw SVG without a `<title>`), for the PDF as a whole."""
    images = images_without_alt(book) if unlabelled else []
    if images:
        source, line, shown, _ = images[0]
        others = f" and {len(images) - 1} more image{'s' if len(images) > 2 else ''}" if len(images) > 1 else ""
        decorative = sum(1 for image in images if image[3])
        marked = (f" ({decorative} of them marked decorative with alt=\"\", which the PDF still draws as a figure without words)" if decorative > 1 or (decorative and others)
                  else " (marked decorative with alt=\"\", which the PDF still draws as a figure without words)" if decorative else "")
        diagnostics.warning(source, line, f"the PDF is not marked PDF/UA (accessible): the image '{shown}'{others} of the book {'have' if others else 'has'} no alt text{marked}, so a screen reader says nothing for {'them' if others else 'it'}.",
                            suggestion=f"Say what each shows between the brackets: ![what the image shows]({shown}); a raw <img> takes alt=\"...\".", code="pdf-ua")
    elif unlabelled:
        diagnostics.warning("PDF", 0, f"{unlabelled} figures of the PDF have no alt text (an <svg> without a <title>, an <img> without alt), so the PDF is not marked PDF/UA (accessible).",
                            suggestion="Give each raw <svg> a <title> and each <img> an alt text.", code="pdf-ua")
