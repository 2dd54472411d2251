"""People's questions over a corpus imported as warehouse questions (composer `human`), with
evidence chains quoted from their gold pages, to be verified, banded and trained on like the
engine's own.

    records.py   HumanQuestion (what it reads), ImportConfig, GoldPage, ImportSummary, skip reasons
    evidence.py  evidence_chain: page order (the page naming the other first) and the quotes
    run.py       import_questions(wh, questions, cfg) -> ImportSummary: one run, one commit
"""

from datagen.human.records import HumanQuestion, ImportConfig, ImportSummary

__all__ = ["HumanQuestion", "ImportConfig", "ImportSummary", "import_questions", "NoPages"]


def __getattr__(name: str):
    # the config stays importable without the importer's imports (the CLI builds it first)
    if name in ("import_questions", "NoPages"):
        from datagen.human import run
        return getattr(run, name)
    raise AttributeError(name)
