"""The crawl stage's one typed config (defaults in code; CLI flags and files override)."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

PROJECT_UA = "hardqa-datagen/0.1 (hardqa QA data engine; research crawler; honours robots.txt)"
ROBOTS_AGENT = "hardqa-datagen"
# the built-in demo world's size by default (`crawl_demo`, a build's `demo.entities`)
DEMO_ENTITIES = 2000


class CrawlConfig(BaseModel):
    """Everything that decides what is fetched, how politely, and what is kept."""

    model_config = ConfigDict(extra="forbid")

    seeds: list[str] = Field(default_factory=list,
                             description="URLs, sitemap URLs (…sitemap….xml[.gz]), local "
                             "folders, WARC files (.warc[.gz]), folders or globs of them")
    # scope
    same_host: bool = True
    url_prefixes: list[str] = Field(default_factory=list)
    include: list[str] = Field(default_factory=list, description="regexes; a URL must match one")
    exclude: list[str] = Field(default_factory=list, description="regexes; a match is skipped")
    max_depth: int = Field(20, ge=0)
    max_pages: int | None = Field(None, ge=1, description="stop after this many stored pages")
    # politeness
    user_agent: str = PROJECT_UA
    respect_robots: bool = True
    global_concurrency: int = Field(16, ge=1)
    per_host_concurrency: int = Field(2, ge=1)
    per_host_delay_s: float = Field(0.25, ge=0, description="min gap between request starts per host")
    allow_private: bool = Field(False, description="allow private, loopback, link-local hosts")
    # robustness
    request_deadline_s: float = Field(20.0, gt=0, description="connect to last byte, per attempt")
    max_retries: int = Field(3, ge=0)
    backoff_base_s: float = Field(0.5, ge=0)
    max_retry_after_s: float = Field(30.0, ge=0)
    max_redirects: int = Field(5, ge=0)
    max_bytes: int = Field(5_000_000, ge=1024, description="cap on bytes read off the wire")
    max_decompressed_bytes: int = Field(20_000_000, ge=1024)
    allowed_content_types: list[str] = Field(default_factory=lambda: [
        "text/html", "application/xhtml+xml", "text/plain", "text/markdown"])
    # storage
    # a commit costs DuckLake ~70 ms of CPU whatever its size: 128 small pages' worth of
    # extraction paid 12 % of it on commits, 512 pay 3 %
    batch_size: int = Field(512, ge=1, description="pages per warehouse commit (a crash loses "
                            "at most one batch, or the last 30 s)")
    store_html: bool = Field(True, description="keep the raw HTML (infobox tables, re-extraction)")
    warc_out: str | None = Field(None, description="folder for gzipped WARC files of every "
                                 "response received (request + response records)")
    warc_max_bytes: int = Field(1_000_000_000, ge=1024, description="rotate WARC files at this size")
    recrawl_conditional: bool = Field(True, description="ETag/Last-Modified against stored pages")
    resume: bool = Field(False, description="URLs already in `pages` are not requested again; "
                         "their stored links continue the frontier (a restarted crawl)")
    # extraction (trafilatura): dropping comments beats its defaults on the reference set
    include_comments: bool = False
    extract_processes: int = Field(2, ge=0, description="worker processes for extraction "
                                   "(0: in the crawler's own thread)")
    favor_recall: bool = False

    @field_validator("include", "exclude")
    @classmethod
    def _regexes(cls, v: list[str]) -> list[str]:
        for pattern in v:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression {pattern!r} ({exc})") from None
        return v

    @field_validator("allowed_content_types")
    @classmethod
    def _lower(cls, v: list[str]) -> list[str]:
        return [t.strip().lower() for t in v]


# `datagen crawl` flag -> CrawlConfig field, where the two names differ.
_FLAG_FIELDS = {"concurrency": "global_concurrency", "per_host": "per_host_concurrency",
                "delay": "per_host_delay_s", "deadline": "request_deadline_s",
                "prefix": "url_prefixes"}


def crawl_settings(flags: dict) -> dict:
    """CrawlConfig fields from `datagen crawl`'s config file and flags (flags win), checked
    before a warehouse is made for a crawl that cannot start (ValueError: one line)."""
    from datagen.config_io import read_config_section, validate
    seeds, demo, warc_out = flags["seeds"], flags["demo"], flags["warc_out"]
    given = {_FLAG_FIELDS.get(k, k): v for k, v in flags.items() if k not in
             ("seeds", "demo", "warehouse", "config") and v is not None and v is not False
             and v != []}  # not given (0 is a value: --max-depth 0)
    out = {**read_config_section(flags["config"], "crawl", "CrawlConfig"), **given}
    if not demo and not seeds and not out.get("seeds"):
        raise ValueError("give URLs or folders to crawl, or --demo for the built-in demo world")
    if demo and seeds:
        raise ValueError("--demo crawls the built-in demo world; drop the seeds or drop --demo")
    if warc_out is not None and warc_out.exists() and not warc_out.is_dir():
        raise ValueError(f"--warc-out {warc_out} is a file; give a folder")
    out.update({"seeds": list(seeds)} if seeds else {})
    out.update({"warc_out": str(warc_out)} if warc_out else {})
    validate(CrawlConfig, out, "crawl settings")
    return out
