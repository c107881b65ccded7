"""Helpers shared by the parser tests: load archive-shaped thread folders."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pplx_export.models import Conversation
from pplx_export.parse import parse_thread, row_from_thread_json

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "archive"


@dataclass
class ThreadDir:
    path: Path
    plain: dict[str, Any]
    blocks: dict[str, Any] | None
    thread_json: dict[str, Any]

    @property
    def name(self) -> str:
        return self.path.name

    def parse(self) -> Conversation:
        tj = self.thread_json
        return parse_thread(
            self.plain,
            self.blocks,
            row_from_thread_json(tj),
            url=tj.get("url") or "",
            export_via=tj.get("export_via") or "",
            exported_at=tj.get("exported_at") or "",
        )


def load_dir(path: Path) -> ThreadDir:
    blocks_path = path / "raw_blocks.json"
    return ThreadDir(
        path=path,
        plain=json.loads((path / "raw_entries.json").read_text(encoding="utf-8")),
        blocks=json.loads(blocks_path.read_text(encoding="utf-8"))
        if blocks_path.exists()
        else None,
        thread_json=json.loads((path / "thread.json").read_text(encoding="utf-8")),
    )


def thread_dirs(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.glob("*/*/*/thread.json"))


def fixture(slug_part: str) -> ThreadDir:
    """The one fixture folder whose name contains `slug_part`."""
    found = [p for p in thread_dirs(FIXTURES) if slug_part in p.name]
    assert len(found) == 1, (slug_part, found)
    return load_dir(found[0])
