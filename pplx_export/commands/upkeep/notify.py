"""A scheduled `sync` that fails must reach a person (issue 32): cron's `-q` and a log file
alone do not.

`--on-failure CMD` (config `on_failure`) runs CMD through the shell with the failure in its
environment: `PPLX_EXPORT_ERROR` (the one-line error), `PPLX_EXPORT_EXIT` (the exit code),
`PPLX_EXPORT_ARCHIVE` and `PPLX_EXPORT_LOG` (the log file, when there is one). So
`--on-failure 'notify-send "pplx-export" "$PPLX_EXPORT_ERROR"'` or a `mail` line works.

`--healthcheck-url URL` (config `healthcheck_url`) pings a healthchecks.io-style URL: GET
`URL` after a successful run, POST `URL/fail` (the error as the body) after a failed one, so
the service alerts on a failure and on a run that never came.

Neither may change the run's outcome: a hook that fails or a ping that times out is logged
as a warning, and the run's own exit code stands.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from pplx_export.context import RunOptions
from pplx_export.errors import Interrupted, PplxError

log = logging.getLogger(__name__)

HOOK_TIMEOUT_S = 120.0
PING_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Notify:
    on_failure: str = ""
    healthcheck_url: str = ""
    archive: Path | None = None
    log_file: Path | None = None

    def failed(self, error: str, exit_code: int) -> None:
        if self.on_failure:
            self._run_hook(error, exit_code)
        if self.healthcheck_url:
            self._ping(self.healthcheck_url.rstrip("/") + "/fail", body=error)

    def succeeded(self) -> None:
        if self.healthcheck_url:
            self._ping(self.healthcheck_url, body=None)

    def _run_hook(self, error: str, exit_code: int) -> None:
        env = {
            **os.environ,
            "PPLX_EXPORT_ERROR": error,
            "PPLX_EXPORT_EXIT": str(exit_code),
            "PPLX_EXPORT_ARCHIVE": str(self.archive or ""),
            "PPLX_EXPORT_LOG": str(self.log_file or ""),
        }
        try:
            done = subprocess.run(
                self.on_failure,
                shell=True,
                env=env,
                capture_output=True,
                text=True,
                timeout=HOOK_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            log.warning("--on-failure command failed: %s: %s", type(exc).__name__, exc)
            return
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()
            log.warning(
                "--on-failure command exited %d%s",
                done.returncode,
                f": {tail[-1]}" if tail else "",
            )

    def _ping(self, url: str, body: str | None) -> None:
        try:
            if body is None:
                response = httpx.get(url, timeout=PING_TIMEOUT_S)
            else:
                response = httpx.post(url, content=body.encode("utf-8"), timeout=PING_TIMEOUT_S)
        except httpx.HTTPError as exc:
            log.warning("healthcheck ping %s failed: %s", url, type(exc).__name__)
            return
        if response.status_code >= 400:
            log.warning("healthcheck ping %s answered HTTP %d", url, response.status_code)
        else:
            log.debug("healthcheck ping %s: HTTP %d", url, response.status_code)


@contextlib.contextmanager
def notifying(notify: Notify) -> Iterator[None]:
    """Run the block; report its failure (any PplxError, Ctrl-C, SIGTERM) or its success."""
    if not notify.on_failure and not notify.healthcheck_url:
        yield
        return
    try:
        yield
    except PplxError as exc:
        notify.failed(str(exc), exc.exit_code)
        raise
    except KeyboardInterrupt:
        notify.failed("interrupted", Interrupted.exit_code)
        raise
    else:
        notify.succeeded()


def notify_for(opts: RunOptions, on_failure: str | None, healthcheck_url: str | None) -> Notify:
    """The flags, else the config's `on_failure` / `healthcheck_url` (an empty flag turns
    the config's off for this run)."""
    cfg = opts.config
    return Notify(
        on_failure=cfg.on_failure if on_failure is None else on_failure,
        healthcheck_url=cfg.healthcheck_url if healthcheck_url is None else healthcheck_url,
        archive=opts.out,
        log_file=opts.log_file,
    )
