"""A loopback stand-in for Perplexity's web API, serving an archive directory (docs/emulator.md).

with run_emulator() as emu:            # the bundled sample library
    httpx.get(emu.base_url + "/api/auth/session", cookies=emu.cookies)
"""

from __future__ import annotations

from pplx_export.emulator.app import (
    DEFAULT_EMAIL,
    DEFAULT_NAME,
    DEFAULT_PAGE_SIZE,
    DEFAULT_TOKEN,
    DEFAULT_USERNAME,
    SESSION_COOKIE,
)
from pplx_export.emulator.faults import FaultSpec, FaultSpecError, parse_faults
from pplx_export.emulator.library import SAMPLE_DIR, Library
from pplx_export.emulator.server import EmulatorServer, RunningEmulator, make_server, run_emulator

SAMPLE_COOKIES = SAMPLE_DIR.parent / "sample_cookies.json"

__all__ = [
    "DEFAULT_EMAIL",
    "DEFAULT_NAME",
    "DEFAULT_PAGE_SIZE",
    "DEFAULT_TOKEN",
    "DEFAULT_USERNAME",
    "SAMPLE_COOKIES",
    "SAMPLE_DIR",
    "SESSION_COOKIE",
    "EmulatorServer",
    "FaultSpec",
    "FaultSpecError",
    "Library",
    "RunningEmulator",
    "make_server",
    "parse_faults",
    "run_emulator",
]
