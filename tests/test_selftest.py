"""The self-test: a toolchain's verdicts count only after it got the expected verdict on every
canary. Shown with the toolchain double (which acts like Lean on the canaries because each
canary's `-- double:` comments script it so) and with a lying toolchain that says yes to
everything (which must make every grade "could not judge", the reference proof included)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from helpers import DOUBLE_DIR, count_selftest_runs, double_config, grade_task, require_comparator, submission

from lean_mod_add_proof.dataset.network import verify
from lean_mod_add_proof.dataset.tasks import NETWORK_LEAN_PATH
from lean_mod_add_proof.dataset.weights_lean import render_weights_lean
from lean_mod_add_proof.grading import pipeline, selftest, toolchain
from lean_mod_add_proof.grading.grader import grade

NETWORK = NETWORK_LEAN_PATH.read_text(encoding="utf-8")

YES_LEAN = """#!/bin/sh
# A toolchain that is not Lean and says yes to everything.
if [ "$1" = --version ]; then echo "Lean (version 4.35.0-rc2, a liar)"; exit 0; fi
case " $* " in *" --run "*)
  printf '{"axioms":[],"check_axioms":[],"imports":[],"judge":1,"reason":"",'
  echo '"replayed":1,"theorem_kind":"theorem","verdict":"ok"}'
  exit 0 ;;
esac
while [ $# -gt 0 ]; do
  case "$1" in -o|-i) mkdir -p "$(dirname "$2")"; echo yes > "$2"; shift ;; esac
  shift
done
exit 0
"""


@pytest.fixture(autouse=True)
def _fresh_memo() -> None:
    selftest.forget()
    yield
    selftest.forget()


def _double() -> toolchain.Toolchain:
    found = toolchain.locate_toolchain(DOUBLE_DIR)
    assert isinstance(found, toolchain.Toolchain)
    return found


def _liar(tmp_path: Path) -> Path:
    tc = tmp_path / "liar"
    (tc / "bin").mkdir(parents=True)
    (tc / "lib" / "lean").mkdir(parents=True)
    (tc / "bin" / "lean").write_text(YES_LEAN)
    (tc / "bin" / "lean").chmod(0o755)
    (tc / "bin" / "leanexport").write_text('#!/bin/sh\necho "{}"\n')  # exports "something"
    (tc / "bin" / "leanexport").chmod(0o755)
    return tc


def test_the_selftest_weights_are_a_correct_network() -> None:
    # The matrices written out in SelfTestWeights.lean, checked by the exact evaluator and
    # rendered by the data set's own writer: the file must be exactly that body.
    e1, e2, w2 = [[1, 0], [-3, 0], [0, -3]], [[-1, 2], [2, -1], [2, 3]], [[-3, 4], [4, -2], [1, 2]]
    verdict = verify(e1, e2, w2)
    assert verdict.correct and verdict.p == selftest.SELFTEST_P
    text = selftest.SELFTEST_WEIGHTS_PATH.read_text(encoding="utf-8")
    rendered = render_weights_lean(selftest.SELFTEST_TASK_ID, 3, 2, 0, e1, e2, w2)
    body = text[text.index("namespace LeanCheckedNetwork.Net") :]
    assert body == rendered[rendered.index("namespace LeanCheckedNetwork.Net") :]


@pytest.mark.parametrize("route", pipeline.ROUTES["auto"], ids=lambda r: r.label)
async def test_the_double_passes_every_canary(tmp_path: Path, route: pipeline.Route) -> None:
    if route.label == "comparator":
        require_comparator()
    report = await selftest.run_selftest(_double(), double_config(tmp_path), NETWORK, route)
    assert report.passed, report.reason
    assert [c.name for c in report.canaries] == [c.name for c in selftest.canaries_for(route)]
    assert all(c.passed for c in report.canaries)
    assert not list((tmp_path / "work").glob("lean-mod-add-proof-selftest-*"))


def test_each_route_has_its_canaries() -> None:
    export = {c.name for c in selftest.canaries_for(pipeline.EXPORT_ROUTE)}
    olean = {c.name for c in selftest.canaries_for(pipeline.OLEAN_ROUTE)}
    compared = {c.name for c in selftest.canaries_for(pipeline.COMPARATOR_ROUTE)}
    crafted = {"an export missing a dependency", "a malformed export", "an export that redefines Spec"}
    assert crafted <= export and not crafted & (olean | compared)
    assert "reference proof" in export & olean & compared
    # an unused import trusts nothing with the export, so only the olean judge refuses it
    imported = "an import of a module the build made"
    assert (
        next(c for c in selftest.canaries_for(pipeline.EXPORT_ROUTE) if c.name == imported).expect_stage
        is None
    )
    assert next(c for c in selftest.canaries_for(pipeline.OLEAN_ROUTE) if c.name == imported).expect_stage


@pytest.mark.parametrize("route", [pipeline.EXPORT_ROUTE, pipeline.OLEAN_ROUTE], ids=lambda r: r.label)
async def test_a_yes_toolchain_fails_the_selftest(tmp_path: Path, route: pipeline.Route) -> None:
    found = toolchain.locate_toolchain(_liar(tmp_path))
    assert isinstance(found, toolchain.Toolchain)
    config = double_config(tmp_path, toolchain_dir=found.dir)
    report = await selftest.run_selftest(found, config, NETWORK, route)
    assert not report.passed
    assert report.reason == (
        f"toolchain self-test failed ({route.label}): a sorry proof was {report.canaries[1].got}"
    )
    # It accepts what should be accepted, and fails every canary that must be rejected.
    for canary, outcome in zip(selftest.canaries_for(route), report.canaries, strict=True):
        assert outcome.passed is (canary.expect_stage is None), outcome


async def test_a_yes_toolchain_makes_every_grade_could_not_judge(tmp_path: Path) -> None:
    config = double_config(tmp_path, toolchain_dir=_liar(tmp_path))
    for text in (submission(), submission() + "theorem x : False := by exact absurd rfl (by decide)\n"):
        res = await grade(text, grade_task(), config)
        assert not res.accepted and not res.judged and res.reward == 0.0
        assert res.reason.startswith(
            "could not judge: replay (export): toolchain self-test failed (replay (export)): "
            "a sorry proof was accepted"
        )
        assert "replay (olean): toolchain self-test failed" in res.reason and "comparator: " in res.reason


async def test_grades_wait_for_one_selftest_and_it_is_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = double_config(tmp_path)
    results = await asyncio.gather(*(grade(submission(), grade_task(), config) for _ in range(3)))
    assert all(r.accepted and r.judged for r in results), [r.reason for r in results]
    passes = list((tmp_path / "cache" / "selftest").glob("*.json"))
    assert len(passes) == 1 and json.loads(passes[0].read_text())["passed"] is True
    # A new process (forgotten memo) trusts the remembered pass instead of running canaries.
    selftest.forget()
    calls = count_selftest_runs(monkeypatch)
    assert (await grade(submission(), grade_task(), config)).accepted
    assert calls == []


async def test_a_failure_is_not_remembered_on_disk(tmp_path: Path) -> None:
    config = double_config(tmp_path, toolchain_dir=_liar(tmp_path))
    res = await grade(submission(), grade_task(), config)
    assert not res.judged
    assert not list((tmp_path / "cache" / "selftest").glob("*.json"))


def test_the_key_changes_with_what_a_pass_depends_on(tmp_path: Path) -> None:
    tc = _double()
    path = "native:ab;sandboxed=True"
    route = pipeline.EXPORT_ROUTE
    base = selftest.selftest_key(tc, double_config(tmp_path), route, path)
    elsewhere = double_config(tmp_path, work_root=tmp_path / "elsewhere")
    assert base == selftest.selftest_key(tc, elsewhere, route, path)
    assert base != selftest.selftest_key(tc, double_config(tmp_path, memory_mb=2048), route, path)
    # a pass with one judge says nothing of another: another executable, or `lean --run`
    assert base != selftest.selftest_key(tc, double_config(tmp_path), route, "native:cd;sandboxed=True")
    assert base != selftest.selftest_key(tc, double_config(tmp_path), route, "interpreted;sandboxed=True")
    # nor a pass by one route of another
    assert base != selftest.selftest_key(tc, double_config(tmp_path), pipeline.OLEAN_ROUTE, path)
    # the sandbox counts as used or not, not as set: `auto` with working bwrap is `on`
    assert base == selftest.selftest_key(tc, double_config(tmp_path, sandbox="auto"), route, path)
    assert base != selftest.selftest_key(tc, double_config(tmp_path), route, "native:ab;sandboxed=False")


def test_judging_a_canary(tmp_path: Path) -> None:
    from lean_mod_add_proof.grading.result import GradeResult

    by_name = {c.name: c for c in selftest.CANARIES}
    accepted = GradeResult(stage_reached="axioms")
    at_build = GradeResult(stage_reached="build", failed_stage="build", reason="x")
    unjudged = GradeResult(stage_reached="build", failed_stage="build", judged=False, reason="x")
    sorry = by_name["a sorry proof"]
    assert selftest.judge_canary(sorry, accepted, None) == "accepted"
    axioms = GradeResult(
        stage_reached="axioms", failed_stage="axioms", reason="t: axiom 'sorryAx' is not allowed"
    )
    assert selftest.judge_canary(sorry, axioms, None) is None
    init = by_name["an initializer"]
    assert selftest.judge_canary(init, accepted, tmp_path) is None
    assert selftest.judge_canary(init, at_build, None) is None  # refusing `initialize` is fine too
    assert selftest.judge_canary(init, unjudged, None) is not None
    (tmp_path / "tmp").mkdir()
    (tmp_path / "tmp" / selftest.INIT_MARKER).write_text("ran in the verdict")
    assert "initializer ran" in (selftest.judge_canary(init, accepted, tmp_path) or "")


def test_every_canary_names_the_belief_it_tests() -> None:
    assert set(selftest.BELIEFS) == {c.name for c in selftest.CANARIES}
    assert all(selftest.BELIEFS.values())
