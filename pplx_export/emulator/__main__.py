"""`python -m pplx_export.emulator [--library DIR] [--port 0] …`: print the base URL, then serve."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pplx_export.emulator.accounts import account_jar
from pplx_export.emulator.app import LISTING_MODES, EmulatorConfig
from pplx_export.emulator.faults import FaultSpecError
from pplx_export.emulator.server import make_server


def build_parser() -> argparse.ArgumentParser:
    defaults = EmulatorConfig()  # the server's own defaults, as the options' defaults
    parser = argparse.ArgumentParser(
        prog="python -m pplx_export.emulator",
        description="Serve an archive directory (default: the bundled sample) as a loopback "
        "stand-in for Perplexity's web API.",
    )
    parser.add_argument("--library", type=Path, default=None, help="archive directory to serve")
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument(
        "--page-size", type=int, default=defaults.page_size, help="entries per thread page"
    )
    parser.add_argument(
        "--faults",
        default="",
        help='e.g. "latency=20ms,429=0.1,500=0.05,drop=0.02"; switches: '
        '"graphql_rotated,newest_first"; the SSE ask: '
        '"ask_silence=5s,ask_step=300ms,ask=cut|cut_running|end|error|hang,ask_404=1"',
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the fault and id streams")
    parser.add_argument("--email", default=defaults.email)
    parser.add_argument("--name", default=defaults.name, help="session display name")
    parser.add_argument("--username", default=defaults.username, help="author of new threads")
    parser.add_argument("--session-token", default=defaults.session_token)
    parser.add_argument(
        "--extra-account",
        action="append",
        default=[],
        metavar="TOKEN:EMAIL[:NAME]",
        help="another signed-in account (repeatable); its token opens the same library",
    )
    parser.add_argument(
        "--write-cookies",
        type=Path,
        default=None,
        metavar="FILE",
        help="write a browser-like JSON cookie jar of every account to FILE (for `init`)",
    )
    parser.add_argument(
        "--listing",
        choices=LISTING_MODES,
        default=defaults.listing,
        help="library listings that answer: rest (the live site in 2026: GraphQL answers "
        "PERSISTED_QUERY_NOT_FOUND), both (the old behaviour), graphql (REST answers 404)",
    )
    parser.add_argument(
        "--replay",
        type=Path,
        default=None,
        metavar="BUNDLE",
        help="answer every request from a `pplx-export capture` bundle (folder or .zip)",
    )
    parser.add_argument(
        "--write-official-export",
        type=Path,
        default=None,
        metavar="ZIP",
        help='write the library\'s Perplexity "Export my data" archive (for --username) '
        "to ZIP, with planted cases, and exit",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log each request (method, path) to stderr"
    )
    return parser


def parse_accounts(values: list[str]) -> dict[str, tuple[str, str]]:
    accounts: dict[str, tuple[str, str]] = {}
    for value in values:
        token, _, rest = value.partition(":")
        email, _, name = rest.partition(":")
        if not token or "@" not in email:
            raise ValueError(f"--extra-account {value!r}: expected TOKEN:EMAIL[:NAME]")
        accounts[token] = (email, name or email.split("@", 1)[0])
    return accounts


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.write_official_export is not None:
        return _write_official_export(args.library, args.write_official_export, args.username)
    try:
        extra = parse_accounts(args.extra_account)
        server = make_server(
            args.library,
            host=args.host,
            port=args.port,
            page_size=args.page_size,
            faults=args.faults,
            seed=args.seed,
            email=args.email,
            name=args.name,
            username=args.username,
            session_token=args.session_token,
            log_requests=args.verbose,
            extra_accounts=extra,
            listing=args.listing,
            replay=args.replay,
        )
    except (FaultSpecError, FileNotFoundError, ValueError) as exc:
        print(f"emulator: {exc}", file=sys.stderr)
        return 2
    if args.write_cookies is not None:
        jar = account_jar(server.app.config)
        args.write_cookies.write_text(json.dumps(jar, indent=1) + "\n", encoding="utf-8")
    # The first stdout line is the contract with whoever started us (tests, `demo`).
    print(server.base_url, flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def _write_official_export(library_dir: Path | None, path: Path, username: str) -> int:
    from pplx_export.emulator.library import Library
    from pplx_export.emulator.official_export import write_export_zip

    try:
        planted = write_export_zip(Library.load(library_dir), path, username)
    except (FileNotFoundError, OSError, ValueError) as exc:
        print(f"emulator: {exc}", file=sys.stderr)
        return 2
    print(path, flush=True)
    print(
        f"{planted.conversations} conversations; not served: {len(planted.not_served)}; "
        f"with extra turns: {len(planted.extra_turns)}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
