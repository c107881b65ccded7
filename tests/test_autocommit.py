"""auto_commit / auto_push (issue 12): one commit per run that changed the archive, none for a
no-op sync, a message whose counts are right, nothing secret committed, git trouble = warning."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from pplx_export.cli.export import main
from pplx_export.emulator import DEFAULT_EMAIL, RunningEmulator, run_emulator
from pplx_export.pipeline.autocommit import commit_archive, describe, init_repo

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_CONFIG_NOSYSTEM": "1",
}


@pytest.fixture(autouse=True)
def git_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in GIT_ENV.items():
        monkeypatch.setenv(key, value)


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def commits(root: Path) -> list[str]:
    out = git(root, "log", "--format=%s")
    return out.splitlines()


@pytest.fixture
def env(tmp_path: Path) -> Iterator[tuple[RunningEmulator, list[str], Path]]:
    out = tmp_path / "archive"
    init_repo(out)
    config = tmp_path / "config.toml"
    config.write_text(
        'default_account = "alice"\nauto_commit = true\n\n[accounts.alice]\n'
        f'email = "{DEFAULT_EMAIL}"\n\n[network]\nmin_interval = 0\nbackoff_cap = 0\n',
        encoding="utf-8",
    )
    with run_emulator() as emu:
        cookies = tmp_path / "cookies.json"
        cookies.write_text(json.dumps(emu.cookies), encoding="utf-8")
        common = ["--config", str(config), "--cookies", str(cookies), "--out", str(out)]
        common += ["--base-url", emu.base_url]
        yield emu, common, out


def _cli(common: list[str], *args: str) -> Result:
    return CliRunner().invoke(main, [*args, *common], catch_exceptions=False)


def test_one_commit_per_changing_run_none_for_a_noop(
    env: tuple[RunningEmulator, list[str], Path],
) -> None:
    emu, common, out = env
    first = _cli(common, "sync")
    assert first.exit_code == 0, first.output
    done = len(list(out.glob("*/*/*/thread.json")))
    assert done > 0
    assert commits(out) == [f"sync: {done} new threads"]
    tracked = git(out, "ls-files").splitlines()
    assert not [p for p in tracked if p.endswith(".cookies.json") or p.endswith(".lock")]
    assert not [p for p in tracked if p.startswith("index/logs/")]

    second = _cli(common, "sync")
    assert second.exit_code == 0, second.output
    assert len(commits(out)) == 1  # index stamps moved, nothing else: no commit

    touched = sorted(emu.library.threads)[0]
    emu.mutate(touch=touched)
    third = _cli(common, "sync")
    assert third.exit_code == 0, third.output
    assert commits(out)[0] == "sync: 1 updated thread"
    assert len(commits(out)) == 2
    assert git(out, "status", "--porcelain", "--", ":!index") == ""


def test_describe_counts_moved_dirs_as_updates() -> None:
    staged = [
        ("A", "alice/search/2026-01-02_a_1111aaaa/thread.json"),
        ("D", "alice/search/2026-01-01_a_1111aaaa/thread.json"),
        ("A", "alice/search/2026-01-02_b_2222bbbb/thread.json"),
        ("A", "alice/search/2026-01-02_b_2222bbbb/conversation.md"),
        ("M", "alice/search/2026-01-02_c_3333cccc/thread.json"),
        ("M", "index/batch_state.json"),
    ]
    result = describe("batch", staged)
    assert (result.new, result.updated) == (1, 2)
    assert result.message == "batch: 1 new, 2 updated threads"
    assert describe("sync", [("M", "spaces/x.md")]).message == "sync: 1 file changed"


def test_not_a_repository_or_no_git_is_a_warning(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "f.md").write_text("x", encoding="utf-8")
    result = commit_archive(plain, "sync")
    assert not result.committed and "not the top of a git repository" in result.warning
    init_repo(plain)
    missing = commit_archive(plain, "sync", git=str(tmp_path / "no-git-here"))
    assert not missing.committed and "not found" in missing.warning


def test_a_failing_push_is_a_warning(tmp_path: Path) -> None:
    root = tmp_path / "a"
    init_repo(root)
    git(root, "remote", "add", "origin", str(tmp_path / "missing-remote"))
    (root / "alice").mkdir()
    (root / "alice" / "x.md").write_text("x", encoding="utf-8")
    result = commit_archive(root, "export", push=True)
    assert result.committed and not result.pushed
    assert result.warning.startswith("auto_push:")
    assert commits(root) == ["export: 2 files changed"]  # x.md and .gitignore


def test_a_cookie_cache_is_never_committed(tmp_path: Path) -> None:
    root = tmp_path / "a"
    init_repo(root)
    (root / ".gitignore").write_text("", encoding="utf-8")  # a user emptied it
    (root / "index").mkdir()
    (root / "index" / ".cookies.json").write_text("{}", encoding="utf-8")
    (root / "x.md").write_text("x", encoding="utf-8")
    result = commit_archive(root, "sync")
    assert result.committed
    assert "index/.cookies.json" not in git(root, "ls-files").splitlines()
    assert "index/.cookies.json" in (root / ".gitignore").read_text("utf-8")


# ---------------------------------------------------------------- issue 33: no secret, loud


def _archive_with(tmp_path: Path, emu: RunningEmulator, **extra: str) -> tuple[Path, list[str]]:
    """An archive that is its own git repo, with the cookie file kept inside it."""
    out = tmp_path / "archive"
    init_repo(out)
    config = tmp_path / "config.toml"
    config.write_text(
        'default_account = "alice"\nauto_commit = true\nauto_push = true\n\n[accounts.alice]\n'
        f'email = "{DEFAULT_EMAIL}"\n\n[network]\nmin_interval = 0\nbackoff_cap = 0\n',
        encoding="utf-8",
    )
    cookies = out / "my-session.json"  # no name the .gitignore knows
    cookies.write_text(json.dumps(emu.cookies), encoding="utf-8")
    common = ["--config", str(config), "--cookies", str(cookies), "--out", str(out)]
    common += ["--base-url", emu.base_url, *extra.values()]
    return out, common


def test_a_cookie_file_inside_the_archive_never_reaches_git(tmp_path: Path) -> None:
    with run_emulator() as emu:
        out, common = _archive_with(tmp_path, emu)
        logfile = out / "run.txt"
        result = _cli([*common, "--log-file", str(logfile)], "sync")
        assert result.exit_code == 0, result.output
        token = emu.cookies["__Secure-next-auth.session-token"]
        assert commits(out) and token not in git(out, "log", "-p", "--all")
        tracked = git(out, "ls-files").splitlines()
        assert "my-session.json" not in tracked and "run.txt" not in tracked
        assert "not committing" in result.stderr and "my-session.json" in result.stderr


def test_a_cookie_jar_is_recognised_by_content_whatever_its_name(tmp_path: Path) -> None:
    root = tmp_path / "a"
    init_repo(root)
    (root / "alice").mkdir()
    netscape = "# Netscape HTTP Cookie File\n.perplexity.ai\tTRUE\t/\tTRUE\t0\t"
    (root / "alice" / "jar.txt").write_text(
        netscape + "__Secure-next-auth.session-token\tabcdefghijklmnop\n", "utf-8"
    )
    (root / "alice" / "list.json").write_text(
        json.dumps([{"name": "__Secure-pplx.session.u1", "value": "v" * 20}]), "utf-8"
    )
    (root / "alice" / "x.md").write_text("x", encoding="utf-8")
    result = commit_archive(root, "sync")
    assert result.committed
    assert sorted(result.unstaged) == ["alice/jar.txt", "alice/list.json"]
    assert git(root, "ls-files").split() == [".gitignore", "alice/x.md"]


def test_a_file_holding_the_session_value_aborts_the_commit(tmp_path: Path) -> None:
    root = tmp_path / "a"
    init_repo(root)
    (root / "alice").mkdir()
    (root / "alice" / "x.md").write_text("x", encoding="utf-8")
    (root / "alice" / "pasted.md").write_text("my token is s3cret-session-value!", "utf-8")
    result = commit_archive(root, "sync", secrets={"s3cret-session-value"})
    assert result.failed and not result.committed
    assert "alice/pasted.md holds the session cookie value" in result.warning
    assert git(root, "diff", "--cached", "--name-only") == ""
    with pytest.raises(subprocess.CalledProcessError):
        git(root, "rev-parse", "HEAD")  # no commit at all


def test_a_stale_index_lock_is_removed_and_the_commit_happens(tmp_path: Path) -> None:
    root = tmp_path / "a"
    init_repo(root)
    (root / "x.md").write_text("x", encoding="utf-8")
    (root / ".git" / "index.lock").write_text("", encoding="utf-8")  # a killed git's
    result = commit_archive(root, "sync")
    assert result.committed and not result.failed, result.warning
    assert not (root / ".git" / "index.lock").exists()


def test_a_failed_commit_fails_the_run_and_status_says_so(tmp_path: Path) -> None:
    with run_emulator() as emu:
        out, common = _archive_with(tmp_path, emu)
        hook = out / ".git" / "hooks" / "pre-commit"
        hook.write_text("#!/bin/sh\necho 'error: the hook says no' >&2\nexit 1\n", "utf-8")
        hook.chmod(0o755)
        result = _cli([*common, "-q"], "sync")
        assert result.exit_code == 1
        assert "auto_commit" in result.stderr and "commit failed" in result.stderr
        config_and_out = common[:2] + common[4:6]
        status = _cli(config_and_out, "status", "--json")
        doc = json.loads(status.stdout)
        assert doc["auto_commit"]["failed"] is True
        assert "auto-commit FAILED" in _cli(config_and_out, "status").stdout
        hook.unlink()
        again = _cli(common, "sync")
        assert again.exit_code == 0, again.output
        assert commits(out)
        assert json.loads(_cli(config_and_out, "status", "--json").stdout)["auto_commit"][
            "committed"
        ]
