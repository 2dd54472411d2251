"""The views the warehouse defines over its tables: train_ready, what the trainer reads.

migrate.py creates the view (and recreates it when TRAIN_READY_VERSION moves); ranges.py
evaluates its query one key range at a time (`train_ready_select`).
"""

from __future__ import annotations

# The trainer's view: questions whose latest verdict for every check is `pass`
# (and that have at least one verdict), with the band of their latest difficulty row.
# `{key}` filters every input by question_id before it is aggregated and `{at}` pins a
# snapshot: the view uses neither; the trainer's reader (warehouse/ranges.py) evaluates it
# one key range at a time, at one snapshot.
TRAIN_READY_VERSION = 2  # bump when TRAIN_READY_SELECT changes: writers then recreate the view
TRAIN_READY_SELECT = """
WITH latest_verdicts AS (
    SELECT question_id, check_name,
           arg_max(status, created_at) AS status
    FROM {lake}.verdicts {at} WHERE {key} GROUP BY question_id, check_name
), verified AS (
    SELECT question_id FROM latest_verdicts
    GROUP BY question_id HAVING bool_and(status = 'pass')
), latest_difficulty AS (
    SELECT question_id, arg_max(band, created_at) AS band,
           arg_max(pass_rate, created_at) AS pass_rate
    FROM {lake}.difficulty {at} WHERE {key} GROUP BY question_id
), latest_question AS (
    SELECT question_id, arg_max(question, created_at) AS question,
           arg_max(answer, created_at) AS answer,
           arg_max(answer_aliases, created_at) AS answer_aliases,
           arg_max(hops, created_at) AS hops,
           coalesce(arg_max(answer_type, created_at), '') AS answer_type,
           max(created_at) AS created_at
    FROM {lake}.questions {at} WHERE {key} GROUP BY question_id
)
SELECT q.question_id, q.question, q.answer, q.answer_aliases, d.band, d.pass_rate, q.created_at,
       q.hops, q.answer_type
FROM latest_question q
JOIN verified v USING (question_id)
JOIN latest_difficulty d USING (question_id)
"""
TRAIN_READY_SQL = ("CREATE OR REPLACE VIEW {lake}.train_ready AS"
                   + TRAIN_READY_SELECT.replace("{key}", "TRUE").replace(" {at}", ""))


def train_ready_select(lake: str, key: str = "TRUE", at: str = "") -> str:
    """The train_ready query over `lake`, each input filtered by `key` (SQL on question_id)
    and read `at` a version (e.g. "AT (VERSION => 12)"; "" = the attached state)."""
    return TRAIN_READY_SELECT.format(lake=lake, key=key, at=at)


# The shortcut check's latest verdict per question, counted by the question's latest hops
# (>= 2: the check does not apply to one hop): the build summary and the dataset card.
SHORTCUTS_BY_HOPS_SQL = """
WITH latest_verdict AS (
    SELECT question_id, arg_max(status, created_at) AS status
    FROM verdicts WHERE check_name = 'shortcut' GROUP BY question_id
), latest_hops AS (
    SELECT question_id, arg_max(hops, created_at) AS hops FROM questions GROUP BY question_id
)
SELECT h.hops, count(*) AS judged, count(*) FILTER (WHERE v.status = 'fail') AS shortcuts
FROM latest_verdict v JOIN latest_hops h USING (question_id)
WHERE h.hops >= 2 GROUP BY h.hops ORDER BY h.hops
"""


def shortcuts_by_hops(wh) -> dict[str, dict[str, int]]:
    """{hops: {"judged": n, "shortcuts": m}}: how many questions of each hop count the
    shortcut check judged (latest verdict) and how many of them one search gives away."""
    return {str(r["hops"]): {"judged": int(r["judged"]), "shortcuts": int(r["shortcuts"])}
            for r in wh.sql(SHORTCUTS_BY_HOPS_SQL).to_pylist()}


def shortcut_share(counts: dict[str, int]) -> str:
    """"m of n (0.xxx)": one hop count's shortcuts, as the summary and the card print them."""
    share = counts["shortcuts"] / counts["judged"] if counts["judged"] else 0.0
    return f"{counts['shortcuts']} of {counts['judged']} ({share:.3f})"


def shortcut_table(shortcuts: dict[str, dict[str, int]]) -> list[str]:
    """Markdown rows of `shortcuts_by_hops`, header first (the build summary and the card)."""
    lines = ["| hops | shortcuts of judged (share) |", "|---|---:|"]
    return lines + ([f"| {h} | {shortcut_share(c)} |" for h, c in shortcuts.items()]
                    or ["| (none judged) | 0 of 0 |"])
