"""Turn the Wikispeedia subset (plain-text articles + links.tsv) into a static website.

Each article becomes /wiki/<title>.html: its paragraphs, with each link of links.tsv as an
anchor on the first mention of the target's title, or in a "See also" list when the title
is never mentioned. Links to articles outside the subset stay in (dead links, as on the web).
An index page links every article.
"""

from __future__ import annotations

import html
import re
from collections import defaultdict
from pathlib import Path
from urllib.parse import quote, unquote


def _rows(path: Path) -> list[list[str]]:
    return [ln.split("\t") for ln in path.read_text(encoding="utf-8").splitlines()
            if ln.strip() and not ln.startswith("#")]


def load(src: Path) -> tuple[list[str], dict[str, list[str]], list[list[str]]]:
    """(articles, links source -> targets, human paths), all with decoded names."""
    articles = [unquote(r[0]) for r in _rows(src / "articles.tsv")]
    links: dict[str, list[str]] = defaultdict(list)
    for s, t in _rows(src / "links.tsv"):
        links[unquote(s)].append(unquote(t))
    paths = [[unquote(a) for a in r[3].split(";")] for r in _rows(src / "human_paths_within_subset.tsv")]
    return articles, links, paths


def href(name: str) -> str:
    return "/wiki/" + quote(name, safe="") + ".html"


def _article_html(name: str, text: str, targets: list[str]) -> str:
    paras = [html.escape(" ".join(p.split())) for p in re.split(r"\n\s*\n", text) if p.strip()]
    body = "\n".join(f"<p>{p}</p>" for p in paras)
    see_also = []
    for t in targets:
        label = html.escape(t.replace("_", " "))
        # first mention outside an existing anchor: (?<![\w>]) keeps us out of anchor text
        pattern = re.compile(r"(?<![\w\">])" + re.escape(label) + r"(?![\w<])")
        m = pattern.search(body)
        if m and body.rfind("<a ", 0, m.start()) <= body.rfind("</a>", 0, m.start()):
            anchor = f'<a href="{href(t)}">{label}</a>'
            body = body[:m.start()] + anchor + body[m.end():]
        else:
            see_also.append(f'<li><a href="{href(t)}">{label}</a></li>')
    extra = f"<h2>See also</h2><ul>{''.join(see_also)}</ul>" if see_also else ""
    title = html.escape(name.replace("_", " "))
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title></head>"
            f"<body><nav><a href='/index.html'>Index</a></nav><article><h1>{title}</h1>"
            f"{body}{extra}</article></body></html>")


def build_site(src: Path, out: Path) -> Path:
    articles, links, _ = load(src)
    (out / "wiki").mkdir(parents=True, exist_ok=True)
    for name in articles:
        text = (src / "articles" / (quote(name, safe="") + ".txt"))
        if not text.exists():  # the subset's file names use its own URL-encoding
            text = src / "articles" / (_wikispeedia_quote(name) + ".txt")
        page = _article_html(name, text.read_text(encoding="utf-8", errors="replace"), links[name])
        (out / "wiki" / (name + ".html")).write_text(page, encoding="utf-8")
    items = "".join(f'<li><a href="{href(a)}">{html.escape(a.replace("_", " "))}</a></li>'
                    for a in articles)
    (out / "index.html").write_text(f"<html><head><title>Index</title></head><body><h1>Index"
                                    f"</h1><ul>{items}</ul></body></html>", encoding="utf-8")
    return out


def _wikispeedia_quote(name: str) -> str:
    return quote(name, safe="_,-.!*")


def article_of(url: str, base: str) -> str | None:
    """The article an extracted link URL points to, or None for other pages."""
    prefix = base + "/wiki/"
    if not url.startswith(prefix) or not url.endswith(".html"):
        return None
    return unquote(url[len(prefix):-len(".html")])


def path_steps(path: list[str]) -> list[tuple[str, str]]:
    """Clicks of a human path; '<' is a back-click to the previous page (not a link)."""
    stack: list[str] = []
    steps = []
    for node in path:
        if node == "<":
            stack.pop()
            continue
        if stack:
            steps.append((stack[-1], node))
        stack.append(node)
    return steps
