"""Hand-built stand-ins for the parser and renderer, for archive and re-render tests.

The fake payload is a tiny invented shape: `{"thread_metadata": {...}, "entries": [{"uuid",
"query_str", "answer", "read_write_token"?, "side_by_side_metadata"?}]}`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pplx_export.errors import SchemaError
from pplx_export.models import Citation, Conversation, Report, ReportInfo, Space, Turn
from pplx_export.pipeline.assemble import Engine
from pplx_export.store.render_state import STATE_NAME


def fake_parse(
    plain: dict[str, Any],
    blocks: dict[str, Any] | None,
    index_row: dict[str, Any],
    *,
    web_uuid: str,
    url: str = "",
    export_via: str = "",
    exported_at: str = "",
) -> Conversation:
    entries = plain.get("entries")
    if not isinstance(entries, list):
        raise SchemaError("entries is not a list", thread=web_uuid, path="$.entries")
    space = index_row.get("space")
    conv = Conversation(
        web_uuid=web_uuid,
        url=url,
        title=str(index_row.get("title") or "untitled"),
        author=str(index_row.get("authorUsername") or ""),
        export_via=export_via,
        mode=str(plain.get("thread_metadata", {}).get("fake_mode") or "search"),
        last_updated=str(index_row.get("lastUpdated") or ""),
        space=Space(**space) if isinstance(space, dict) else None,
        metadata=plain.get("thread_metadata") or {},
        raw_plain=plain,
        raw_blocks=blocks,
        exported_at=exported_at,
    )
    for i, e in enumerate(entries, 1):
        turn = Turn(index=i, uuid=e.get("uuid", ""), query=e.get("query_str", ""))
        turn.answer = turn.display_answer = e.get("answer", "")
        turn.citations = [Citation(name=u, url=u) for u in e.get("urls", [])]
        conv.turns.append(turn)
        conv.citations.extend(turn.citations)
        meta = e.get("side_by_side_metadata")
        if isinstance(meta, dict) and meta.get("sibling_uuid"):
            conv.answer_variants.append(
                {
                    "entry_uuid": e.get("uuid", ""),
                    "sibling_uuid": meta["sibling_uuid"],
                    "selection_status": meta.get("selection_status", ""),
                    "experiment_role": meta.get("experiment_role", ""),
                }
            )
    if plain.get("thread_metadata", {}).get("fake_report"):
        conv.report = Report(info=ReportInfo(title="Fake report", file_name="r.md"))
    return conv


def fake_render(conv: Conversation, lang: str, local: object = ()) -> dict[str, str]:
    files = {
        "conversation.md": f"# {conv.title}\n"
        + "".join(f"\n## Turn {t.index}\n{t.query}\n{t.answer}\n" for t in conv.turns),
        "sources.md": "# Sources\n"
        + "".join(f"{i}. [{c.name}]({c.url})\n" for i, c in enumerate(conv.citations, 1)),
        "sources.json": json.dumps(
            {"count": len(conv.citations), "sources": [c.url for c in conv.citations]},
            indent=1,
        ),
    }
    for t in conv.turns:
        files[f"turns/turn_{t.index:04d}.md"] = f"# Turn {t.index} [{lang}]\n{t.answer}"
    return files


def fake_render_report(conv: Conversation, body: str, lang: str) -> str:
    title = conv.report.info.title if conv.report else "report"
    return f"# {title}\n\n{body}"


FAKE_ENGINE = Engine(
    parse=fake_parse, render=fake_render, render_report=fake_render_report, version="fake-1"
)


def make_thread(
    root: Path,
    *,
    web_uuid: str,
    title: str = "A question",
    account: str = "alice",
    mode: str = "search",
    last_updated: str = "2030-01-02T03:04:05.000000Z",
    n_turns: int = 2,
    token: str | None = None,
    extra_thread_json: dict[str, Any] | None = None,
    old_tool: bool = False,
) -> Path:
    """Write an archived thread (thread.json + raw_entries.json) and return its directory."""
    from pplx_export.archive.paths import thread_dir

    d = thread_dir(root, account, mode, last_updated, title, web_uuid)
    d.mkdir(parents=True)
    entries = []
    for i in range(1, n_turns + 1):
        e: dict[str, Any] = {
            "uuid": f"{web_uuid[:8]}-e{i}",
            "query_str": f"question {i} about {title}",
            "answer": f"answer {i}",
            "urls": [f"https://example.org/{web_uuid[:8]}/{i}"],
        }
        if token:
            e["read_write_token"] = token
            e["nested"] = [{"read_write_token": token}]
        entries.append(e)
    plain = {"thread_metadata": {"fake_mode": mode}, "entries": entries, "background_entries": []}
    (d / "raw_entries.json").write_text(json.dumps(plain, ensure_ascii=False), encoding="utf-8")
    doc: dict[str, Any] = {
        "web_uuid": web_uuid,
        "url": f"https://example.org/search/{web_uuid}",
        "title": title,
        "mode": mode,
        "author": account,
        "export_via": account,
        "space": None,
        "lastUpdated": last_updated,
    }
    if not old_tool:
        doc["exported_at"] = "2030-01-03T00:00:00Z"
    doc.update(extra_thread_json or {})
    (d / "thread.json").write_text(json.dumps(doc, ensure_ascii=False, indent=1), encoding="utf-8")
    return d


# The search index is state, not output (its rows record the files' mtimes, its meta a build
# time); tests/test_search_*.py check what it holds and that a no-op run leaves it alone.
SNAPSHOT_SKIPS = frozenset({"index/search.sqlite"})


# Files a re-render records state in (stats, mtimes): they differ between copies and runs.
DERIVED_STATE = frozenset(
    {
        STATE_NAME,  # the state store, with its WAL files while a connection is open
        f"{STATE_NAME}-wal",
        f"{STATE_NAME}-shm",
    }
)


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under root with its bytes and mtime_ns (but the search index)."""
    return {
        rel: (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file() and (rel := p.relative_to(root).as_posix()) not in SNAPSHOT_SKIPS
    }
