"""The emulator's multi-account cookie jar: a token cookie per account, ids as the session
probe reports them, written to a file by `--write-cookies` (issue 12)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx

from pplx_export.emulator import SESSION_COOKIE, run_emulator
from pplx_export.emulator.accounts import ACCOUNT_PREFIX

BOB = ("tok-bob", "bob@example.com", "Bob")


def test_account_jar_matches_the_session_probe() -> None:
    with run_emulator(extra_accounts={BOB[0]: (BOB[1], BOB[2])}) as emu:
        jar = emu.account_cookies()
        assert jar[SESSION_COOKIE] == emu.session_token
        per_account = {k[len(ACCOUNT_PREFIX) :]: v for k, v in jar.items() if k != SESSION_COOKIE}
        assert len(per_account) == 2
        seen = {}
        for uid, token in per_account.items():
            answer = httpx.get(
                emu.base_url + "/api/auth/session", cookies={SESSION_COOKIE: token}, timeout=10
            ).json()
            assert answer["user"]["id"] == uid
            seen[answer["user"]["email"]] = token
    assert seen == {"alice@example.com": jar[SESSION_COOKIE], BOB[1]: BOB[0]}


def test_write_cookies_option(tmp_path: Path) -> None:
    target = tmp_path / "jar.json"
    argv = [sys.executable, "-m", "pplx_export.emulator", "--port", "0"]
    argv += ["--extra-account", f"{BOB[0]}:{BOB[1]}", "--write-cookies", str(target)]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) as proc:
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline().startswith("http://127.0.0.1:")
            jar = json.loads(target.read_text("utf-8"))
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    assert SESSION_COOKIE in jar and BOB[0] in jar.values()
    assert sum(1 for k in jar if k.startswith(ACCOUNT_PREFIX)) == 2
