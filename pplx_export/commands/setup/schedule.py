"""`schedule`: the nightly `sync`, as a cron line or a systemd user service + timer pair.

Every path in what we write is absolute and quoted for the shell that will read it (`sh -c`
for cron, systemd's own rules for `ExecStart=`), so an archive under "My Archive" or a
config path with a quote survives. The command is the `pplx-export` next to the running
interpreter (the venv it was installed in), falling back to `python -m pplx_export`.

`--install` changes the user's crontab (one marked line per archive and account set,
replaced in place, never duplicated) or copies the units into the systemd user directory and
enables the timer; the crontab and systemctl commands and the unit directory are injectable
so tests never touch the real ones. Unit names carry a short hash of the archive root and the
account set (`pplx-export-sync-<8 hex>`), so two archives never collide.

The job gets every option `schedule` was given that changes what sync does: `--account`,
`--lang`, `--flavor` (when they differ from the config), the cookie source, `--on-failure`,
`--healthcheck-url`, `--base-url`. Options it cannot honour are refused: `--log-file` (the
job always logs to `index/logs/sync.log`, rotated) and `--systemd` off Linux.
`schedule --status`, `--uninstall` and `--check` live in commands/setup/schedule_manage.py.

Long because one command writes both forms of the same job (a cron line, a systemd service
and timer): the job's argv, its quoting for each reader, the installers and the option
checks are one decision and change together; the management actions are already apart
(commands/setup/schedule_manage.py).
"""

from __future__ import annotations

import hashlib
import re
import shlex
import subprocess
import sys
import textwrap
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from pplx_export.context import RunOptions
from pplx_export.errors import PplxError, UsageError
from pplx_export.util.atomic import atomic_write_text

SNIPPET_NAME = "cron_snippet.txt"
UNIT_NAME = "pplx-export-sync"
MARKER = "# pplx-export sync:"
LOG_NAME = "sync.log"
DEFAULT_TIME = "03:30"
CMD_TIMEOUT = 60.0


@dataclass(frozen=True)
class SyncCommand:
    """What the scheduled job runs, as an argv (quoted per consumer)."""

    argv: list[str]
    log_file: Path


@dataclass
class ScheduleResult:
    time: str
    cron_line: str
    snippet: Path
    service: Path | None = None
    timer: Path | None = None
    installed: str = ""  # "", "cron", "systemd"
    already_installed: bool = False
    instructions: list[str] = field(default_factory=list)
    undo: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # Which cookie source the job can sign in with unattended (schedule_manage.cookie_advice).
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"wrote {self.snippet}:", f"  {self.cron_line}"]
        if self.service is not None:
            out += [f"wrote {self.service}", f"wrote {self.timer}"]
        if self.installed:
            what = "crontab entry" if self.installed == "cron" else "systemd timer"
            state = "was already installed" if self.already_installed else "installed"
            out.append(f"{what} {state}; runs every day at {self.time}")
        elif self.instructions:
            out.append(f"to run it every day at {self.time}:")
            out += [f"  {line}" for line in self.instructions]
            out.append("  (or rerun with --install)")
        out.append("to undo:")
        out += [f"  {line}" for line in self.undo]
        out += wrapped(self.notes)
        out += wrapped(f"warning: {w}" for w in self.warnings)
        return out

    def to_json(self) -> dict[str, object]:
        return {
            "time": self.time,
            "cron_line": self.cron_line,
            "cron_snippet": str(self.snippet),
            "systemd": (
                {"service": str(self.service), "timer": str(self.timer)} if self.service else None
            ),
            "installed": self.installed or None,
            "already_installed": self.already_installed,
            "instructions": self.instructions,
            "undo": self.undo,
            "cookies": self.notes,
            "warnings": self.warnings,
        }


def wrapped(texts: Iterable[str], width: int = 80) -> list[str]:
    """Prose lines wrapped for an 80-column terminal (commands and paths stay whole)."""
    return [
        line
        for text in texts
        for line in textwrap.wrap(text, width, subsequent_indent="  ", break_long_words=False)
    ]


def parse_time(text: str) -> tuple[int, int]:
    match = re.fullmatch(r"\s*(\d{1,2}):(\d{2})\s*", text)
    if not match or int(match.group(1)) > 23 or int(match.group(2)) > 59:
        raise UsageError(f"--time {text!r}: expected HH:MM (24-hour clock, e.g. 03:30)")
    return int(match.group(1)), int(match.group(2))


def executable_argv(python: str | None = None) -> list[str]:
    """`pplx-export` from the running interpreter's environment, else `python -m pplx_export`."""
    interpreter = Path(python or sys.executable)
    # Not resolved: a venv's python is a symlink, and the venv's bin/ is what we want.
    script = interpreter.parent / "pplx-export"
    if script.is_file():
        return [str(script.absolute())]
    return [str(interpreter.absolute()), "-m", "pplx_export"]


def schedule_key(archive_root: Path, accounts: Sequence[str] = ()) -> str:
    """8 hex digits naming one archive + account set (unit names)."""
    root = str(archive_root.expanduser().absolute())
    text = root + "\0" + ",".join(sorted(accounts))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def unit_name(archive_root: Path, accounts: Sequence[str] = ()) -> str:
    return f"{UNIT_NAME}-{schedule_key(archive_root, accounts)}"


def cron_marker(archive_root: Path, accounts: Sequence[str] = ()) -> str:
    """The comment line above our crontab entry: the archive, and the accounts when the job
    is narrowed to some (none: every configured account)."""
    root = archive_root.expanduser().absolute()
    return f"{MARKER} {root}" + (f" (accounts {','.join(accounts)})" if accounts else "")


def sync_command(
    *,
    config: Path | None,
    archive_root: Path,
    cookies_from: str | None = None,
    cookies_file: Path | None = None,
    python: str | None = None,
    extra: Sequence[str] = (),
) -> SyncCommand:
    root = archive_root.expanduser().absolute()
    log_file = root / "index" / "logs" / LOG_NAME
    argv = [*executable_argv(python), "sync"]
    if config is not None:
        argv += ["--config", str(config.expanduser().absolute())]
    argv += ["--out", str(root)]
    if cookies_from:
        argv += ["--cookies-from", cookies_from]
    if cookies_file is not None:
        argv += ["--cookies", str(cookies_file.expanduser().absolute())]
    argv += [*extra, "-q", "--log-file", str(log_file)]
    return SyncCommand(argv, log_file)


def cron_line(cmd: SyncCommand, hour: int, minute: int) -> str:
    """One crontab line. `%` is special to cron (newline), so it is escaped."""
    shell = shlex.join(cmd.argv) + " >> " + shlex.quote(str(cmd.log_file)) + " 2>&1"
    return f"{minute} {hour} * * * {shell.replace('%', chr(92) + '%')}"


def systemd_quote(arg: str) -> str:
    """Quote one ExecStart= argument: double quotes, C escapes, `%` and `$` doubled."""
    escaped = arg.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%").replace("$", "$$")
    return f'"{escaped}"'


def service_unit(cmd: SyncCommand) -> str:
    exec_start = " ".join(systemd_quote(a) for a in cmd.argv)
    return (
        "[Unit]\n"
        "Description=pplx-export sync (archive the Perplexity library)\n"
        "Wants=network-online.target\n"
        "After=network-online.target\n"
        "\n"
        "[Service]\n"
        "Type=oneshot\n"
        f"ExecStart={exec_start}\n"
    )


def timer_unit(hour: int, minute: int) -> str:
    # Persistent=true: a laptop asleep at the time runs the missed sync when it wakes up.
    return (
        "[Unit]\n"
        "Description=Run pplx-export sync every night\n"
        "\n"
        "[Timer]\n"
        f"OnCalendar=*-*-* {hour:02d}:{minute:02d}:00\n"
        "Persistent=true\n"
        "\n"
        "[Install]\n"
        "WantedBy=timers.target\n"
    )


def default_unit_dir() -> Path:
    return Path(platformdirs.user_config_dir("systemd")) / "user"


@dataclass
class Installer:
    """The commands `--install` runs; tests inject fakes (never the real crontab/systemd)."""

    crontab: Sequence[str] = ("crontab",)
    systemctl: Sequence[str] = ("systemctl", "--user")
    unit_dir: Path | None = None


def _run(argv: Sequence[str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            list(argv),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=CMD_TIMEOUT,
            check=False,
        )
    except FileNotFoundError:
        raise PplxError(
            f"{argv[0]} not found: install it, or use the printed lines by hand"
        ) from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PplxError(f"{' '.join(argv)}: {type(exc).__name__}: {exc}") from None


def _fail(argv: Sequence[str], done: subprocess.CompletedProcess[str]) -> PplxError:
    lines = (done.stderr or done.stdout).strip().splitlines()
    why = lines[-1] if lines else f"exit {done.returncode}"
    return PplxError(f"{' '.join(argv)} failed: {why}")


def read_crontab(installer: Installer) -> str:
    argv = [*installer.crontab, "-l"]
    done = _run(argv)
    if done.returncode != 0:
        # `crontab -l` exits 1 with "no crontab for <user>" when there is none yet.
        if "no crontab" in (done.stderr + done.stdout).lower():
            return ""
        raise _fail(argv, done)
    return done.stdout


def merge_crontab(current: str, marker: str, line: str) -> str | None:
    """The crontab with our marked entry in place, or None when it is already there as-is.

    Our entry is two lines: the marker comment naming the archive, then the job. A changed
    time or command replaces the old job instead of adding a second one.
    """
    lines = current.splitlines()
    out: list[str] = []
    i = 0
    found = False
    while i < len(lines):
        if lines[i].strip() == marker:
            if found:  # a duplicate from an older hand edit: drop it
                i += 2
                continue
            found = True
            old = lines[i + 1] if i + 1 < len(lines) else ""
            if old == line:
                out += [lines[i], old]
            else:
                out += [marker, line]
            i += 2
            continue
        out.append(lines[i])
        i += 1
    if not found:
        out += [marker, line]
    merged = "\n".join(out) + "\n"
    return None if merged == (current if current.endswith("\n") else current + "\n") else merged


def install_cron(installer: Installer, marker: str, line: str) -> bool:
    """Add (or update) our crontab entry; False when it was already installed unchanged."""
    merged = merge_crontab(read_crontab(installer), marker, line)
    if merged is None:
        return False
    argv = [*installer.crontab, "-"]
    done = _run(argv, stdin=merged)
    if done.returncode != 0:
        raise _fail(argv, done)
    return True


def install_systemd(installer: Installer, name: str, service: str, timer: str) -> bool:
    """Copy the units, reload, enable the timer. False when the units were already current."""
    unit_dir = installer.unit_dir or default_unit_dir()
    changed = False
    unit = name
    for name, text in ((f"{unit}.service", service), (f"{unit}.timer", timer)):
        path = unit_dir / name
        try:
            same = path.read_text(encoding="utf-8") == text
        except (FileNotFoundError, UnicodeDecodeError):
            same = False
        if not same:
            atomic_write_text(path, text)
            changed = True
    for args in (["daemon-reload"], ["enable", "--now", f"{unit}.timer"]):
        argv = [*installer.systemctl, *args]
        done = _run(argv)
        if done.returncode != 0:
            raise _fail(argv, done)
    return changed


def run_schedule(
    *,
    config: Path | None,
    archive_root: Path,
    time: str = DEFAULT_TIME,
    systemd: bool = False,
    install: bool = False,
    cookies_from: str | None = None,
    cookies_file: Path | None = None,
    installer: Installer | None = None,
    python: str | None = None,
    accounts: Sequence[str] = (),
    extra: Sequence[str] = (),
) -> ScheduleResult:
    """Write the snippet (and units), optionally install them; see the module doc.
    `accounts`: the job's `--account` (none: every configured account); `extra`: further
    sync options for the job."""
    hour, minute = parse_time(time)
    account_args = [arg for name in accounts for arg in ("--account", name)]
    cmd = sync_command(
        config=config,
        archive_root=archive_root,
        cookies_from=cookies_from,
        cookies_file=cookies_file,
        python=python,
        extra=[*account_args, *extra],
    )
    if any("\n" in a or "\r" in a for a in cmd.argv):
        raise UsageError("a path with a line break cannot go into a crontab or a unit file")
    root = archive_root.expanduser().absolute()
    index = root / "index"
    line = cron_line(cmd, hour, minute)
    marker = cron_marker(root, accounts)
    snippet = index / SNIPPET_NAME
    atomic_write_text(
        snippet,
        "# pplx-export: nightly sync. Add with `crontab -e` (or `pplx-export schedule --install`)\n"
        "# cron has no desktop session: if your browser's cookie store needs its keyring, run\n"
        "# `pplx-export schedule --cookies FILE` so the job reads an exported cookie file.\n"
        f"{marker}\n{line}\n",
    )
    (index / "logs").mkdir(parents=True, exist_ok=True)
    result = ScheduleResult(time=f"{hour:02d}:{minute:02d}", cron_line=line, snippet=snippet)
    installer = installer or Installer()
    name = unit_name(root, accounts)
    if systemd:
        service, timer = service_unit(cmd), timer_unit(hour, minute)
        result.service = index / "systemd" / f"{name}.service"
        result.timer = index / "systemd" / f"{name}.timer"
        atomic_write_text(result.service, service)
        atomic_write_text(result.timer, timer)
        unit_dir = installer.unit_dir or default_unit_dir()
        sysctl = shlex.join(installer.systemctl)
        if install:
            result.already_installed = not install_systemd(installer, name, service, timer)
            result.installed = "systemd"
        else:
            result.instructions = [
                f"mkdir -p {shlex.quote(str(unit_dir))}",
                f"cp {shlex.quote(str(result.service))} {shlex.quote(str(result.timer))} "
                f"{shlex.quote(str(unit_dir))}/",
                f"{sysctl} daemon-reload",
                f"{sysctl} enable --now {name}.timer",
            ]
        result.undo = [
            f"pplx-export schedule --uninstall   # or: {sysctl} disable --now {name}.timer",
            f"rm {shlex.quote(str(unit_dir / (name + '.service')))} "
            f"{shlex.quote(str(unit_dir / (name + '.timer')))}",
        ]
    else:
        if install:
            result.already_installed = not install_cron(installer, marker, line)
            result.installed = "cron"
        else:
            result.instructions = [
                f"(crontab -l 2>/dev/null; cat {shlex.quote(str(snippet))}) | crontab -"
            ]
        result.undo = [
            "pplx-export schedule --uninstall",
            f"(or crontab -e, and delete the line after {marker!r})",
        ]
    return result


def job_options(opts: RunOptions, on_failure: str | None, healthcheck_url: str | None) -> list[str]:
    """The sync options the job needs to do what this `schedule` invocation was told."""
    from pplx_export.context import DEFAULT_BASE_URL

    cfg = opts.config
    extra: list[str] = []
    if opts.lang != cfg.language(None):
        extra += ["--lang", opts.lang]
    if opts.flavor != cfg.flavor(None):
        extra += ["--flavor", opts.flavor]
    if on_failure is not None:
        extra += ["--on-failure", on_failure]
    if healthcheck_url is not None:
        extra += ["--healthcheck-url", healthcheck_url]
    if opts.base_url != DEFAULT_BASE_URL:
        extra += ["--base-url", opts.base_url]
    return extra


def refuse_unhonourable(opts: RunOptions, *, systemd: bool) -> None:
    """Options `schedule` cannot pass on to the job: a usage error, not silence."""
    if opts.log_file is not None:
        raise UsageError(
            "schedule: the job always logs to <archive>/index/logs/sync.log (rotated, with "
            "the -v header); --log-file cannot be passed on"
        )
    if systemd and not sys.platform.startswith("linux"):
        raise UsageError(f"--systemd: systemd user timers exist on Linux only, not {sys.platform}")


def scheduled_accounts(opts: RunOptions) -> list[str]:
    return [opts.account.name] if opts.account_given else []


def run_schedule_command(
    opts: RunOptions,
    *,
    time: str,
    systemd: bool,
    install: bool,
    on_failure: str | None = None,
    healthcheck_url: str | None = None,
    installer: Installer | None = None,
) -> ScheduleResult:
    """`schedule` for the invocation's config, archive, accounts and cookie source."""
    from pplx_export.commands.setup.schedule_manage import cookie_advice, other_kind_installed

    refuse_unhonourable(opts, systemd=systemd)
    cfg = opts.config
    result = run_schedule(
        config=cfg.path if cfg.exists else None,
        archive_root=opts.out,
        time=time,
        systemd=systemd,
        install=install,
        cookies_from=opts.cookies_from,
        cookies_file=opts.cookies_file,
        installer=installer,
        accounts=scheduled_accounts(opts),
        extra=job_options(opts, on_failure, healthcheck_url),
    )
    if not cfg.exists:
        result.warnings.append(
            f"no config at {cfg.path}: the job runs without one (degraded mode); "
            "`pplx-export init` writes it"
        )
    result.notes = cookie_advice(opts.out, opts.cookies_from, opts.cookies_file)
    if install:
        other = other_kind_installed(opts.out, installer or Installer(), systemd=systemd)
        if other:
            result.warnings.append(
                f"{other} also runs sync for this archive: two schedules for one archive run "
                "twice (one waits for the other's lock); `schedule --uninstall` removes both"
            )
    return result
