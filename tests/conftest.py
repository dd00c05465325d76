"""pytest configuration. Shared helpers live in `helpers.py` (importable because this file puts
the tests directory on sys.path)."""

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import leftovers
import pytest

#: The tests never write to the user's own caches (~/.cache/uv, ~/.cache/verifiers,
#: ~/.cache/lean-mod-add-proof; issue 41): HOME is a directory of this run's own, removed at the
#: end, for pytest and everything it starts. Set here, before any test module imports verifiers,
#: which reads HOME once (verifiers/v1/utils/paths.py). elan's home stays the user's, so that a
#: machine with Lean still runs the Lean tests. uv's cache, which the end-to-end runs fill from
#: PyPI (the null harness's chat script), is the checkout's own `.test-cache/uv` (git-ignored;
#: `make clean` removes it), so that it is downloaded once, not on every run;
#: $LEAN_MOD_ADD_PROOF_TEST_UV_CACHE names another.
REAL_HOME = Path.home()
os.environ.setdefault("ELAN_HOME", str(REAL_HOME / ".elan"))
TEST_HOME = Path(tempfile.mkdtemp(prefix="lean-mod-add-proof-test-home-"))
os.environ["HOME"] = str(TEST_HOME)
#: The XDG base directories, which uv (its data: managed Pythons, tools; its cache were
#: UV_CACHE_DIR unset) and other tools following the XDG spec read before HOME when they are set
#: (https://docs.astral.sh/uv/reference/storage): a user who sets them would still be written to.
TEST_XDG = {
    "XDG_CACHE_HOME": TEST_HOME / ".cache",
    "XDG_DATA_HOME": TEST_HOME / ".local" / "share",
    "XDG_STATE_HOME": TEST_HOME / ".local" / "state",
}
os.environ.update({name: str(path) for name, path in TEST_XDG.items()})
TEST_UV_CACHE = Path(
    os.environ.get("LEAN_MOD_ADD_PROOF_TEST_UV_CACHE")
    or Path(__file__).resolve().parent.parent / ".test-cache" / "uv"
)
os.environ["UV_CACHE_DIR"] = str(TEST_UV_CACHE)


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(TEST_HOME, ignore_errors=True)


#: `make test-quick` (`pytest -m quick`): the modules that start no grade, no CLI command, no
#: vf-eval and no server, less their `time_is_linear` tests (seconds each, and what `make mutate`
#: leaves out too). docs/development.md says what this leaves out and how long it takes.
QUICK_MODULES = frozenset(
    {
        "test_allowlists",
        "test_axioms",
        "test_axioms_reasons",
        "test_dataset_cost",
        "test_dataset_generator",
        "test_dataset_network",
        "test_dataset_weights",
        "test_docs",
        "test_export_text",
        "test_extract",
        "test_feedback",
        "test_grading_layout",
        "test_guard",
        "test_guard_lexer",
        "test_guard_redteam",
        "test_judge_protocol",
        "test_judge_source",
        "test_kernels_unit",
        "test_lean_audit",
        "test_messages",
        "test_network_cost",
        "test_oserrors",
        "test_result_flags",
        "test_sandbox_argv",
    }
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    quick = pytest.mark.quick
    for item in items:
        module = item.path.stem
        if module in QUICK_MODULES and "time_is_linear" not in item.name and "wheel" not in item.name:
            item.add_marker(quick)


#: This run's marker (leftovers.py); pytest's start time, in clock ticks since boot.
_RUN_MARKER = os.environ[leftovers.RUN_MARKER_VAR] = uuid.uuid4().hex
_RUN_STARTED = leftovers.read_stat(os.getpid()).start_ticks  # type: ignore[union-attr]


@pytest.fixture(autouse=True)
def no_process_outlives_its_test(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every process a test started is gone when it ends (after a grace of a few seconds for
    processes being killed): one left behind fails the test at teardown, and is killed so that it
    cannot be blamed on the next. Only this pytest run's processes are looked at (leftovers.py),
    never other work on the machine."""
    roots = []
    if "tmp_path" in request.fixturenames:  # (asked for now: torn down after this fixture)
        tmp = request.getfixturevalue("tmp_path")
        roots = [tmp / "work", tmp]
    yield
    left = leftovers.wait_for_none(_RUN_MARKER, _RUN_STARTED, roots)
    if left:
        leftovers.kill(left)
        lines = "\n".join(f"  {pid}: {cmd[:300]}" for pid, cmd in left.items())
        pytest.fail(f"{len(left)} process(es) the test started outlived it (now killed):\n{lines}")


@pytest.fixture
def comparator_host() -> None:
    """Skips the test where the comparator cannot run (`helpers.needs_comparator`)."""
    from helpers import require_comparator

    require_comparator()


@pytest.fixture
def isolated_cli_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A CLI test's own HOME (the default cache dir lives under it) and no toolchain found by
    elan or the environment; nothing remembered of an earlier self-test. Use it as
    `pytestmark = pytest.mark.usefixtures("isolated_cli_home")`."""
    from lean_mod_add_proof.grading import selftest

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ELAN_HOME", str(tmp_path / "no-elan"))
    monkeypatch.delenv("LEAN_MOD_ADD_PROOF_TOOLCHAIN", raising=False)
    selftest.forget()


@pytest.fixture
def fresh_memos() -> Iterator[None]:
    """Nothing this process remembers of an earlier self-test or toolchain probe (the `lean
    --version` and `lake comparator` probes), before the test and after it. Use it as
    `pytestmark = pytest.mark.usefixtures("fresh_memos")`."""
    from lean_mod_add_proof.grading import selftest, toolchain
    from lean_mod_add_proof.grading.routes import comparator

    def forget() -> None:
        selftest.forget()
        toolchain.clear_probe_cache()
        comparator.clear_probe_cache()

    forget()
    yield
    forget()
