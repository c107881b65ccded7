"""`resumable`: how the upkeep runs end (Ctrl-C, an error, or done), each timed."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest

from pplx_export.commands.upkeep.resumable import INTERRUPTED, resumable
from pplx_export.errors import Interrupted


@dataclass
class _Result:
    elapsed: float = 0.0


def _started() -> float:
    # A start a second ago: any recorded time is then visibly at least that.
    return time.monotonic() - 1.0


def test_done_records_the_time() -> None:
    result = _Result()
    with resumable(result, _started()):
        pass
    assert result.elapsed >= 1.0


def test_ctrl_c_is_interrupted_and_timed() -> None:
    result = _Result()
    with pytest.raises(Interrupted) as caught, resumable(result, _started()):
        raise KeyboardInterrupt
    assert str(caught.value) == INTERRUPTED
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert result.elapsed >= 1.0


def test_the_block_saves_before_the_time_is_taken() -> None:
    """What the block saves in its own `finally` runs first, as the commands rely on."""
    result = _Result()
    order: list[str] = []
    with pytest.raises(Interrupted), resumable(result, _started()):
        try:
            raise KeyboardInterrupt
        finally:
            order.append(f"saved, elapsed {result.elapsed}")
    assert order == ["saved, elapsed 0.0"]
    assert result.elapsed >= 1.0


def test_other_errors_pass_through_timed() -> None:
    result = _Result()
    with pytest.raises(ValueError, match="boom"), resumable(result, _started()):
        raise ValueError("boom")
    assert result.elapsed >= 1.0
