"""docs/api.md's index of public names, readable without Sphinx: every public name of
``pysycl`` is listed, every name listed exists; and every link between the pages (the
README's too) reaches a page and, with ``#``, one of its headings (GitHub's and myst's
anchors; ``_slug`` makes them, checked against ``myst_parser.slugs.github_slugify`` where
myst_parser is installed, so the links are checked where it is not)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import pysycl as sycl
from pysycl import _vec_aliases

DOCS = Path(__file__).resolve().parents[1] / "docs"


def _index() -> str:
    text = (DOCS / "api.md").read_text()
    start = text.index("## Index of public names")
    return text[start:text.index("\n## ", start + 1)]


def _entries() -> list[tuple[str, str]]:
    """(the names part, the link) of each bullet: ``* `a`, `b` — what ([page](link))``."""
    return re.findall(r"^\* (.+?) — .*\(\[[^]]+\]\(([^)]+)\)\)$", _index(), re.M)


def _listed() -> set[str]:
    return {n for names, _ in _entries() for n in re.findall(r"`([A-Za-z_]\w*)`", names)}


def test_every_public_name_is_in_the_index() -> None:
    aliases = set(_vec_aliases)  # float4, mbool2, ...: listed by their pattern
    missing = sorted(set(sycl.__all__) - aliases - _listed())
    assert missing == [], f"add these public names to docs/api.md's index: {missing}"
    # the aliases' pattern names every element type and size
    vec_line = next(names for names, _ in _entries() if names.startswith("`vec`"))
    types = vec_line.split("(`", 1)[1].split("`")[0].split()
    sizes = vec_line.split("\u00d7 `", 1)[1].split("`")[0].split()
    marray_line = next(names for names, _ in _entries() if names.startswith("`marray`"))
    for a in aliases:
        m = re.fullmatch(r"(m?)([a-z]+?)(\d+)", a)
        assert m and m.group(3) in sizes, a
        assert m.group(2) in types or (m.group(1) and m.group(2) == "bool" and "`mbool2`" in marray_line), a


def test_every_name_in_the_index_exists() -> None:
    listed = _listed()
    assert len(listed) > 150
    assert sorted(n for n in listed if not hasattr(sycl, n)) == []


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, spaces become hyphens, and every character
    but letters, digits, ``_`` and ``-`` goes."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _all_headings() -> list[str]:
    pages = [*DOCS.glob("*.md"), *DOCS.glob("design/*.md"), DOCS.parent / "README.md"]
    return [h for p in pages for h in re.findall(r"^#{1,6} (.+)$", p.read_text(), re.M)]


def _headings(page: Path) -> set[str]:
    return {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", page.read_text(), re.M)}


def test_the_anchors_are_myst_parsers() -> None:
    slugs = pytest.importorskip("myst_parser.slugs",
                                reason="myst_parser is not installed: no github_slugify to "
                                       "compare the anchors with")
    headings = [*_all_headings(), "`sycl.queue` -- the (old) API: a, b & c!", " x y "]
    assert len(headings) > 100
    assert [_slug(h) for h in headings] == [slugs.github_slugify(h) for h in headings]


def test_every_link_between_pages_reaches_a_heading() -> None:
    pages = [*DOCS.glob("*.md"), *DOCS.glob("design/*.md"), DOCS.parent / "README.md"]
    bad = []
    for page in pages:
        for link in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if re.match(r"[a-z]+:", link):  # https:, mailto:
                continue
            name, _, anchor = link.partition("#")
            target = page.parent / name if name else page
            if not target.exists():
                bad.append(f"{page.name}: {link} (no such file)")
            elif anchor and target.suffix == ".md" and anchor not in _headings(target):
                bad.append(f"{page.name}: {link} (no such heading)")
    assert bad == []
    assert len(_entries()) > 60  # the index's links are among them
