"""Managing the schedule `schedule` wrote: `--status`, `--uninstall`, `--check` (issue 32),
and the advice on which cookie source a job without a desktop session can use.

`--status` reads the crontab (our marked entries for this archive) and the systemd user unit
directory (our `pplx-export-sync-*.timer` units whose service runs sync on this archive),
computes the next run from their times and shows each account's last result from
the `sync_runs` document. One archive scheduled both ways runs twice a night: a warning says so.
`--uninstall` removes this archive's entries and units (only the `--account` set's, when
one is given). `--check` runs the job's sign-in once (the hidden `check-signin` command with
the job's options) in the environment cron or systemd gives a job, and reports what happened:
what works from a terminal can fail at 03:30 for want of the desktop keyring.

Long because `--status`, `--uninstall` and `--check` all read the same two installations
(the crontab's marked lines, the systemd user units) with the same readers, and the cookie
advice is what `--check` reports when the job's sign-in fails.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pplx_export.commands.setup.schedule import (
    MARKER,
    UNIT_NAME,
    Installer,
    _fail,
    _run,
    cron_marker,
    default_unit_dir,
    executable_argv,
    read_crontab,
    scheduled_accounts,
    systemd_quote,
    unit_name,
    wrapped,
)
from pplx_export.context import RunOptions
from pplx_export.errors import PplxError
from pplx_export.site.browsers import parse_browser_spec
from pplx_export.site.cookies import CACHE_MAX_AGE_S, read_cache_record
from pplx_export.store.sync_runs import load_runs
from pplx_export.util.jsonobj import attrs_json

log = logging.getLogger(__name__)

CHECK_TIMEOUT_S = 120.0
# The environment cron gives a job (Debian/Ubuntu/Fedora cronie): no desktop session.
CRON_PATH = "/usr/bin:/bin"
# What a systemd user service additionally inherits from the user manager.
SYSTEMD_VARS = ("XDG_RUNTIME_DIR", "DBUS_SESSION_BUS_ADDRESS")
# Browsers whose cookie store on Linux is encrypted with a key from the desktop keyring.
KEYRING_BROWSERS = ("chrome", "chromium", "edge", "brave", "opera", "vivaldi")


# ------------------------------------------------------------------ cookie advice


def cookie_advice(
    archive_root: Path, cookies_from: str | None, cookies_file: Path | None, *, now: float = 0.0
) -> list[str]:
    """Which cookie source the scheduled job can use with nobody logged in (Linux only)."""
    if not sys.platform.startswith("linux"):
        return []
    if cookies_file is not None:
        return [
            f"cookies: the job reads {cookies_file}, which works unattended; export it again "
            "when that session ends (`pplx-export schedule --check` tells)"
        ]
    if cookies_from:
        return _browser_advice(cookies_from)
    import time

    record = read_cache_record(archive_root)
    if record is None:
        return [
            "cookies: no cookie option and no cookie cache yet: the job will try the browsers, "
            "whose keyring cron cannot reach; run `pplx-export sync` once first (it fills the "
            "cache that every later run renews) or schedule with --cookies FILE"
        ]
    age_h = record.age(now or time.time()) / 3600
    origin = record.origin_spec or record.cookies.origin or "unknown"
    fresh = "fresh" if age_h * 3600 < CACHE_MAX_AGE_S else "stale, still tried"
    text = (
        f"cookies: the job signs in from the cookie cache ({age_h:.0f} h old, {fresh}), which "
        f"every successful run renews; when it fails it reads its source again ({origin})"
    )
    kind, _, spec = origin.partition(":")
    if kind == "browser" and spec.split("+")[0].split(":")[0] in KEYRING_BROWSERS:
        text += ", whose keyring cron cannot reach: `pplx-export schedule --check` tries it"
    return [text]


def _browser_advice(spec_text: str) -> list[str]:
    try:
        spec = parse_browser_spec(spec_text)
    except ValueError:
        return []
    if spec.browser in KEYRING_BROWSERS and spec.keyring != "basictext":
        return [
            f"cookies: {spec.browser} encrypts its cookies with a key in the desktop keyring, "
            "which cron cannot reach (a systemd user timer can, while you are logged in: "
            "--systemd); a run that cannot read it signs in from the cookie cache, which "
            "every successful run renews. `pplx-export schedule --check` tries it; "
            "--cookies FILE always works"
        ]
    return [f"cookies: {spec.browser} needs no keyring: the job reads it unattended"]


# ------------------------------------------------------------------ what is installed


@dataclass
class CronEntry:
    marker: str
    line: str

    @property
    def time(self) -> str:
        fields = self.line.split(" ", 2)
        if len(fields) >= 2 and fields[0].isdigit() and fields[1].isdigit():
            return f"{int(fields[1]):02d}:{int(fields[0]):02d}"
        return ""


@dataclass
class UnitEntry:
    name: str
    timer: Path
    time: str


def _ours(marker: str, root: Path, accounts: Sequence[str] | None) -> bool:
    """A marker of this archive (of this account set, unless `accounts` is None)."""
    if accounts is not None:
        return marker == cron_marker(root, accounts)
    base = cron_marker(root)
    return marker == base or marker.startswith(base + " (accounts ")


def cron_entries(text: str, root: Path, accounts: Sequence[str] | None = None) -> list[CronEntry]:
    lines = text.splitlines()
    return [
        CronEntry(line.strip(), lines[i + 1] if i + 1 < len(lines) else "")
        for i, line in enumerate(lines)
        if line.strip().startswith(MARKER) and _ours(line.strip(), root, accounts)
    ]


def unit_entries(
    unit_dir: Path, root: Path, accounts: Sequence[str] | None = None
) -> list[UnitEntry]:
    """Our timers whose service runs sync on `root` (only `unit_name(root, accounts)` when
    `accounts` is given)."""
    if not unit_dir.is_dir():
        return []
    wanted = systemd_quote(str(root.expanduser().absolute()))
    found = []
    for timer in sorted(unit_dir.glob(f"{UNIT_NAME}*.timer")):
        name = timer.name.removesuffix(".timer")
        if accounts is not None and name != unit_name(root, accounts):
            continue
        try:
            service = (unit_dir / f"{name}.service").read_text("utf-8")
            timer_text = timer.read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if f'"--out" {wanted}' not in service:
            continue
        when = re.search(r"^OnCalendar=\*-\*-\* (\d{2}:\d{2})", timer_text, re.MULTILINE)
        found.append(UnitEntry(name, timer, when.group(1) if when else ""))
    return found


def _crontab_or_none(installer: Installer) -> str | None:
    try:
        return read_crontab(installer)
    except PplxError as exc:
        log.debug("crontab unreadable: %s", exc)
        return None


def other_kind_installed(root: Path, installer: Installer, *, systemd: bool) -> str:
    """After installing one kind: the other kind already scheduled for this archive, or ""."""
    if systemd:
        text = _crontab_or_none(installer)
        return "a crontab entry" if text and cron_entries(text, root) else ""
    units = unit_entries(installer.unit_dir or default_unit_dir(), root)
    return f"the systemd timer {units[0].name}" if units else ""


def next_run(times: Sequence[str], now: datetime) -> datetime | None:
    """The next local moment one of the daily `HH:MM` times comes round."""
    best: datetime | None = None
    for text in times:
        if not text:
            continue
        hour, minute = (int(part) for part in text.split(":"))
        moment = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
        if moment <= now:
            moment += timedelta(days=1)
        best = moment if best is None or moment < best else best
    return best


@dataclass
class ScheduleStatus:
    archive: Path
    cron: list[CronEntry] = field(default_factory=list)
    units: list[UnitEntry] = field(default_factory=list)
    next_run: datetime | None = None
    last_runs: dict[str, dict[str, str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"archive {self.archive}"]
        if not self.cron and not self.units:
            out.append("nothing scheduled (`pplx-export schedule --install` sets it up)")
        for entry in self.cron:
            who = entry.marker.partition(" (accounts ")[2].rstrip(")") or "every account"
            out.append(f"crontab: every day at {entry.time or '?'} ({who})")
            out.append(f"  {entry.line}")
        for unit in self.units:
            out.append(f"systemd: {unit.name}.timer, every day at {unit.time or '?'}")
            out.append(f"  {unit.timer}")
        if self.next_run is not None:
            out.append(f"next run: {self.next_run:%Y-%m-%d %H:%M} (local time)")
        for account, rec in self.last_runs.items():
            ok = f", last ok {rec['last_ok_at']}" if rec.get("last_ok_at") else ""
            out.append(
                f"last run {account}: {rec.get('last_result') or '?'} "
                f"({rec.get('last_run_at') or '?'}{ok})"
            )
        out += wrapped(f"warning: {w}" for w in self.warnings)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "archive": str(self.archive),
            "cron": [{"marker": e.marker, "line": e.line, "time": e.time} for e in self.cron],
            "systemd": [
                {"unit": u.name, "timer": str(u.timer), "time": u.time} for u in self.units
            ],
            "next_run": self.next_run.isoformat(timespec="minutes") if self.next_run else None,
            "last_runs": self.last_runs,
            "warnings": self.warnings,
        }


def schedule_status(
    opts: RunOptions, installer: Installer | None = None, *, now: datetime | None = None
) -> ScheduleStatus:
    installer = installer or Installer()
    root = opts.out
    text = _crontab_or_none(installer)
    status = ScheduleStatus(archive=root)
    status.cron = cron_entries(text or "", root)
    status.units = unit_entries(installer.unit_dir or default_unit_dir(), root)
    times = [e.time for e in status.cron] + [u.time for u in status.units]
    status.next_run = next_run(times, now or datetime.now())
    status.last_runs = load_runs(root)
    if status.cron and status.units:
        status.warnings.append(
            "both a crontab entry and a systemd timer run sync for this archive (it runs "
            "twice); remove one: `schedule --uninstall` removes both, then install one"
        )
    if len(status.cron) + len(status.units) > 1 and not status.warnings:
        status.warnings.append("this archive is scheduled more than once")
    return status


# ------------------------------------------------------------------ uninstall


@dataclass
class Uninstalled:
    archive: Path
    removed: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        if not self.removed:
            return [f"nothing scheduled for {self.archive}"]
        return [f"removed {what}" for what in self.removed]

    def to_json(self) -> dict[str, Any]:
        return {"archive": str(self.archive), "removed": self.removed}


def uninstall(opts: RunOptions, installer: Installer | None = None) -> Uninstalled:
    """Remove this archive's crontab entries and systemd units (the `--account` set's only,
    when one is given)."""
    installer = installer or Installer()
    root = opts.out
    accounts = scheduled_accounts(opts) or None
    done = Uninstalled(root)
    text = _crontab_or_none(installer)
    if text:
        ours = {e.marker for e in cron_entries(text, root, accounts)}
        if ours:
            lines = text.splitlines()
            kept: list[str] = []
            skip = False
            for line in lines:
                if skip:
                    skip = False
                    continue
                if line.strip() in ours:
                    skip = True  # the job line after our marker goes too
                    continue
                kept.append(line)
            argv = [*installer.crontab, "-"]
            result = _run(argv, stdin="\n".join(kept) + "\n" if kept else "")
            if result.returncode != 0:
                raise _fail(argv, result)
            done.removed += [f"crontab entry {marker!r}" for marker in sorted(ours)]
    unit_dir = installer.unit_dir or default_unit_dir()
    units = unit_entries(unit_dir, root, accounts)
    for unit in units:
        argv = [*installer.systemctl, "disable", "--now", f"{unit.name}.timer"]
        result = _run(argv)
        if result.returncode != 0:
            log.warning("%s", _fail(argv, result))
        for suffix in (".timer", ".service"):
            (unit_dir / f"{unit.name}{suffix}").unlink(missing_ok=True)
        done.removed.append(f"systemd timer {unit.name}")
    if units:
        _run([*installer.systemctl, "daemon-reload"])
    return done


# ------------------------------------------------------------------ check


def job_environment(*, systemd: bool) -> dict[str, str]:
    """What a cron job (or a systemd user service) finds in its environment."""
    home = os.environ.get("HOME", str(Path.home()))
    user = os.environ.get("LOGNAME") or os.environ.get("USER") or ""
    env = {"HOME": home, "PATH": CRON_PATH, "SHELL": "/bin/sh", "LOGNAME": user}
    if systemd:
        env.update({k: os.environ[k] for k in SYSTEMD_VARS if k in os.environ})
    return env


@dataclass
class CheckResult:
    environment: str  # "cron" | "systemd"
    argv: list[str]
    exit_code: int
    output: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def lines(self) -> list[str]:
        verdict = "signs in" if self.ok else f"FAILS (exit {self.exit_code})"
        out = [f"the scheduled sign-in, as {self.environment} runs it: {verdict}"]
        out += [f"  {line}" for line in self.output.strip().splitlines()]
        return out

    def to_json(self) -> dict[str, Any]:
        return attrs_json(self, "environment argv exit_code ok output")


def check_argv(opts: RunOptions, python: str | None = None) -> list[str]:
    """The job's sign-in: `check-signin` with the options that pick accounts and cookies."""
    from pplx_export.context import DEFAULT_BASE_URL

    cfg = opts.config
    argv = [*executable_argv(python), "check-signin"]
    if cfg.exists:
        argv += ["--config", str(cfg.path.expanduser().absolute())]
    argv += ["--out", str(opts.out)]
    argv += [arg for name in scheduled_accounts(opts) for arg in ("--account", name)]
    if opts.cookies_from:
        argv += ["--cookies-from", opts.cookies_from]
    if opts.cookies_file is not None:
        argv += ["--cookies", str(opts.cookies_file)]
    if opts.base_url != DEFAULT_BASE_URL:
        argv += ["--base-url", opts.base_url]
    return argv


def run_check(opts: RunOptions, *, systemd: bool, python: str | None = None) -> CheckResult:
    """Run the job's sign-in once in the job's environment (see module doc)."""
    argv = check_argv(opts, python)
    try:
        done = subprocess.run(
            argv,
            env=job_environment(systemd=systemd),
            capture_output=True,
            text=True,
            timeout=CHECK_TIMEOUT_S,
            check=False,
            cwd="/",
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return CheckResult(
            "systemd" if systemd else "cron", argv, 1, f"{type(exc).__name__}: {exc}"
        )
    return CheckResult(
        "systemd" if systemd else "cron", argv, done.returncode, done.stderr + done.stdout
    )


def run_check_signin(opts: RunOptions) -> tuple[list[str], Callable[[], None]]:
    """`check-signin`: sign each selected account in once; one line each, and what raises
    when some account could not (to call after printing the lines)."""
    from pplx_export.commands.export.every_account import for_each_account
    from pplx_export.site.session import open_session

    def one(sub: RunOptions) -> str:
        with open_session(sub) as api:
            return f"{sub.account.name}: signed in as {api.email}"

    every = for_each_account(opts, one, what="sign-in")
    lines = [run.result or f"{run.account}: FAILED: {run.error}" for run in every.runs]
    return lines, every.raise_for_failed_accounts


# ------------------------------------------------------------------ the command


@dataclass
class _Wrapped:
    """What every `schedule` action returns to the CLI."""

    inner: Any
    failed: str = ""
    exit_code: int = 1

    def lines(self) -> list[str]:
        return list(self.inner.lines())

    def to_json(self) -> Any:
        return self.inner.to_json()

    def raise_if_failed(self) -> None:
        if self.failed:
            error = PplxError(self.failed)
            error.exit_code = self.exit_code
            raise error


def run_schedule_action(
    opts: RunOptions,
    *,
    action: str,
    actions: Sequence[bool],
    time: str,
    systemd: bool,
    install: bool,
    on_failure: str | None,
    healthcheck_url: str | None,
) -> _Wrapped:
    """`schedule` and its management actions (one at a time)."""
    from pplx_export.commands.setup.schedule import run_schedule_command
    from pplx_export.errors import UsageError

    if sum(actions) > 1:
        raise UsageError("give one of --install, --uninstall, --status, --check")
    if action == "status":
        return _Wrapped(schedule_status(opts))
    if action == "uninstall":
        return _Wrapped(uninstall(opts))
    if action == "check":
        result = run_check(opts, systemd=systemd)
        return _Wrapped(result, "" if result.ok else "the scheduled sign-in failed", 3)
    return _Wrapped(
        run_schedule_command(
            opts,
            time=time,
            systemd=systemd,
            install=install,
            on_failure=on_failure,
            healthcheck_url=healthcheck_url,
        )
    )
