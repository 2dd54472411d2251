"""The docs stay true to the tree: package READMEs' file trees, every relative link, and the
root README's reading order.

Convention (docs/README.md): a package README's file tree is the first fenced code block
whose first line is the package's folder name with a slash (`training/`). Each entry is
one line: two spaces of indent per level, the name (a folder ends with `/`), then two or
more spaces and what it holds. A line that is not at a valid depth right under the last
folder, or whose first word is not a file or folder name, continues the description above.
Every .py module and subpackage must be listed (`__init__.py` and `__main__.py` may be),
and every listed name must exist.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
OPTIONAL = {"__init__.py", "__main__.py"}
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
_NAME = r"[A-Za-z0-9_.\-]+/|[A-Za-z0-9_\-]+\.[A-Za-z0-9_.]+"  # a folder/ or a file.ext
_ENTRY = re.compile(rf"^(?P<indent> *)(?P<name>{_NAME})(?: {{2,}}.*)?$")
_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _packages() -> list[str]:
    """Top-level packages that have a README: the ones whose tree is checked."""
    return sorted(p.parent.name for p in REPO.glob("*/README.md")
                  if (p.parent / "__init__.py").is_file())


def tree_entries(readme: str, package: str) -> set[str] | None:
    """Paths (relative to the repo, folders with a trailing /) the README's tree names."""
    for block in _FENCE.findall(readme):
        lines = block.splitlines()
        if lines and lines[0].strip() == f"{package}/":
            return _parse_tree(lines[1:], package)
    return None


def _parse_tree(lines: list[str], package: str) -> set[str]:
    """Entries by indentation: depth d sits under the folder last seen at depth d - 1."""
    stack, found = [package], set()
    for line in lines:
        m = _ENTRY.match(line)
        if not m or len(m["indent"]) % 2:
            continue
        depth = len(m["indent"]) // 2
        if not 1 <= depth <= len(stack):
            continue
        del stack[depth:]
        found.add("/".join(stack) + "/" + m["name"])
        if m["name"].endswith("/"):
            stack.append(m["name"].rstrip("/"))
    return found


def package_files(package: str) -> set[str]:
    """Every .py module and subpackage folder of the package, as tree entries would name them."""
    root = REPO / package
    out = set()
    for path in root.rglob("*"):
        rel = path.relative_to(REPO)
        if any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
            continue
        if path.is_file() and path.suffix == ".py" and path.name not in OPTIONAL:
            out.add(rel.as_posix())
        elif path.is_dir() and (path / "__init__.py").is_file():
            out.add(rel.as_posix() + "/")
    return out


def test_every_package_readme_has_a_tree():
    assert {"datagen", "training", "warehouse"} <= set(_packages())
    missing = [p for p in _packages()
               if tree_entries((REPO / p / "README.md").read_text(), p) is None]
    assert not missing, (f"no file tree in {', '.join(p + '/README.md' for p in missing)}: add a "
                         f"```-block whose first line is the package folder (e.g. `training/`)")


@pytest.mark.parametrize("package", _packages())
def test_tree_lists_every_module(package):
    listed = tree_entries((REPO / package / "README.md").read_text(), package) or set()
    absent = sorted(package_files(package) - listed)
    assert not absent, (f"{package}/README.md's file tree lacks {', '.join(absent)}: add one line "
                        f"each under its folder (two spaces of indent per level, the name, two "
                        f"spaces, what it holds)")


@pytest.mark.parametrize("package", _packages())
def test_tree_names_only_existing_files(package):
    listed = tree_entries((REPO / package / "README.md").read_text(), package) or set()
    gone = sorted(p for p in listed if not (REPO / p).exists())
    assert not gone, (f"{package}/README.md's file tree names {', '.join(gone)}, which do not "
                      f"exist: remove or rename those lines")


def test_tree_parser_reads_depth_and_continuations():
    lines = ["  a.py        one", "                continued (x.py)", "  sub/",
             "    b.py      two", "  c.py", "robots.txt; not an entry"]
    assert _parse_tree(lines, "pkg") == {"pkg/a.py", "pkg/sub/", "pkg/sub/b.py", "pkg/c.py"}


def _doc_files() -> list[Path]:
    """The READMEs (root and packages) and everything under docs/."""
    return sorted({REPO / "README.md", *REPO.glob("*/README.md"), *REPO.glob("docs/**/*.md")})


def relative_links(text: str) -> list[str]:
    """Link targets outside code that point into the repository (no scheme, no bare anchor)."""
    prose = re.sub(r"`[^`\n]*`", "", _FENCE.sub("", text))
    targets = (t.split("#", 1)[0] for t in _LINK.findall(prose))
    return [t for t in targets if t and not re.match(r"^[a-z][a-z0-9+.\-]*:", t)]


@pytest.mark.parametrize("doc", _doc_files(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_relative_links_resolve(doc):
    broken = [t for t in relative_links(doc.read_text()) if not (doc.parent / t).exists()]
    assert not broken, f"{doc.relative_to(REPO)} links to missing {', '.join(broken)}: fix the path"


def test_links_skip_urls_anchors_and_code():
    text = ("[a](x.md) [b](https://e.org) [c](#top) ![d](img/p.png \"t\") `[e](no.md)`\n"
            "```\n[f](no.md)\n```\n")
    assert relative_links(text) == ["x.md", "img/p.png"]


def test_experiments_index_lists_every_study():
    folder = REPO / "docs" / "experiments"
    studies = sorted(p.name for p in folder.glob("*.md") if p.name != "README.md")
    assert studies, "docs/experiments/ holds no study"
    undated = [s for s in studies if not re.match(r"^\d{4}-\d{2}-\d{2}-[a-z0-9-]+\.md$", s)]
    assert not undated, f"study files are named YYYY-MM-DD-topic.md: rename {', '.join(undated)}"
    index = set(relative_links((folder / "README.md").read_text()))
    unlisted = [s for s in studies if s not in index]
    assert not unlisted, (f"docs/experiments/README.md does not link {', '.join(unlisted)}: add a "
                          f"line for each to its table")


def test_reading_order_names_existing_files_and_symbols():
    """The root README's reading order: every `path.py` it names exists, and every
    `function` or `Class.method` it pins to one of those files is defined there."""
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Reading order", 1)[1].split("\n## ", 1)[0]
    paths = re.findall(r"`([\w/]+\.py)`", section)
    assert len(paths) >= 8 and all((REPO / p).is_file() for p in paths), paths
    sources = "\n".join((REPO / p).read_text() for p in paths)
    for symbol in re.findall(r"`([A-Za-z_][\w.]*)`", section):
        if symbol.endswith(".py") or not ("_" in symbol or "." in symbol or symbol[0].isupper()):
            continue  # a file, or a plain word (a table's name)
        name = symbol.split(".")[-1]
        assert re.search(rf"\b(?:def|class) {name}\b", sources), f"{symbol}: not in {paths}"
