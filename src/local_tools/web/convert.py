"""Web pages as text a model can read: the charset found, the noise dropped, the main
content kept where a page marks it, converted to Markdown or plain text.

lxml parses (fast, forgiving); html-to-markdown (Rust) converts: a 1 MB page takes
about 0.1 s, where BeautifulSoup-based converters take a second or more.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from typing import Literal, cast

__all__ = ["Converted", "convert_html", "decode_text"]

Format = Literal["markdown", "text", "html"]

# Elements that are never the content a model asked for.
_NOISE = (
    "script", "style", "noscript", "template", "svg", "canvas", "iframe", "object",
    "embed", "nav", "aside", "form", "button", "select", "dialog",
)  # fmt: skip
_NOISE_XPATH = (
    " | ".join(f"//{tag}" for tag in _NOISE)
    + " | //*[@role='navigation' or @role='banner' or @role='contentinfo'"
    " or @role='complementary' or @role='search' or @aria-hidden='true' or @hidden]"
    # A page's own header and footer; those inside an article belong to it.
    " | //body/header | //body/footer | //body/div/header | //body/div/footer"
)
# A main candidate with less text than this share of the page is probably not it.
_MAIN_SHARE = 0.3
_META_CHARSET = re.compile(
    rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9._:-]+)""", re.IGNORECASE
)
_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>", re.IGNORECASE)


@dataclass
class Converted:
    content: str
    title: str


def decode_text(data: bytes, header_charset: str | None, *, sniff_meta: bool) -> tuple[str, str]:
    """(text, charset): a byte order mark, else the Content-Type charset, else a
    ``<meta charset>`` (HTML), else UTF-8 when it decodes, else windows-1252."""
    for bom, name in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"),
                      (codecs.BOM_UTF16_BE, "utf-16-be")):  # fmt: skip
        if data.startswith(bom):
            return data[len(bom) :].decode(name, errors="replace"), name
    candidates = [header_charset] if header_charset else []
    if sniff_meta:
        found = _META_CHARSET.search(data[:4096])
        if found:
            candidates.append(found.group(1).decode("ascii"))
    for name in candidates:
        try:
            codec = codecs.lookup(name.strip().strip("\"'")).name
        except LookupError:
            continue
        if codec in ("utf-16", "utf-32"):  # declared but no BOM: the meta lied
            continue
        return data.decode(codec, errors="replace"), codec
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError as exc:
        if exc.start >= len(data) - 3:  # a character cut by the size cap
            return data.decode("utf-8", errors="replace"), "utf-8"
        return data.decode("cp1252", errors="replace"), "cp1252"


def convert_html(text: str, fmt: Format, base_url: str | None = None) -> Converted:
    """The page as Markdown or plain text (noise dropped), or as served (html), with its title."""
    import lxml.html
    from lxml import etree

    text = _XML_DECL.sub("", text, count=1)
    if not text.strip():
        return Converted("", "")
    try:
        doc = lxml.html.document_fromstring(text)
    except (etree.ParserError, ValueError):
        return Converted(text if fmt == "html" else _strip_tags(text), "")
    title = " ".join((doc.findtext(".//title") or "").split())
    if fmt == "html":  # the page as served
        return Converted(text, title)
    # The expression selects only elements (no text, attribute or number results).
    noise = cast("list[lxml.html.HtmlElement]", doc.xpath(_NOISE_XPATH))
    for element in noise:
        if element.getparent() is not None:
            element.drop_tree()
    node = _main(doc)
    html = lxml.html.tostring(node, encoding="unicode", method="html")
    return Converted(_to_markdown(html, fmt, base_url), title)


def _main(doc: object) -> object:
    """`<main>` (or role=main, or the one `<article>`) when it holds most of the text."""
    body = doc.find("body")  # type: ignore[attr-defined]
    if body is None:
        return doc
    candidates = doc.xpath("//main | //*[@role='main']")  # type: ignore[attr-defined]
    if not candidates:
        articles = doc.xpath("//article")  # type: ignore[attr-defined]
        candidates = articles if len(articles) == 1 else []
    if not candidates:
        return body
    total = len(body.text_content().strip()) or 1
    best = max(candidates, key=lambda e: len(e.text_content()))
    return best if len(best.text_content().strip()) >= _MAIN_SHARE * total else body


def _to_markdown(html: str, fmt: Format, base_url: str | None) -> str:
    import html_to_markdown as h2m

    options = h2m.ConversionOptions(
        heading_style="atx",
        output_format="plain" if fmt == "text" else "markdown",
        extract_metadata=False,
        autolinks=False,
        skip_images=fmt == "text",
        inline_data_media="alt_text_only",
        base_url=base_url,
    )
    content = h2m.convert(html, options).content or ""
    return re.sub(r"\n{3,}", "\n\n", content).strip() + "\n"


def _strip_tags(text: str) -> str:
    return re.sub(r"<[^>]+>", " ", text)
