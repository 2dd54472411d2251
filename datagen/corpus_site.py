"""`datagen site CORPUS OUT_DIR`: any shared corpus written as a local site, recognised by its
shape, so a newcomer need not know which writer of datagen/sites.py a file wants.

    a folder holding corpus.jsonl      rows {pid, title, text}: a page per paragraph (hotpotqa_dev685)
    a .json {title: [sentences]}       a page per title (hotpotqa_train100_corpus.json)
    a KILT .jsonl                      rows {wikipedia_title, text[paragraphs]}: whole articles
    a folder with articles.tsv and     Wikispeedia's articles and its real link graph
    links.tsv

Only the corpus text is read: a folder's questions.jsonl never is, so no build sees them.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from datagen import sites

SHAPES = ("a folder holding corpus.jsonl (rows pid, title, text), a .json {title: [sentences]}, "
          "a KILT .jsonl (wikipedia_title, text[]) or the wikispeedia_subset folder")


class CorpusShapeError(ValueError):
    """A corpus path of no shape `datagen site` knows (one line, naming the path)."""


@dataclass(frozen=True)
class WrittenSite:
    """What `write_corpus_site` wrote: where, from which shape, how many pages and links."""

    out: Path
    shape: str
    pages: int
    links: int
    seconds: float

    def report(self) -> str:
        """What `datagen site` prints: what it wrote, and the next command."""
        return (f"wrote {self.pages} pages and {self.links} links ({self.shape}) to {self.out} "
                f"in {self.seconds:.1f} s\nnext: datagen crawl {self.out}   or   datagen build "
                f"{self.out} (offline, with verify.decontamination: ../shared/data/qa_benchmarks/"
                " or off in --config)")


def write_corpus_site(corpus: str | Path, out_dir: str | Path) -> WrittenSite:
    """Write `corpus` as a site in `out_dir` (new or empty, so two corpora never mix)."""
    corpus, out = Path(corpus), Path(out_dir)
    shape, source = corpus_shape(corpus)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise CorpusShapeError(f"{out} exists and is not an empty folder: give a new one")
    t0 = time.perf_counter()
    CORPUS_WRITERS[shape](source, out)
    pages, links = site_counts(out)
    return WrittenSite(out, shape, pages, links, time.perf_counter() - t0)


def corpus_shape(path: Path) -> tuple[str, Path]:
    """(shape, the file or folder its writer reads); CorpusShapeError when none fits."""
    if path.is_dir():
        return _folder_shape(path)
    if not path.is_file():
        raise CorpusShapeError(f"no such corpus: {path}")
    if path.suffix == ".json" and _is_title_map(_load_json(path)):
        return "title_sentences", path
    if path.suffix == ".jsonl":
        return _jsonl_shape(path), path
    raise CorpusShapeError(f"{path} is not a corpus `datagen site` knows: give {SHAPES}")


def _folder_shape(path: Path) -> tuple[str, Path]:
    """A paragraph corpus (corpus.jsonl inside) or the Wikispeedia subset."""
    if (path / "corpus.jsonl").is_file():
        return _jsonl_shape(path / "corpus.jsonl"), path / "corpus.jsonl"
    if (path / "articles.tsv").is_file() and (path / "links.tsv").is_file():
        return "wikispeedia", path
    raise CorpusShapeError(f"{path} is a folder without corpus.jsonl or articles.tsv + "
                           f"links.tsv: give {SHAPES}")


def _jsonl_shape(path: Path) -> str:
    """Paragraph rows (title, text str) or KILT pages (wikipedia_title, text list), by the
    first row; a row of either shape has both fields."""
    first = next((line for line in path.open(encoding="utf-8") if line.strip()), "")
    row = _parse(first, path) if first else None
    if isinstance(row, dict) and isinstance(row.get("title"), str) \
            and isinstance(row.get("text"), str):
        return "paragraphs"
    if isinstance(row, dict) and isinstance(row.get("wikipedia_title"), str) \
            and isinstance(row.get("text"), list):
        return "kilt"
    raise CorpusShapeError(f"{path}: rows are neither (title, text) paragraphs nor KILT pages "
                           f"(wikipedia_title, text[]): give {SHAPES}")


def _load_json(path: Path) -> object:
    return _parse(path.read_text(encoding="utf-8"), path)


def _parse(text: str, path: Path) -> object:
    """JSON of one corpus file; a file that is not JSON is a one-line error naming it."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CorpusShapeError(f"{path}: not JSON ({exc.msg}, line {exc.lineno})") from None


def _is_title_map(data: object) -> bool:
    """HotpotQA's corpus shape: {title: [sentence, ...]}."""
    return isinstance(data, dict) and bool(data) and all(
        isinstance(v, list) and all(isinstance(s, str) for s in v) for v in data.values())


def site_counts(out: Path) -> tuple[int, int]:
    """(pages, links between them) of a written site, read back from its wiki/ folder."""
    files = list((out / "wiki").glob("*.html"))
    return len(files), sum(f.read_text(encoding="utf-8").count("<a href=") for f in files)


CORPUS_WRITERS = {
    "paragraphs": sites.write_paragraph_site,
    "title_sentences": sites.write_hotpotqa_site,
    "kilt": sites.write_kilt_site,
    "wikispeedia": sites.write_wikispeedia_site,
}
