"""The import report spools its rows: the same document as one json.dumps, read back in order."""

from __future__ import annotations

import io
import json

from pplx_export.commands.export.import_report import Audited, ImportReport


def _report(n: int) -> ImportReport:
    report = ImportReport(file="/tmp/export.zip", audit_only=False, skipped=[("c 3", "bad")])
    for i in range(n):
        status = ("complete", "missing_turns", "not_archived")[i % 3]
        report.add(
            Audited(
                web_uuid=f"u{i}",
                title=f'Thé question {i} "quoted"\nsecond line',
                status=status,
                turns=i + 1,
                dir=f"alice/search/d{i}" if status != "not_archived" else "",
                missing=[f"q{i}"] if status == "missing_turns" else [],
                source="official_export" if i == 2 else "",
                action={"missing_turns": "turns_added", "not_archived": "recovered"}.get(
                    status, ""
                ),
            )
        )
    return report


def test_the_streamed_document_is_the_one_json_dumps_writes() -> None:
    for n in (0, 1, 7):
        report = _report(n)
        out = io.StringIO()
        report.write_json(out)
        assert out.getvalue() == json.dumps(report.to_json(), ensure_ascii=False, indent=1) + "\n"
        doc = json.loads(out.getvalue())
        assert [t["web_uuid"] for t in doc["threads"]] == [f"u{i}" for i in range(n)]
        report.close()


def test_counts_and_lines_come_from_the_spool() -> None:
    report = _report(7)
    doc = report.to_json()
    assert (doc["conversations"], doc["complete"], doc["missing_turns"]) == (7, 3, 2)
    assert (doc["not_archived"], doc["recovered"], doc["turns_added"]) == (2, 2, 2)
    assert doc["only_in_export"] == 1 and report.problems == 4
    lines = report.lines()
    assert lines[0].startswith("7 conversation(s) in export.zip: 3 archived and complete")
    assert sum(line.startswith("  missing turns: ") for line in lines) == 2
    assert "    - q1" in lines and "  skipped: c 3: bad" in lines
    # Read twice, and added to after a read: the spool appends at its end.
    assert list(report.rows()) == list(report.rows())
    report.add(Audited(web_uuid="last", title="t", status="complete", turns=1))
    assert [r["web_uuid"] for r in report.rows()][-2:] == ["u6", "last"]
    report.close()
