"""Label catalogs: zh keeps the seed's literal strings, en has its own."""

from __future__ import annotations

import dataclasses

import pytest

from pplx_export.render.labels import CATALOGS, EN, ZH, labels_for


def test_zh_seed_literals() -> None:
    assert ZH.subagent_work == "子代理工作"
    assert ZH.appendix_heading == "## 后台任务（未归入轮次）"
    assert ZH.tag_limit == "⏸ 限额中断（内容截至中断点）"
    assert ZH.tag_awaiting == "⏸ 中断待续"
    assert ZH.tag_canceled == "⛔ 已取消"


@pytest.mark.parametrize(
    ("status", "reason", "en", "zh"),
    [
        ("WORKFLOW_AWAITING_NEXT_STEPS", "spending_limit_exceeded", EN.tag_limit, ZH.tag_limit),
        ("WORKFLOW_AWAITING_NEXT_STEPS", "", EN.tag_awaiting, ZH.tag_awaiting),
        ("workflow_canceled", None, EN.tag_canceled, ZH.tag_canceled),
        ("WORKFLOW_COMPLETED", "spending_limit_exceeded", "", ""),
        ("", None, "", ""),
        ("SOMETHING_NEW", None, "", ""),
    ],
)
def test_tags(status: str, reason: str | None, en: str, zh: str) -> None:
    assert EN.tag(status, reason) == en
    assert ZH.tag(status, reason) == zh


def test_en_is_default_and_catalogs_are_complete() -> None:
    assert labels_for("fr") is EN
    assert labels_for("zh") is ZH
    assert set(CATALOGS) == {"en", "zh"}
    for lb in CATALOGS.values():
        for f in dataclasses.fields(lb):
            assert getattr(lb, f.name), f"{lb.lang}.{f.name} is empty"
    assert EN.par("x") == " (x)"
    assert ZH.par("x") == "（x）"
