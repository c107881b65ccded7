"""The batch plan (protocol.md App. A): which index rows the next `batch` exports, and why.

One pure function, `make_plan`, shared by `batch`, `batch --dry-run` and `status`, so what
`status` announces is exactly what `batch` does. No I/O, no clock.

Per row, newest first: `expired` and `deleted` are terminal (never re-exported, not even with
`--force`: the platform has nothing left to give); `done` = exported ok with the same
normalised `lastUpdated` (unless `--force`); `new` = never seen; `updated` = everything else
(changed since export, or failed/unfinished earlier). Unless `--full`/`--force`, the longest
trailing run of done/expired/deleted rows is dropped as "early stopped": continued threads
move to the top of the listing, so a run of finished rows at the bottom is old history the
batch need not walk. Failed threads sit above that suffix and are retried.
"""

from __future__ import annotations

import logging
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from pplx_export.archive.paths import thread_dir_name
from pplx_export.errors import UsageError
from pplx_export.parse.last_updated import normalize_last_updated, same_last_updated
from pplx_export.parse.mode import row_archive_mode, row_matches_mode
from pplx_export.util import threadref
from pplx_export.util.lenient import as_dict, as_str
from pplx_export.util.timefmt import canonical_time, parse_time

if TYPE_CHECKING:
    from pplx_export.store.batch_state import BatchState

log = logging.getLogger(__name__)

__all__ = [
    "KINDS",
    "Plan",
    "PlanItem",
    "make_plan",
    "normalize_last_updated",
    "parse_since",
    "parse_until",
    "plan_to_json",
    "row_matches_mode",
]

KINDS = ("new", "updated", "done", "expired", "deleted")
WORK_KINDS = frozenset({"new", "updated"})
FINISHED_KINDS = frozenset({"done", "expired", "deleted"})
TERMINAL_STATUSES = frozenset({"expired", "deleted"})

_EPOCH = datetime.min.replace(tzinfo=UTC)


def parse_since(value: str | datetime) -> datetime:
    """`--since DATE`: a date (midnight UTC) or an ISO datetime. ValueError when unreadable."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    parsed = parse_time(value)
    if parsed is None:
        raise ValueError(f"not a date: {value!r} (expected YYYY-MM-DD or an ISO datetime)")
    return parsed


def parse_until(value: str | datetime) -> datetime:
    """`--until DATE`: the first instant after it (rows at or past it are left out). A bare
    date includes that whole day (the next midnight UTC). ValueError when unreadable."""
    if isinstance(value, str) and len(value.strip()) == 10:
        return parse_since(value) + timedelta(days=1)
    return parse_since(value) + timedelta(microseconds=1)  # "on or before" that instant


@dataclass(frozen=True)
class PlanItem:
    uuid: str
    title: str
    last_updated: str
    kind: str  # one of KINDS
    previous: str  # the state status before this run ("" when never seen)
    row: Mapping[str, Any] = field(compare=False, repr=False)

    @property
    def mode(self) -> str:
        """The archive mode the row announces (the thread's own entries decide on export)."""
        return row_archive_mode(self.row)

    @property
    def planned_dir(self) -> str:
        """`<mode>/<date>_<slug>_<uuid8>`: where a new export lands under the account folder."""
        return f"{self.mode}/{thread_dir_name(self.last_updated, self.title, self.uuid)}"


@dataclass
class Plan:
    items: list[PlanItem]  # every row the batch walks, newest first (early stop applied)
    todo: list[PlanItem]  # the work: new/updated, after --limit
    early_stopped: list[PlanItem]  # the trailing finished run that was dropped
    deferred: int = 0  # work items left out by --limit
    filtered_out: int = 0  # rows excluded by --mode / --since
    skipped: list[str] = field(default_factory=list)  # rows without entryUUID (titles)

    def count(self, kind: str) -> int:
        """Work kinds count the to-do list; finished kinds count the rows walked."""
        pool = self.todo if kind in WORK_KINDS else self.items
        return sum(1 for item in pool if item.kind == kind)

    @property
    def counts(self) -> dict[str, int]:
        out = {kind: self.count(kind) for kind in KINDS}
        out["early_stopped"] = len(self.early_stopped)
        out["deferred"] = self.deferred
        out["filtered_out"] = self.filtered_out
        out["skipped_no_uuid"] = len(self.skipped)
        return out

    def counts_text(self) -> str:
        """`new 3, done 5`: the non-zero counts, for one-line reports."""
        return ", ".join(f"{k} {v}" for k, v in self.counts.items() if v)

    def lines(self) -> list[str]:
        """The human plan (`batch --dry-run`): a count line, then one line per work item."""
        out = [f"plan: {self.counts_text() or 'nothing'}"]
        out += [
            f"  {item.kind:8} {item.mode:13} {item.last_updated:28} {item.uuid}  {item.title}"
            for item in self.todo
        ]
        return out

    def to_json(self) -> dict[str, Any]:
        return plan_to_json(self)


def _classify(
    record: Mapping[str, Any] | None, last_updated: str, force: bool, damaged: bool = False
) -> str:
    if record is None:
        return "new"
    status = as_str(record.get("status"))
    if status in TERMINAL_STATUSES:
        return status
    if damaged:
        return "updated"  # its raw files do not parse: only a fetch repairs them
    if status == "ok" and not force and same_last_updated(record.get("lastUpdated"), last_updated):
        return "done"
    return "updated"


def make_plan(
    rows: Iterable[Mapping[str, Any]],
    state: Mapping[str, Mapping[str, Any]],
    *,
    full: bool = False,
    force: bool = False,
    limit: int | None = None,
    mode: str | None = None,
    since: str | datetime | None = None,
    until: str | datetime | None = None,
    damaged: Container[str] = frozenset(),
) -> Plan:
    """Classify index rows against the batch state (`{web_uuid: record}`) into a plan.

    `damaged` names exported threads whose raw files do not parse
    (`archive.raw_check`): they are `updated`, whatever their `lastUpdated` says.

    Filters (`mode`, `since`) apply first, then the newest-first sort, the classification,
    the trailing early stop (unless `full`/`force`), and last `limit` on the work items.
    """
    since_at = parse_since(since) if since is not None else None
    until_at = parse_until(until) if until is not None else None
    kept: list[Mapping[str, Any]] = []
    skipped: list[str] = []
    filtered_out = 0
    for row in rows:
        uuid = as_str(row.get("entryUUID"))
        if not uuid:
            title = as_str(row.get("title")) or "(untitled)"
            log.warning("index row without entryUUID skipped: %s", title)
            skipped.append(title)
            continue
        if mode is not None and not row_matches_mode(row, mode):
            filtered_out += 1
            continue
        if since_at is not None or until_at is not None:
            at = parse_time(row.get("lastUpdated"))
            if (
                at is None
                or (since_at is not None and at < since_at)
                or (until_at is not None and at >= until_at)
            ):
                filtered_out += 1
                continue
        kept.append(row)
    # Stable sort: rows with equal (or unreadable) lastUpdated keep the listing's order.
    kept.sort(key=lambda r: parse_time(r.get("lastUpdated")) or _EPOCH, reverse=True)

    items: list[PlanItem] = []
    seen: set[str] = set()
    for row in kept:
        uuid = as_str(row.get("entryUUID"))
        if uuid in seen:
            continue  # a duplicated row: the newest copy already decided
        seen.add(uuid)
        last_updated = canonical_time(row.get("lastUpdated"))
        record = state.get(uuid)
        record = as_dict(record) if record is not None else None
        items.append(
            PlanItem(
                uuid=uuid,
                title=as_str(row.get("title")),
                last_updated=last_updated,
                kind=_classify(record, last_updated, force, uuid in damaged),
                previous=as_str(record.get("status")) if record is not None else "",
                row=row,
            )
        )

    cut = len(items)
    if not (full or force):
        while cut > 0 and items[cut - 1].kind in FINISHED_KINDS:
            cut -= 1
    walked, early = items[:cut], items[cut:]
    work = [item for item in walked if item.kind in WORK_KINDS]
    todo = work if limit is None else work[: max(limit, 0)]
    return Plan(
        items=walked,
        todo=todo,
        early_stopped=early,
        deferred=len(work) - len(todo),
        filtered_out=filtered_out,
        skipped=skipped,
    )


def plan_to_json(plan: Plan, *, list_items: bool = True) -> dict[str, Any]:
    """The plan as a JSON-able document (`batch --dry-run --json`, `status --json`)."""
    doc: dict[str, Any] = {"counts": plan.counts}
    if list_items:
        doc["todo"] = [
            {
                "uuid": item.uuid,
                "title": item.title,
                "lastUpdated": item.last_updated,
                "kind": item.kind,
                "previous": item.previous,
                "mode": item.mode,
                "dir": item.planned_dir,
            }
            for item in plan.todo
        ]
    if plan.skipped:
        doc["skipped_no_uuid"] = list(plan.skipped)
    return doc


def parse_thread_ref(ref: str) -> tuple[str, str]:
    """(web_uuid, url) from a thread reference: a UUID, or a thread URL of either slug form
    (`/search/<uuid>`, `/search/<title>-<22 chars>`, `/computer/tasks/<uuid>`, `/thread/<…>`).

    UUIDs are accepted in any case and stored lower-cased; a title slug names its UUID
    with no request (protocol §9.4). The URL (without query string or fragment) is kept only
    when the user gave a `/search/` or `/computer/tasks/` one: it decides the
    computer-vs-search URL form (protocol §4.3).
    """
    parsed = threadref.parse_thread_ref(ref)
    if parsed is None:
        raise UsageError(f"not a thread URL or UUID: {ref!r}; give {threadref.ACCEPTED_FORMS}")
    url = parsed.url if parsed.kind in ("search", "computer/tasks") else ""
    return parsed.uuid, url


def unchanged_since_export(state: BatchState, web_uuid: str, row: dict[str, Any] | None) -> bool:
    """True when the state says ok with the same (normalised) lastUpdated as `row`."""
    record = state.get(web_uuid)
    if not record or record.get("status") != "ok" or not row:
        return False
    return same_last_updated(record.get("lastUpdated"), row.get("lastUpdated"))
