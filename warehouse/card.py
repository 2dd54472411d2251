"""The dataset card written with every export (README.md in the export folder).

A receiver of an export gets rows; the card says what they are: row counts per band and per
hops, how they were built (the build/stage runs behind the exported rows: config, code
version, composer backend and model, solver and band thresholds, which checks ran and
whether decontamination was among them), the warehouse snapshot, and the licences and
source domains of the pages the evidence came from (a page without a declared licence is
"unknown"). Everything is read from the warehouse at the export's snapshot and from the
exported table itself, so the counts are those of the rows beside the card.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa

from warehouse.views import shortcut_table, shortcuts_by_hops

UNKNOWN = "unknown"


@dataclass
class Card:
    """What the card says, as data (also stored in the export's manifest)."""

    rows: int
    snapshot: int
    fmt: str
    layout: str
    where: str | None
    by_band: dict[str, int] = field(default_factory=dict)
    by_hops: dict[str, int] = field(default_factory=dict)
    shortcuts: dict[str, dict[str, int]] = field(default_factory=dict)  # hops -> judged, shortcuts
    licenses: dict[str, int] = field(default_factory=dict)   # evidence pages per licence
    domains: dict[str, int] = field(default_factory=dict)    # evidence pages per host
    row_licenses: dict[str, int] = field(default_factory=dict)  # rows per row licence
    composers: dict[str, int] = field(default_factory=dict)  # rows per composer/backend
    builds: list[dict[str, Any]] = field(default_factory=list)
    compose: list[dict[str, Any]] = field(default_factory=list)
    band: list[dict[str, Any]] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    decontamination: str = "off"

    def as_dict(self) -> dict[str, Any]:
        from dataclasses import asdict
        return asdict(self)


def make_card(wh, table: pa.Table, *, snapshot: int, fmt: str, layout: str,
              where: str | None) -> Card:
    """The card of `table` (the exported rows, plain layout), read from the open `wh`."""
    ids = table.column("question_id").to_pylist()
    card = Card(rows=table.num_rows, snapshot=snapshot, fmt=fmt, layout=layout, where=where)
    card.by_band = _counts(table.column("band").to_pylist())
    card.by_hops = _counts(table.column("hops").to_pylist())
    card.shortcuts = shortcuts_by_hops(wh)
    card.row_licenses = _counts(table.column("license").to_pylist())
    card.composers = _counts(f"{c or '?'} ({b or '?'})" for c, b in zip(
        table.column("composer").to_pylist(), table.column("backend").to_pylist()))
    card.licenses, card.domains = _sources(table)
    card.compose = _runs(wh, _distinct(table.column("run_id").to_pylist()))
    card.band = _runs(wh, _ids(wh, "difficulty", ids))
    verify_runs = _runs(wh, _ids(wh, "verdicts", ids))
    card.checks = sorted({r["check_name"] for r in wh.sql(
        "select distinct check_name from verdicts where question_id in (select unnest(?))",
        [ids]).to_pylist()}) if ids else []
    card.decontamination = _decontamination(card.checks, verify_runs)
    card.builds = _builds(wh, card.compose + card.band + verify_runs)
    if not card.compose:  # questions written without their run id: the builds' compose runs
        card.compose = _children(wh, [b["run_id"] for b in card.builds], "compose")
    return card


def _children(wh, parents: list[str], kind: str) -> list[dict[str, Any]]:
    """Runs of `kind` under `parents` (directly, or under a stage run of theirs)."""
    if not parents:
        return []
    rows = wh.sql("select run_id from runs where kind = ? and (parent_run_id in (select "
                  "unnest(?)) or parent_run_id in (select run_id from runs where parent_run_id "
                  "in (select unnest(?))))", [kind, parents, parents]).to_pylist()
    return _runs(wh, _distinct(r["run_id"] for r in rows))


def _builds(wh, runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The build runs above `runs` (a stage run's parent, or its parent's parent when the
    stage ran in shards under one stage run, as on the Dask runner)."""
    builds: dict[str, dict[str, Any]] = {}
    for _ in range(2):
        runs = _runs(wh, _distinct(r.get("parent_run_id") for r in runs))
        builds.update((r["run_id"], r) for r in runs if r["kind"] == "build")
        runs = [r for r in runs if r["kind"] != "build"]
    return sorted(builds.values(), key=lambda r: r["started_at"])


def _counts(values) -> dict[str, int]:
    c = Counter(str(v) for v in values)
    return dict(sorted(c.items(), key=lambda kv: (_sort_key(kv[0]), kv[0])))


def _sort_key(value: str) -> Any:
    from warehouse.schema import BANDS
    if value in BANDS:
        return (0, BANDS.index(value))
    return (1, int(value)) if value.isdigit() else (2, 0)


def _distinct(values) -> list[str]:
    return sorted({v for v in values if v})


def _sources(table: pa.Table) -> tuple[dict[str, int], dict[str, int]]:
    """Distinct evidence pages of the exported rows, counted per licence and per host."""
    pages: dict[str, str] = {}
    for urls, lics in zip(table.column("source_urls").to_pylist(),
                          table.column("source_licenses").to_pylist()):
        for url, lic in zip(urls or [], lics or []):
            pages[url] = lic or UNKNOWN
    licences = _counts(pages.values())
    domains = _counts(urlparse(u).netloc or UNKNOWN for u in pages)
    return licences, domains


def _ids(wh, table: str, ids: list[str]) -> list[str]:
    """The runs that wrote `table` rows for the exported questions (latest row per question
    for difficulty, all verdict runs)."""
    if not ids:
        return []
    if table == "difficulty":
        sql = ("select distinct arg_max(run_id, created_at) as run_id from difficulty "
               "where question_id in (select unnest(?)) group by question_id")
    else:
        sql = "select distinct run_id from verdicts where question_id in (select unnest(?))"
    return _distinct(r["run_id"] for r in wh.sql(sql, [ids]).to_pylist())


def _runs(wh, run_ids: list[str]) -> list[dict[str, Any]]:
    """Runs rows (config parsed; secrets were redacted when they were stored)."""
    if not run_ids:
        return []
    rows = wh.sql("select run_id, kind, config, code_version, parent_run_id, status, started_at "
                  "from runs where run_id in (select unnest(?)) order by started_at",
                  [run_ids]).to_pylist()
    for r in rows:
        try:
            r["config"] = json.loads(r["config"] or "{}")
        except ValueError:
            r["config"] = {}
        r["started_at"] = str(r["started_at"])
    return rows


def _decontamination(checks: list[str], verify_runs: list[dict[str, Any]]) -> str:
    """`on (<source>)` when the decontamination check judged the exported rows, else off."""
    if "decontamination" not in checks:
        return "off"
    sources = _distinct(str(r["config"].get("decontamination", "")) for r in verify_runs)
    return f"on ({', '.join(sources)})" if sources else "on"


# ---- rendering --------------------------------------------------------------------------

def render(card: Card, files: list[str]) -> str:
    """The card as markdown (README.md of the export)."""
    out = ["# hardqa export", "",
           "Multi-hop question–answer pairs made harder step by step from crawled web pages "
           "(each step keeps its evidence: the page URL and a verbatim quote), checked by "
           "`verifiers` (well-formed, no leak, grounded, unique answer, no one-search "
           "shortcut, near-duplicates, "
           "optionally benchmark decontamination) and banded by difficulty from a solver's "
           "pass rate over k attempts. Rows are the `train_ready` questions: every latest "
           "verdict `pass`, with a band.", "",
           f"- rows: **{card.rows}**", f"- format: `{card.fmt}`, layout: `{card.layout}`; "
           f"files: {', '.join(f'`{f}`' for f in files)}",
           f"- filter: `{card.where}`" if card.where else "- filter: none (the whole train_ready set)",
           f"- warehouse snapshot: `{card.snapshot}` (`datagen export --as-of {card.snapshot}` "
           "reproduces these rows)", ""]
    out += _table("Rows per band", "band", card.by_band)
    out += _table("Rows per hops", "hops", card.by_hops)
    out += _shortcut_lines(card.shortcuts)
    out += ["## How it was built", ""]
    out += _build_lines(card)
    out += _table("Composer (backend)", "composer", card.composers)
    out += ["## Sources and licences", "",
            "Each row carries `source_urls` (the pages its evidence quotes), `source_licenses` "
            "(the licence each page declared, in the same order; `unknown` when it declared "
            "none) and `license` (the row's licences joined by `; `). Check the licences before "
            "redistributing: the evidence quotes are excerpts of those pages.", ""]
    out += _table("Evidence pages per licence", "licence", card.licenses)
    out += _table("Rows per licence", "licence", card.row_licenses)
    out += _table("Evidence pages per source domain", "domain", card.domains)
    return "\n".join(out) + "\n"


def _table(title: str, key: str, counts: dict[str, int]) -> list[str]:
    lines = [f"## {title}", "", f"| {key} | count |", "|---|---:|"]
    lines += [f"| {k} | {v} |" for k, v in counts.items()] or ["| (none) | 0 |"]
    return lines + [""]


def _shortcut_lines(shortcuts: dict[str, dict[str, int]]) -> list[str]:
    """The shortcut check's verdicts by hops over the whole warehouse: the exported rows passed
    it, so the share says what the filter took out."""
    lines = ["## Shortcuts by hops", "",
             "A question with hops >= 2 is a shortcut when one search of its own text (BM25, "
             "k = 3, every stored page) returns the page holding the answer, or every compared "
             "page of a comparison (the `shortcut` check). Shortcuts are not train_ready; "
             "these are all the questions of the warehouse the check judged.", ""]
    return lines + shortcut_table(shortcuts) + [""]


def _build_lines(card: Card) -> list[str]:
    lines = []
    for b in card.builds:
        cfg = b["config"]
        lines.append(f"- build run `{b['run_id']}` ({b['status']}, started {b['started_at']}), "
                     f"code version `{b['code_version']}`; seeds: "
                     f"{', '.join(cfg.get('seeds') or []) or 'the built-in demo world'}"
                     f"; seed {cfg.get('seed')}")
    lines += _grouped("compose", card.compose, _compose_text)
    lines += _grouped("band", card.band, _band_text)
    lines.append(f"- checks that judged these rows: {', '.join(card.checks) or 'none recorded'}")
    lines.append(f"- decontamination: **{card.decontamination}**")
    if card.builds:
        lines += ["", "<details><summary>build config</summary>", "", "```json",
                  json.dumps(card.builds[-1]["config"], indent=2, sort_keys=True, default=str),
                  "```", "", "</details>"]
    return lines + [""]


def _grouped(kind: str, runs: list[dict[str, Any]], describe) -> list[str]:
    """One line per distinct setting; its runs listed (a stage on Dask runs in shards)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        groups.setdefault(describe(r), []).append(r)
    out = []
    for text, rs in groups.items():
        ids = ", ".join(f"`{r['run_id']}`" for r in rs)
        out.append(f"- {kind} run{'s' if len(rs) > 1 else ''} {ids}: {text}")
    return out


def _compose_text(r: dict[str, Any]) -> str:
    cfg = r["config"]
    model = f", model `{cfg.get('model')}` at `{cfg.get('endpoint')}`" if cfg.get("model") else ""
    return (f"backend `{cfg.get('backend', '?')}`{model}, hops {cfg.get('hops_min', '?')}–"
            f"{cfg.get('hops_max', '?')}, seed {cfg.get('seed', '?')}, code version "
            f"`{r['code_version']}`")


def _band_text(r: dict[str, Any]) -> str:
    cfg = r["config"]
    model = f", model `{cfg.get('model')}`" if cfg.get("model") else ""
    return (f"solver `{cfg.get('solver_name') or cfg.get('solver', '?')}`{model}, thresholds "
            f"(lower pass-rate edges of hard, medium, easy, too_easy) {cfg.get('thresholds', '?')}"
            f", max k {cfg.get('max_k', '?')}, confidence {cfg.get('confidence', '?')}")


def parse_counts(text: str, title: str) -> dict[str, int]:
    """Read one count table back from a rendered card (for tests and tools)."""
    lines = text.splitlines()
    start = lines.index(f"## {title}") + 4
    out = {}
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        key, value = (c.strip() for c in line.strip("|").split("|"))
        if key != "(none)":
            out[key] = int(value)
    return out
