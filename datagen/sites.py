"""Static websites from the shared reference corpora, for crawling real text offline.

    write_hotpotqa_site(corpus_json, out_dir)   # {title: [sentences]}: a page per title
    write_kilt_site(jsonl, out_dir)             # {wikipedia_title, text[paragraphs]} rows
    write_wikispeedia_site(subset_dir, out_dir) # articles/*.txt + links.tsv (the real link graph)
    write_paragraph_site(corpus_jsonl, out_dir) # {pid, title, text} rows: a page per paragraph

`datagen site CORPUS OUT_DIR` (datagen/corpus_site.py) picks the writer by the corpus's shape.

Each writes `out_dir/wiki/<title>.html` (a real `<title>` and `<h1>`, the text in `<p>`
paragraphs, so extraction keeps each paragraph verbatim) and `out_dir/index.html` linking
every page. Links are relative, so the same folder works crawled from disk
(`datagen crawl out_dir`) and served (`datagen serve out_dir`). HotpotQA and KILT pages
link the first mention of every other title (exact, case-sensitive, whole words; the
corpora have no anchors of their own); Wikispeedia pages link what `links.tsv` says, on the
first mention of the target or under "See also" (dead links to articles outside the subset
stay, as on the web).
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote

_WORD = re.compile(r"\w+")
_DISAMBIGUATION = re.compile(r"\s+\([^()]*\)$")
_WS = re.compile(r"\s+")
# invisible format marks (LRM, zero-width space, BOM): extraction drops them, so we do too
_FORMAT = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")
MAX_NAME_BYTES = 200  # file names stay well under the usual 255-byte limit


@dataclass
class SitePage:
    """One page to write: its title, blocks of text and the titles it links."""

    title: str
    blocks: list[tuple[str, str]] = field(default_factory=list)  # (kind p|h2|li, text)
    links: list[str] = field(default_factory=list)  # other titles; first mention or See also
    link_mentions_only: bool = True  # False: unmentioned links go under "See also"


def page_name(title: str) -> str:
    """The file stem for a title: spaces as underscores, an injective escape of '%' and '/'."""
    name = title.replace("%", "%25").replace("/", "%2F").replace(" ", "_")
    if len(name.encode()) > MAX_NAME_BYTES:
        digest = hashlib.sha1(name.encode()).hexdigest()[:10]
        name = name.encode()[:MAX_NAME_BYTES - 11].decode(errors="ignore") + "~" + digest
    return name


def page_href(title: str) -> str:
    """The link from one wiki page to another (relative: works from disk and when served)."""
    return quote(page_name(title), safe="") + ".html"


def title_of(url: str) -> str | None:
    """The page stem a crawled URL points to (`…/wiki/<stem>.html`), or None for other pages."""
    m = re.search(r"/wiki/([^/]+)\.html$", url)
    return unquote(m.group(1)) if m else None


# ---- mention linking ----------------------------------------------------------------------

class MentionIndex:
    """Finds whole-word, case-sensitive mentions of known titles, longest name first.

    A title with a trailing disambiguation ("Strandloper (novel)") is also found by its bare
    name when no other title has that name. Names are indexed by their first word, so a page
    is scanned once whatever the number of titles. Single-character names ("A") are not
    linked: they match ordinary words.
    """

    def __init__(self, titles):
        titles = list(dict.fromkeys(titles))
        names = {t: t for t in titles}
        bare: dict[str, list[str]] = defaultdict(list)
        for t in titles:
            b = _DISAMBIGUATION.sub("", t)
            if b != t:
                bare[b].append(t)
        names.update({b: ts[0] for b, ts in bare.items() if len(ts) == 1 and b not in names})
        self.by_first: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for name, title in names.items():
            m = _WORD.match(name)
            if len(name) > 1 and m:
                self.by_first[m.group(0)].append((name, title))
        for lst in self.by_first.values():
            lst.sort(key=lambda nt: len(nt[0]), reverse=True)

    def find(self, text: str, wanted=None) -> list[tuple[int, int, str]]:
        """Non-overlapping (start, end, title) of mentions; `wanted` limits the titles."""
        out, pos = [], 0
        for m in _WORD.finditer(text):
            if m.start() < pos:
                continue
            for name, title in self.by_first.get(m.group(0), ()):
                end = m.start() + len(name)
                if (wanted is None or title in wanted) and text.startswith(name, m.start()) \
                        and not (end < len(text) and (text[end].isalnum() or text[end] == "_")):
                    out.append((m.start(), end, title))
                    pos = end
                    break
        return out


def _linked(text: str, index: MentionIndex, todo: set[str]) -> str:
    """HTML of `text` with the first mention of each title in `todo` as a link (todo shrinks)."""
    parts, last = [], 0
    for start, end, t in index.find(text, todo):
        if t not in todo:
            continue
        todo.discard(t)
        parts.append(html.escape(text[last:start]))
        parts.append(f'<a href="{page_href(t)}">{html.escape(text[start:end])}</a>')
        last = end
    parts.append(html.escape(text[last:]))
    return "".join(parts)


def render_page(page: SitePage, index: MentionIndex) -> str:
    """One page's HTML: title, h1, blocks with links on first mentions, See also."""
    todo = set(page.links) - ({page.title} if page.link_mentions_only else set())
    body, in_list = [], False
    for kind, text in page.blocks:
        if (kind == "li") != in_list:
            body.append("<ul>" if kind == "li" else "</ul>")
            in_list = kind == "li"
        inner = _linked(text, index, todo) if kind != "h2" else html.escape(text)
        body.append(f"<{kind}>{inner}</{kind}>")
    if in_list:
        body.append("</ul>")
    if todo and not page.link_mentions_only:
        items = "".join(f'<li><a href="{page_href(t)}">{html.escape(t.replace("_", " "))}</a></li>'
                        for t in page.links if t in todo)
        body.append(f"<h2>See also</h2><ul>{items}</ul>")
    title = html.escape(page.title.replace("_", " "))
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{title}</title>"
            f"</head><body><article><h1>{title}</h1>"
            + "\n".join(body) + "</article></body></html>")


def write_site(pages: list[SitePage], out_dir: str | Path, index: MentionIndex | None = None) -> Path:
    """Write `wiki/<name>.html` per page and an `index.html` linking them all."""
    out = Path(out_dir)
    (out / "wiki").mkdir(parents=True, exist_ok=True)
    index = index or MentionIndex(p.title for p in pages)
    for p in pages:
        (out / "wiki" / (page_name(p.title) + ".html")).write_text(render_page(p, index),
                                                                    encoding="utf-8")
    items = "".join(f'<li><a href="wiki/{page_href(p.title)}">'
                    f'{html.escape(p.title.replace("_", " "))}</a></li>' for p in pages)
    (out / "index.html").write_text(
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>Index</title></head>"
        f"<body><h1>Index</h1><ul>{items}</ul></body></html>", encoding="utf-8")
    return out


def clean(text: str) -> str:
    """One line of visible text: whitespace runs as one space, format marks dropped."""
    return _WS.sub(" ", _FORMAT.sub("", text)).strip()


def _mentioned_everywhere(pages: list[SitePage]) -> list[SitePage]:
    titles = [p.title for p in pages]
    for p in pages:
        p.links = titles  # render_page links those that are mentioned, once each
    return pages


# ---- the corpora ----------------------------------------------------------------------------

def write_hotpotqa_site(corpus_json: str | Path, out_dir: str | Path) -> Path:
    """HotpotQA's {title: [sentences]}: one paragraph per title, links where titles are named."""
    corpus = json.loads(Path(corpus_json).read_text(encoding="utf-8"))
    pages = [SitePage(t, [("p", clean("".join(sents)))])
             for t, sents in corpus.items()]
    return write_site(_mentioned_everywhere(pages), out_dir)


def write_paragraph_site(corpus_jsonl: str | Path, out_dir: str | Path) -> Path:
    """Rows {pid, title, text} (hotpotqa_dev685's corpus.jsonl): a page per paragraph, links
    where titles are named. Only this file is read: a corpus's questions never reach a build."""
    pages = [SitePage(row["title"], [("p", clean(row["text"]))]) for row in _jsonl(corpus_jsonl)]
    return write_site(_mentioned_everywhere(pages), out_dir)


def _jsonl(path: str | Path) -> list[dict]:
    """The rows of a JSONL file (blank lines skipped)."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _kilt_blocks(paragraphs: list[str]) -> list[tuple[str, str]]:
    """KILT markup: the first paragraph is the title, `Section::::A:B.` headings, `BULLET::::- x`."""
    blocks = []
    for para in paragraphs[1:]:
        text = clean(para)
        if not text:
            continue
        if text.startswith("Section::::"):
            blocks.append(("h2", text[len("Section::::"):].rstrip(".").split(":")[-1].strip()))
        elif text.startswith("BULLET::::"):
            blocks.append(("li", text[len("BULLET::::"):].lstrip("- ").strip()))
        else:
            blocks.append(("p", text))
    return [b for b in blocks if b[1]]


def write_kilt_site(jsonl: str | Path, out_dir: str | Path) -> Path:
    """KILT Wikipedia pages: whole articles with their sections and lists."""
    pages = [SitePage(row["wikipedia_title"], _kilt_blocks(row["text"])) for row in _jsonl(jsonl)]
    return write_site(_mentioned_everywhere(pages), out_dir)


def _tsv_rows(path: Path) -> list[list[str]]:
    return [ln.split("\t") for ln in path.read_text(encoding="utf-8").splitlines()
            if ln.strip() and not ln.startswith("#")]


def load_wikispeedia(src: str | Path) -> tuple[list[str], dict[str, list[str]], list[list[str]]]:
    """(articles, links source -> targets, human click paths), names decoded."""
    src = Path(src)
    articles = [unquote(r[0]) for r in _tsv_rows(src / "articles.tsv")]
    links: dict[str, list[str]] = defaultdict(list)
    for s, t in _tsv_rows(src / "links.tsv"):
        links[unquote(s)].append(unquote(t))
    paths = [[unquote(a) for a in r[3].split(";")]
             for r in _tsv_rows(src / "human_paths_within_subset.tsv")]
    return articles, links, paths


def write_wikispeedia_site(subset_dir: str | Path, out_dir: str | Path) -> Path:
    """Wikispeedia: paragraphs split on blank lines, links from links.tsv (the real graph)."""
    src = Path(subset_dir)
    articles, links, _ = load_wikispeedia(src)
    label = {t: t.replace("_", " ") for name in articles for t in [name, *links[name]]}
    index = MentionIndex(label.values())
    pages = []
    for name in articles:
        text = _read_article(src, name)
        paras = [clean(p) for p in re.split(r"\n\s*\n", text) if p.strip()]
        pages.append(SitePage(name, [("p", p) for p in paras], links[name],
                              link_mentions_only=False))
    return write_site(pages, out_dir, _LabelIndex(index, label))


class _LabelIndex(MentionIndex):
    """Wikispeedia names use underscores; their mentions in text use spaces."""

    def __init__(self, inner: MentionIndex, label: dict[str, str]):
        self.inner, self.name_of = inner, {v: k for k, v in label.items()}

    def find(self, text: str, wanted=None) -> list[tuple[int, int, str]]:
        want = None if wanted is None else {self.label(t) for t in wanted}
        return [(s, e, self.name_of[t]) for s, e, t in self.inner.find(text, want)]

    @staticmethod
    def label(name: str) -> str:
        return name.replace("_", " ")


def _read_article(src: Path, name: str) -> str:
    path = src / "articles" / (quote(name, safe="") + ".txt")
    if not path.exists():  # the subset's file names use its own URL-encoding
        path = src / "articles" / (quote(name, safe="_,-.!*") + ".txt")
    return path.read_text(encoding="utf-8", errors="replace")
