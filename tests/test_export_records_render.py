"""An online export records what it rendered from, as `re-render` does: after `sync`, a
`re-render --changed-only` finds nothing to do, and a full one nothing to write (the same
renderer writes the same bytes online and offline)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pplx_export.store.render_state import load_state
from tests.e2e_support import E2E, rerender_json, signed_in, thread_dirs, thread_uuid


@pytest.fixture
def e2e(tmp_path: Path) -> Iterator[E2E]:
    with signed_in(tmp_path) as env:
        yield env


def test_after_sync_a_changed_only_rerender_renders_nothing(e2e: E2E) -> None:
    result = e2e.cli("sync")
    assert result.exit_code == 0, result.output
    threads = thread_dirs(e2e.out)
    assert len(threads) > 5
    rels = {t.relative_to(e2e.out).as_posix() for t in threads}
    # Each thread recorded in the state store as it was written...
    assert set(load_state(e2e.out)) == rels

    doc = rerender_json(e2e, "--changed-only")
    assert (doc["skipped"], doc["written"]) == (len(threads), 0), doc
    # ...and nothing else recorded by a run that renders nothing.
    assert set(load_state(e2e.out)) == rels
    assert rerender_json(e2e)["written"] == 0

    # One thread exported again: its record follows it, and it is still not re-rendered.
    computer = next(t for t in threads if t.parent.name == "computer")
    before = load_state(e2e.out)
    (computer / "raw_entries.json").unlink()  # damaged: `export` fetches it again
    result = e2e.cli("export", thread_uuid(computer))
    assert result.exit_code == 0, result.output
    after = load_state(e2e.out)
    rel = computer.relative_to(e2e.out).as_posix()
    assert after[rel] != before[rel]
    assert {k: v for k, v in after.items() if k != rel} == {
        k: v for k, v in before.items() if k != rel
    }
    doc = rerender_json(e2e, "--changed-only")
    assert (doc["skipped"], doc["written"]) == (len(threads), 0), doc
