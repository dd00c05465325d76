"""The toolchain double's export boundary, through real processes: `bin/leanexport`, the judge's
`--export` mode, `bin/lake` honouring the `judge`/`build` directives, and the switch that takes the
exporter away. The double decides nothing about proofs; what is checked here is that it speaks the
real NDJSON format (lean4 src/LeanExport/Basic.lean writes it, src/LeanExport/Parse.lean reads it,
and the small reader below follows Parse.lean's `parseItem`), follows the conventions of its
"kernel" (tests/toolchain_double/README.md), and leaves the olean mode as it was."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers import DOUBLE_DIR, copy_double, submission, weights_text

from lean_mod_add_proof.dataset.tasks import NETWORK_LEAN_PATH
from lean_mod_add_proof.grading.export_text import drop_constant, retype_constant
from lean_mod_add_proof.grading.reference import reference_submission, row_lemma_name
from lean_mod_add_proof.grading.routes import comparator as cmp

P = 5
THEOREM = "LeanCheckedNetwork.Net.adds_mod_5"
SPEC = "LeanCheckedNetwork.Net.Spec"
ANSWER = "LeanCheckedNetwork.Net.answer"
#: The theorem's statement as the double keys it (`term_key`): the same text as Weights' `Spec`.
STATEMENT_KEY = f"∀ a , a < {5} → ∀ b , b < {5} → {ANSWER} a b = ( a + b ) % {5}"
MODULES = ("Network", "Weights", "Submission")
#: Stand-ins for the two texts of Judge.lean (the double reads only their imports).
EXPORT_JUDGE = "import Lean\nimport Lean.Replay\nimport Lean.Util.FoldConsts\nimport LeanExport.Parse\n"
OLEAN_JUDGE = "import Lean\nimport Lean.Replay\nimport Lean.Util.FoldConsts\n"
SUB_OLEAN = ".lake/build/lib/lean/LeanCheckedNetwork/Submission.olean"


# ---- a reader that follows Parse.lean's shapes ------------------------------------------------


class Malformed(ValueError):
    pass


def _nat(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _no_dups(pairs: list[tuple[str, object]]) -> dict[str, object]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise Malformed("duplicate key")
    return dict(pairs)


def read_export(text: str) -> dict[str, object]:
    """Names, levels, expressions (as nested tuples) and constants of an export, refusing what
    `parseItem` refuses: an unknown shape, an index used before it is bound or bound twice, a
    constant declared twice. The first line is the metadata and is not read."""
    names: dict[int, str] = {0: ""}
    levels: dict[int, object] = {0: ("zero",)}
    exprs: dict[int, object] = {}
    consts: dict[str, dict[str, object]] = {}
    order: list[str] = []

    def get(table: dict, i: object, what: str):
        if not _nat(i) or i not in table:
            raise Malformed(f"{what} not found {i}")
        return table[i]

    def bind(table: dict, i: int, value: object, what: str) -> None:
        if i in table:
            raise Malformed(f"{what} index {i} bound twice")
        table[i] = value

    lines = text.split("\n")
    for line in lines[1:]:
        if line == "":
            continue
        obj = json.loads(line, object_pairs_hook=_no_dups)
        if not isinstance(obj, dict):
            raise Malformed("not an object")
        keys = sorted(obj)
        if len(obj) == 2 and "in" in obj and keys[1 - keys.index("in")] in ("str", "num"):
            tag = keys[1 - keys.index("in")]
            body = obj[tag]
            pre = get(names, body["pre"], "Name")
            last = body["str"] if tag == "str" else str(body["i"])
            bind(names, obj["in"], f"{pre}.{last}" if pre else last, "Name")
        elif len(obj) == 2 and "il" in obj and keys[1 - keys.index("il")] == "succ":
            bind(levels, obj["il"], ("succ", get(levels, obj["succ"], "Level")), "Level")
        elif len(obj) == 2 and "ie" in obj:
            tag = keys[1 - keys.index("ie")]
            body = obj[tag]
            if tag == "const":
                e: object = ("const", get(names, body["name"], "Name"))
                assert body["us"] == []
            elif tag == "app":
                e = ("app", get(exprs, body["fn"], "Expr"), get(exprs, body["arg"], "Expr"))
            elif tag == "sort":
                e = ("sort", get(levels, body, "Level"))
            elif tag == "strVal":
                assert isinstance(body, str)
                e = ("strVal", body)
            else:
                raise Malformed(f"unknown expression {tag}")
            bind(exprs, obj["ie"], e, "Expr")
        elif len(obj) == 1 and keys[0] in ("thm", "def", "axiom") and isinstance(obj[keys[0]], dict):
            body = obj[keys[0]]
            name = get(names, body["name"], "Name")
            c = {"kind": keys[0], "type": get(exprs, body["type"], "Expr"), "type_index": body["type"]}
            assert body["levelParams"] == []
            if keys[0] != "axiom":
                c["value"] = get(exprs, body["value"], "Expr")
                assert [get(names, a, "Name") for a in body["all"]] == [name]
            if keys[0] == "def":
                hints = body["hints"]
                assert body["safety"] == "safe"
                assert hints in ("opaque", "abbrev") or _nat(hints.get("regular"))
            else:
                assert keys[0] != "axiom" or body["isUnsafe"] is False
            if name in consts:
                raise Malformed(f"Duplicate declaration: {name}")
            consts[name] = c
            order.append(name)
        elif len(obj) == 1 and keys[0] == "inductive":
            for t in obj["inductive"]["types"] + obj["inductive"]["ctors"]:
                name = get(names, t["name"], "Name")
                consts[name] = {"kind": "inductive", "type": get(exprs, t["type"], "Expr")}
                order.append(name)
        else:
            raise Malformed(f"Unknown export object with keys {keys}")
    return {"names": names, "exprs": exprs, "consts": consts, "order": order}


def spine(e: object) -> tuple[str, list[object]]:
    """The head constant of an application and its arguments."""
    args: list[object] = []
    while isinstance(e, tuple) and e[0] == "app":
        args.append(e[2])
        e = e[1]
    assert isinstance(e, tuple) and e[0] == "const"
    return str(e[1]), args[::-1]


def c(name: str) -> tuple[str, str]:
    return ("const", name)


# ---- packages, exports and judges, as real processes ----------------------------------------


def env_for(tc: Path, pkg: Path, **extra: str) -> dict[str, str]:
    """The build's environment: the toolchain's bin first on PATH (the exporter's `findSysroot`
    runs `lean --print-prefix`), LEAN_PATH = the toolchain's library, then the package's."""
    env = {
        "PATH": f"{tc / 'bin'}:/usr/bin:/bin",
        "HOME": str(pkg),
        "LANG": "C.UTF-8",
        "LEAN_PATH": f"{tc / 'lib' / 'lean'}:{pkg / '.lake/build/lib/lean'}",
    }
    env.update(extra)
    return env


def build(tmp_path: Path, text: str, *, tc: Path = DOUBLE_DIR, name: str = "pkg") -> Path:
    """A package holding Network, Weights and `text` as the submission, compiled by the double."""
    pkg = tmp_path / name
    src = pkg / "LeanCheckedNetwork"
    src.mkdir(parents=True)
    (src / "Network.lean").write_text(NETWORK_LEAN_PATH.read_text(encoding="utf-8"), encoding="utf-8")
    (src / "Weights.lean").write_text(weights_text(P), encoding="utf-8")
    (src / "Submission.lean").write_text(text, encoding="utf-8")
    lib = pkg / ".lake/build/lib/lean/LeanCheckedNetwork"
    lib.mkdir(parents=True)
    for m in MODULES:
        done = subprocess.run(
            [str(tc / "bin" / "lean"), "-j", "1", "--json", "-o", str(lib / f"{m}.olean"), "-i",
             str(lib / f"{m}.ilean"), f"LeanCheckedNetwork/{m}.lean"],
            cwd=pkg, env=env_for(tc, pkg), capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, (m, done.stdout, done.stderr)
    return pkg


def leanexport(
    pkg: Path, *args: str, tc: Path = DOUBLE_DIR, fsize: int | None = None, **extra: str
) -> subprocess.CompletedProcess[bytes]:
    argv = [str(tc / "bin" / "leanexport"), *(args or ("LeanCheckedNetwork.Submission", "--", THEOREM))]

    def limit() -> None:
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    with open(pkg.parent / f"{pkg.name}.ndjson", "wb") as out:
        done = subprocess.run(
            argv, cwd=pkg, env=env_for(tc, pkg, **extra), stdout=out, stderr=subprocess.PIPE,
            timeout=60, check=False, preexec_fn=limit,
        )  # fmt: skip
    done.stdout = (pkg.parent / f"{pkg.name}.ndjson").read_bytes()
    return done


def exported(pkg: Path, **extra: str) -> str:
    done = leanexport(pkg, **extra)
    assert done.returncode == 0, done.stderr
    return done.stdout.decode("utf-8")


def verdict_dir(tmp_path: Path, pkg: Path, export: str | None, judge_text: str = EXPORT_JUDGE) -> Path:
    """A fresh verdict directory: the judge's text, the trusted oleans under lib/, and the
    submission's export (or, with `export=None`, its olean) under submission/."""
    vd = tmp_path / f"verdict-{len(list(tmp_path.glob('verdict-*')))}"
    (vd / "lib" / "LeanCheckedNetwork").mkdir(parents=True)
    (vd / "submission").mkdir()
    (vd / "Judge.lean").write_text(judge_text, encoding="utf-8")
    for m in ("Network", "Weights"):
        shutil.copy(pkg / f".lake/build/lib/lean/LeanCheckedNetwork/{m}.olean", vd / "lib/LeanCheckedNetwork")
    if export is None:
        shutil.copy(pkg / SUB_OLEAN, vd / "submission" / "Submission.olean")
    else:
        (vd / "submission" / "Submission.ndjson").write_text(export, encoding="utf-8")
    return vd


def judge_args(source: tuple[str, ...], tc: Path = DOUBLE_DIR) -> list[str]:
    argv = [*source, "--lib", "lib", "--toolchain-lib", str(tc / "lib" / "lean"), "--theorem", THEOREM]
    argv += ["--spec", SPEC, "--check", "leanModAddProofCheck_statement_matches"]
    for m in ("Init", "LeanCheckedNetwork.Network", "LeanCheckedNetwork.Weights"):
        argv += ["--allow-import", m]
    return [*argv, "--require-import", "LeanCheckedNetwork.Weights"]


EXPORT_SOURCE = ("--export", "submission/Submission.ndjson")


def run_judge(
    vd: Path,
    source: tuple[str, ...] = EXPORT_SOURCE,
    *,
    tc: Path = DOUBLE_DIR,
    program: list[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    program = program or [str(tc / "bin" / "lean"), "-j", "1", "--run", "Judge.lean"]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(vd), "LEAN_PATH": f"{tc / 'lib' / 'lean'}:{vd / 'lib'}"}
    return subprocess.run(
        [*program, *judge_args(source, tc)], cwd=vd, env=env, capture_output=True, text=True, timeout=60,
        check=False,
    )  # fmt: skip


def verdict_of(done: subprocess.CompletedProcess[str]) -> dict[str, object]:
    lines = done.stdout.splitlines()
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert lines[0] == '{"phase":"replay"}', lines
    return json.loads(lines[-1])


def judged(tmp_path: Path, pkg: Path, export: str) -> dict[str, object]:
    return verdict_of(run_judge(verdict_dir(tmp_path, pkg, export)))


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The reference proof, built once, and its export."""
    pkg = build(tmp_path_factory.mktemp("ref"), submission())
    return pkg, exported(pkg)


# ---- the format ------------------------------------------------------------------------------


def test_the_reference_exports_in_the_real_format(reference: tuple[Path, str]) -> None:
    _, text = reference
    lines = text.split("\n")
    assert lines[-1] == "" and all(lines[:-1])
    meta = json.loads(lines[0])
    assert meta == {
        "meta": {
            "exporter": {"name": "lean4export", "version": "3.1.0"},
            "format": {"version": "3.1.0"},
            "lean": {"githash": "0" * 40, "version": "4.35.0-rc2"},
        }
    }
    # Json.compress: no spaces, keys in ascending order, every line one object
    for line in lines[:-1]:
        assert line == json.dumps(json.loads(line), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert lines[1] == '{"in":1,"str":{"pre":0,"str":"LeanCheckedNetwork"}}'
    got = read_export(text)
    rows = [row_lemma_name(P, a) for a in range(P)]
    # the theorem's closure, each constant after what it uses, the theorem last: what `answer`
    # uses (Network's definitions, Weights' matrices) first
    assert got["order"][-(P + 2) :] == [ANSWER, *rows, THEOREM]
    assert {"LeanCheckedNetwork.answer", "LeanCheckedNetwork.Net.E1"} <= set(got["order"][: -(P + 2)])
    assert all(n.startswith("LeanCheckedNetwork.") for n in got["order"])
    consts = got["consts"]
    assert consts[ANSWER]["kind"] == "def"
    # the canonical trusted form: what its body mentions, under the double's primitive
    assert spine(consts[ANSWER]["value"])[0] == f"double.value.{ANSWER}"
    main = consts[THEOREM]
    assert main["kind"] == "thm"
    # a stated type is keyed by its normalised text (`term_key`), not by the theorem's name
    assert main["type"] == ("app", c(f"double.stmt.{STATEMENT_KEY}"), c(ANSWER))
    head, args = spine(main["value"])
    assert head == "double.proof" and args == [main["type"], *(c(r) for r in rows)]
    for r in rows:
        assert spine(consts[r]["value"]) == ("double.proof", [consts[r]["type"]])
    # names are written once and never for the anonymous name
    assert "" not in list(got["names"].values())[1:]
    assert len(set(got["names"].values())) == len(got["names"])


def test_the_reference_export_is_accepted(tmp_path: Path, reference: tuple[Path, str]) -> None:
    pkg, text = reference
    v = judged(tmp_path, pkg, text)
    assert v == {
        "verdict": "ok",
        "theorem_kind": "theorem",
        "replayed": P + 1,
        "reason": "",
        "judge": 1,
        "imports": [],
        "check_axioms": ["propext"],
        "axioms": ["propext"],
    }


def test_the_exporter_exports_the_closure_of_what_it_is_asked(
    tmp_path: Path, reference: tuple[Path, str]
) -> None:
    pkg, _ = reference
    row = row_lemma_name(P, 0)
    got = read_export(leanexport(pkg, "LeanCheckedNetwork.Submission", "--", row).stdout.decode())
    assert got["order"][-2:] == [ANSWER, row] and THEOREM not in got["order"]
    # with no `--`, everything the environment holds; `--x` options are taken out anywhere
    everything = read_export(
        leanexport(pkg, "--export-mdata", "LeanCheckedNetwork.Submission").stdout.decode()
    )
    assert {THEOREM, SPEC, "LeanCheckedNetwork.answer", "True", "propext"} <= set(everything["order"])


def test_a_missing_module_is_an_uncaught_exception(tmp_path: Path, reference: tuple[Path, str]) -> None:
    pkg, _ = reference
    done = leanexport(pkg, "Nope.Module", "--", THEOREM)
    assert done.returncode == 1 and done.stdout == b""
    err = done.stderr.decode()
    assert err.startswith("uncaught exception: unknown module prefix 'Nope'\n\nNo directory 'Nope' or file")
    assert str(DOUBLE_DIR / "lib" / "lean") in err  # the search path entries are listed
    done = leanexport(pkg, "LeanCheckedNetwork.Nope", "--", THEOREM)
    assert done.returncode == 1
    assert done.stderr.decode().startswith("uncaught exception: object file '")
    assert "of module LeanCheckedNetwork.Nope does not exist" in done.stderr.decode()


def test_a_missing_constant_panics(tmp_path: Path, reference: tuple[Path, str]) -> None:
    pkg, _ = reference
    done = leanexport(pkg, "LeanCheckedNetwork.Submission", "--", "No.such")
    assert done.returncode == 0 and "PANIC at LeanExport.dumpConstant" in done.stderr.decode()
    assert "Constant No.such not found in environment." in done.stderr.decode()
    assert read_export(done.stdout.decode())["order"] == []
    aborted = leanexport(pkg, "LeanCheckedNetwork.Submission", "--", "No.such", LEAN_ABORT_ON_PANIC="1")
    assert aborted.returncode == -signal.SIGABRT


def test_the_sysroot_comes_from_lean_on_path_or_lean_sysroot(
    tmp_path: Path, reference: tuple[Path, str]
) -> None:
    pkg, _ = reference
    done = leanexport(pkg, PATH="/usr/bin:/bin")
    assert done.returncode == 1 and done.stderr.decode().startswith("uncaught exception: ")
    done = leanexport(pkg, PATH="/usr/bin:/bin", LEAN_SYSROOT=str(DOUBLE_DIR))
    assert done.returncode == 0
    prefix = subprocess.run(
        [str(DOUBLE_DIR / "bin" / "lean"), "--print-prefix"], capture_output=True, text=True
    )
    assert prefix.stdout.strip() == str(DOUBLE_DIR)


# ---- the exporter's directives ---------------------------------------------------------------


def test_export_fail(tmp_path: Path) -> None:
    pkg = build(tmp_path, submission("export fail the exporter gave up"))
    done = leanexport(pkg)
    assert done.returncode == 1 and b"the exporter gave up" in done.stderr


def test_export_sleep(tmp_path: Path) -> None:
    pkg = build(tmp_path, submission("export sleep 1"))
    start = time.monotonic()
    assert leanexport(pkg).returncode == 0
    assert time.monotonic() - start >= 1.0


def test_export_flood_meets_the_file_size_cap(tmp_path: Path) -> None:
    pkg = build(tmp_path, submission("export flood 2"))
    done = leanexport(pkg)
    assert done.returncode == 0 and len(done.stdout) >= 2 << 20
    assert THEOREM in read_export(done.stdout.decode())["consts"]  # large, and still well-formed
    capped = leanexport(pkg, fsize=1 << 20)
    assert capped.returncode == -signal.SIGXFSZ


def test_export_crash(tmp_path: Path) -> None:
    pkg = build(tmp_path, submission("export crash"))
    assert leanexport(pkg).returncode == -signal.SIGSEGV


def test_export_garbage_is_a_malformed_export(tmp_path: Path) -> None:
    pkg = build(tmp_path, submission("export garbage"))
    text = exported(pkg)
    with pytest.raises(ValueError):
        read_export(text)
    v = judged(tmp_path, pkg, text)
    assert v["verdict"] == "replay" and str(v["reason"]).startswith("malformed export: Invalid JSON")


def test_export_omit_is_an_unknown_constant(tmp_path: Path) -> None:
    row = row_lemma_name(P, 2)
    pkg = build(tmp_path, submission(f"export omit {row}"))
    text = exported(pkg)
    assert row not in read_export(text)["consts"]
    v = judged(tmp_path, pkg, text)
    assert v["verdict"] == "replay"
    assert v["reason"] == f"the kernel rejected the submission: (kernel) unknown constant '{row}'"


def test_export_redefine_spec_differs(tmp_path: Path) -> None:
    pkg = build(tmp_path, submission("export redefine-spec"))
    text = exported(pkg)
    assert read_export(text)["consts"][SPEC]["value"] == c(f"double.redefined.{SPEC}")
    v = judged(tmp_path, pkg, text)
    assert v["verdict"] == "replay" and v["reason"] == f"the export's {SPEC} differs from the trusted one"


# ---- the double's kernel ---------------------------------------------------------------------


def test_a_theorem_retyped_to_another_theorems_type_is_a_type_mismatch(
    tmp_path: Path, reference: tuple[Path, str]
) -> None:
    pkg, text = reference
    row = row_lemma_name(P, 0)
    edited = retype_constant(text, THEOREM, row)
    assert read_export(edited)["consts"][THEOREM]["type"] == read_export(text)["consts"][row]["type"]
    v = judged(tmp_path, pkg, edited)
    assert v["verdict"] == "replay"
    assert str(v["reason"]).startswith(
        f"the kernel rejected the submission: (kernel) declaration type mismatch, '{THEOREM}' has type\n"
    )


def test_a_deleted_helper_lemma_is_an_unknown_constant(tmp_path: Path, reference: tuple[Path, str]) -> None:
    pkg, text = reference
    row = row_lemma_name(P, 3)
    v = judged(tmp_path, pkg, drop_constant(text, row))
    assert v["verdict"] == "replay" and v["replayed"] == P
    assert v["reason"] == f"the kernel rejected the submission: (kernel) unknown constant '{row}'"


def test_a_submission_of_its_own_spec_differs(tmp_path: Path) -> None:
    """No import of the task's modules: the build elaborates its own Spec, and the export carries
    it (its value read from the source) under the trusted name."""
    pkg = build(tmp_path, f"def {SPEC} : Prop := True\n\ntheorem {THEOREM} : {SPEC} := trivial\n")
    got = read_export(exported(pkg))
    assert got["order"] == ["True", "True.intro", SPEC, "trivial", THEOREM]
    spec = got["consts"][SPEC]
    assert (spec["kind"], spec["type"], spec["value"]) == ("def", ("sort", ("zero",)), c("True"))
    v = judged(tmp_path, pkg, exported(pkg))
    assert v["verdict"] == "replay" and v["reason"] == f"the export's {SPEC} differs from the trusted one"


def test_a_lone_constant_proves_its_own_type(tmp_path: Path) -> None:
    pkg = build(tmp_path, f"import LeanCheckedNetwork.Weights\n\ntheorem {THEOREM} : True := trivial\n")
    got = read_export(exported(pkg))
    assert got["consts"][THEOREM]["value"] == c("trivial") and got["consts"]["trivial"]["type"] == c("True")
    v = judged(tmp_path, pkg, exported(pkg))  # the kernel accepts it; the statement check does not
    assert v["verdict"] == "statement" and v["replayed"] == 1
    pkg = build(tmp_path, f"theorem {THEOREM} : {SPEC} := trivial\n", name="not-spec")
    v = judged(tmp_path, pkg, exported(pkg))  # trivial proves True, not the (trusted) Spec
    assert v["verdict"] == "replay" and "declaration type mismatch" in str(v["reason"])


def test_reached_axioms_are_reported(tmp_path: Path) -> None:
    text = (
        "import LeanCheckedNetwork.Weights\n\naxiom LeanCheckedNetwork.Net.cheat : False\n\n"
        f"theorem {THEOREM} : {SPEC} :=\n  LeanCheckedNetwork.Net.cheat.elim\n"
    )
    pkg = build(tmp_path, text)
    got = read_export(exported(pkg))
    assert got["consts"]["LeanCheckedNetwork.Net.cheat"]["kind"] == "axiom"
    v = judged(tmp_path, pkg, exported(pkg))
    assert v["verdict"] == "ok" and v["axioms"] == v["check_axioms"] == [
        "propext",
        "LeanCheckedNetwork.Net.cheat",
    ]
    pkg = build(
        tmp_path,
        f"import LeanCheckedNetwork.Weights\n\ntheorem {THEOREM} : {SPEC} := by\n  sorry\n",
        name="s",
    )
    assert judged(tmp_path, pkg, exported(pkg))["axioms"] == ["propext", "sorryAx"]


def test_the_theorem_must_be_exported_and_a_theorem(tmp_path: Path, reference: tuple[Path, str]) -> None:
    pkg, text = reference
    v = judged(tmp_path, pkg, drop_constant(text, THEOREM))
    assert v["verdict"] == "statement" and v["reason"] == f"the submission declares no {THEOREM}"
    assert v["theorem_kind"] == ""
    pkg = build(tmp_path, f"import LeanCheckedNetwork.Weights\n\ndef {THEOREM} : Prop := True\n", name="d")
    v = judged(tmp_path, pkg, exported(pkg))
    assert v["verdict"] == "statement" and v["reason"] == f"{THEOREM} is a def, not a theorem"
    assert v["theorem_kind"] == "def"


# ---- Parse.lean's rules in the judge ---------------------------------------------------------


def _swap_first_use(text: str) -> str:
    """The export with the first `const` line moved before the name line it uses."""
    lines = text.split("\n")
    i = next(n for n, line in enumerate(lines) if '"const"' in line)
    return "\n".join([lines[0], lines[i], *lines[1:i], *lines[i + 1 :]])


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (lambda t: t.rstrip("\n") + '\n{"bogus":1}\n', "Unknown export object with keys [bogus]"),
        (lambda t: t.rstrip("\n") + '\n{"in":99,"str":{"pre":0,"str":"x"},"extra":1}\n',
         "Unknown export object with keys [extra, in, str]"),
        (_swap_first_use, "Name not found"),
        (lambda t: t.replace('"ie":1}', '"ie":0}', 1), "Expr index 0 bound twice"),
        (lambda t: t.rstrip("\n") + "\n" + t.split("\n")[1] + "\n", "Name index 1 bound twice"),
        (lambda t: t.rstrip("\n") + "\n" + t.rstrip("\n").split("\n")[-1] + "\n",
         f"Duplicate declaration: {THEOREM}"),
        (lambda t: t.replace('{"in":1,', '{"in":1,"in":1,', 1), "Invalid JSON"),
        (lambda t: t.replace("\n", "\n\n", 2), "Invalid JSON"),
        (lambda t: t.replace('"levelParams":[]', '"levelParams":0', 1), "defnInfo invalid"),
    ],
)  # fmt: skip
def test_the_judge_refuses_what_parse_refuses(
    tmp_path: Path, reference: tuple[Path, str], edit, reason: str
) -> None:
    pkg, text = reference
    v = judged(tmp_path, pkg, edit(text))
    assert v["verdict"] == "replay" and v["replayed"] == 0, v
    assert str(v["reason"]).startswith(f"malformed export: {reason}"), v


def test_an_unreadable_export_is_a_malformed_export(tmp_path: Path, reference: tuple[Path, str]) -> None:
    pkg, text = reference
    vd = verdict_dir(tmp_path, pkg, text)
    (vd / "submission" / "Submission.ndjson").unlink()
    v = verdict_of(run_judge(vd))
    assert v["verdict"] == "replay"
    assert (
        v["reason"]
        == "malformed export: no such file or directory (error code: 2)\n  file: submission/Submission.ndjson"
    )


# ---- the judge's directives, carried in the export -------------------------------------------


@pytest.mark.parametrize(
    ("directive", "verdict", "reason"),
    [
        ("judge replay-fail (kernel) boom", "replay", "the kernel rejected the submission: (kernel) boom"),
        ("judge statement-fail not Spec", "statement", "not Spec"),
        ("judge kind axiom", "statement", f"{THEOREM} is a axiom, not a theorem"),
    ],
)
def test_carried_verdict_directives(tmp_path: Path, directive: str, verdict: str, reason: str) -> None:
    pkg = build(tmp_path, submission(directive))
    text = exported(pkg)
    carried = read_export(text)["consts"]["_double.judgeDirectives"]
    assert carried["value"] == ("strVal", directive.removeprefix("judge "))
    v = judged(tmp_path, pkg, text)
    assert (v["verdict"], v["reason"]) == (verdict, reason)


def test_carried_directives_survive_text_edits(tmp_path: Path) -> None:
    pkg = build(tmp_path, submission("judge axioms propext Classical.choice", "judge sleep 0"))
    text = drop_constant(exported(pkg), row_lemma_name(P, 1))  # the edit is refused, directives kept
    assert judged(tmp_path, pkg, text)["verdict"] == "replay"
    v = judged(tmp_path, pkg, exported(pkg))
    assert v["verdict"] == "ok" and v["axioms"] == ["propext", "Classical.choice"]
    pkg = build(tmp_path, submission("judge no-axioms"), name="none")
    assert judged(tmp_path, pkg, exported(pkg))["axioms"] == []


@pytest.mark.parametrize(
    ("directive", "returncode", "marker"),
    [("judge crash", -signal.SIGSEGV, True), ("judge panic", 1, True), ("judge exit 3", 3, True),
     ("judge setup-fail", 1, False), ("judge no-verdict", 0, True)],
)  # fmt: skip
def test_carried_failures(tmp_path: Path, directive: str, returncode: int, marker: bool) -> None:
    pkg = build(tmp_path, submission(directive))
    done = run_judge(verdict_dir(tmp_path, pkg, exported(pkg)))
    assert done.returncode == returncode
    assert (done.stdout.splitlines()[:1] == ['{"phase":"replay"}']) is marker
    assert '"verdict"' not in done.stdout


def test_judge_env_lists_the_verdict_directory(tmp_path: Path) -> None:
    pkg = build(tmp_path, submission("judge env"))
    done = run_judge(verdict_dir(tmp_path, pkg, exported(pkg)))
    out = done.stdout
    assert "Submission.ndjson" in out and "Judge.lean" in out and "Weights.olean" in out
    assert "Submission.olean" not in out and verdict_of(done)["verdict"] == "ok"


def test_judge_write_and_sleep(tmp_path: Path) -> None:
    pkg = build(tmp_path, submission("judge sleep 1", f"judge write {tmp_path / 'written'}"))
    start = time.monotonic()
    done = run_judge(verdict_dir(tmp_path, pkg, exported(pkg)))
    assert time.monotonic() - start >= 1.0 and verdict_of(done)["verdict"] == "ok"
    assert (tmp_path / "written").read_text() == "written by the double judge\n"


# ---- the judge's command line, its two texts, the native judge, the switch --------------------

REQUIRED = "uncaught exception: judge: --olean, --theorem, --spec and --check are required\n"


def test_exactly_one_source(tmp_path: Path, reference: tuple[Path, str]) -> None:
    pkg, text = reference
    vd = verdict_dir(tmp_path, pkg, text)
    both = run_judge(vd, (*EXPORT_SOURCE, "--olean", "submission/Submission.olean"))
    neither = run_judge(vd, ())
    for done in (both, neither):
        assert (done.returncode, done.stdout) == (1, REQUIRED)


def test_the_olean_text_has_no_export_arm(tmp_path: Path, reference: tuple[Path, str]) -> None:
    pkg, text = reference
    done = run_judge(verdict_dir(tmp_path, pkg, text, OLEAN_JUDGE))
    assert (done.returncode, done.stdout) == (1, "uncaught exception: judge: unknown argument --export\n")


def _native(vd: Path, tc: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "LEAN_PATH": str(tc / "lib" / "lean")}
    return subprocess.run(
        [str(tc / "bin" / "lean"), "-j", "1", "-c", "Judge.c", "Judge.lean"], cwd=vd, env=env,
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_the_native_export_judge(tmp_path: Path, reference: tuple[Path, str]) -> None:
    pkg, text = reference
    vd = verdict_dir(tmp_path, pkg, text)
    assert _native(vd, DOUBLE_DIR).returncode == 0
    link = subprocess.run(
        [str(DOUBLE_DIR / "bin" / "leanc"), "-O3", "-DNDEBUG", "-o", "judge", "Judge.c"], cwd=vd, check=False
    )
    assert link.returncode == 0
    assert verdict_of(run_judge(vd, program=[str(vd / "judge")]))["verdict"] == "ok"
    olean_vd = verdict_dir(tmp_path, pkg, text, OLEAN_JUDGE)
    assert _native(olean_vd, DOUBLE_DIR).returncode == 0
    subprocess.run([str(DOUBLE_DIR / "bin" / "leanc"), "-o", "judge", "Judge.c"], cwd=olean_vd, check=True)
    done = run_judge(olean_vd, program=[str(olean_vd / "judge")])
    assert done.stdout == "uncaught exception: judge: unknown argument --export\n"


def test_the_switch_takes_the_exporter_away(tmp_path: Path) -> None:
    tc = copy_double(tmp_path / "tc")
    (tc / "double-no-leanexport").write_text("")
    version = subprocess.run([str(tc / "bin" / "lean"), "--version"], capture_output=True, text=True)
    assert version.returncode == 0  # the first command run in the copy applies the switch
    assert not (tc / "bin" / "leanexport").exists() and not (tc / "lib" / "lean" / "LeanExport").exists()
    assert (tc / "lib" / "lean" / "Lean" / "Replay.olean").exists()
    pkg = build(tmp_path, submission(), tc=tc)
    vd = verdict_dir(tmp_path, pkg, None)
    compiled = _native(vd, tc)
    assert compiled.returncode == 1 and "LeanExport" in compiled.stdout
    assert not (vd / "Judge.c").exists()
    done = run_judge(vd, ("--olean", "submission/Submission.olean"), tc=tc)
    assert done.returncode == 1 and "unknown module prefix 'LeanExport'" in done.stdout
    (vd / "Judge.lean").write_text(OLEAN_JUDGE)  # the olean text still compiles and judges
    assert _native(vd, tc).returncode == 0
    assert verdict_of(run_judge(vd, ("--olean", "submission/Submission.olean"), tc=tc))["verdict"] == "ok"
    assert DOUBLE_DIR.joinpath("bin", "leanexport").exists()  # the shared double keeps its own


# ---- olean mode, unchanged -------------------------------------------------------------------


def test_olean_mode_is_unchanged(tmp_path: Path, reference: tuple[Path, str]) -> None:
    pkg, _ = reference
    vd = verdict_dir(tmp_path, pkg, None, OLEAN_JUDGE)
    done = run_judge(vd, ("--olean", "submission/Submission.olean"))
    assert done.returncode == 0
    assert done.stdout == (
        '{"phase":"replay"}\n'
        '{"verdict":"ok","theorem_kind":"theorem","replayed":1,"reason":"","judge":1,'
        '"imports":["Init","LeanCheckedNetwork.Weights"],"check_axioms":["propext"],"axioms":["propext"]}\n'
    )
    olean = (pkg / SUB_OLEAN).read_text(encoding="utf-8").splitlines()
    assert olean[0].startswith("double-olean LeanCheckedNetwork.Submission ")
    assert [line for line in olean if line.startswith("decl ")] == [
        f"decl {n}" for n in [*(row_lemma_name(P, a) for a in range(P)), THEOREM]
    ]


# ---- bin/lake honours the judge and build directives -----------------------------------------


def _lake(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    root = tmp_path / "comparator"
    cmp.write_package(root, cmp.comparator_files(P, NETWORK_LEAN_PATH.read_text(), weights_text(P), text))
    (root / "comparator.json").write_text(cmp.config_json(P))
    tc = copy_double(tmp_path / "lake-tc")
    env = {"PATH": f"{tc / 'bin'}:/usr/bin:/bin", "HOME": str(root), "COMPARATOR_BWRAP": "/bin/true"}
    return subprocess.run(
        [str(tc / "bin" / "lake"), "comparator", "--config", "comparator.json"], cwd=root, env=env,
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("directives", "code", "error"),
    [
        ((), 0, None),
        (("judge replay-fail (kernel) boom",), 1, "error: Lean default exited with 1"),
        (("judge crash",), 1, "error: Lean default exited with 139"),
        (("judge statement-fail x",), 1, f"theorem statement do not match: '{THEOREM}'"),
        (("judge kind def",), 1, f"error: Challenge and solution constant kind don't match: '{THEOREM}'"),
        (("judge axioms propext Foo.bar",), 1, "error: Axiom 'Foo.bar' is not permitted"),
        (("judge axioms propext Classical.choice",), 0, None),
        (("build fail unknown id",), 1, "error: LeanCheckedNetwork/Submission.lean: unknown id"),
        (("comparator reject still scripted",), 1, "error: still scripted"),
    ],
)  # fmt: skip
def test_lake_comparator_judges_the_same_text(
    tmp_path: Path, directives: tuple[str, ...], code: int, error: str | None
) -> None:
    done = _lake(tmp_path, submission(*directives, p=P))
    assert done.returncode == code, (done.stdout, done.stderr)
    if error is None:
        assert done.stdout.rstrip().endswith("Your solution is okay!")
    else:
        assert error in done.stderr and "Your solution is okay!" not in done.stdout
    if directives and directives[0].startswith(("build", "judge crash", "judge replay")):
        assert "Building LeanCheckedNetwork.Submission" in done.stdout


def test_the_double_lists_its_export_tools() -> None:
    for tool in ("leanexport", "leanchecker"):
        assert os.access(DOUBLE_DIR / "bin" / tool, os.X_OK)
    for module in ("LeanExport/Parse", "LeanExport/Basic", "LeanExport/Json", "LeanExport"):
        assert (DOUBLE_DIR / "lib" / "lean" / f"{module}.olean").is_file()


# ---- a directive belongs to the declaration written after it -------------------------------

_UNUSED = "theorem LeanCheckedNetwork.Net.unused_fact : True := trivial\n"
_BEFORE_UNUSED = "-- double: judge replay-fail (kernel) boom\n" + _UNUSED


def test_a_directive_on_an_unused_declaration_is_not_exported(tmp_path: Path) -> None:
    # leanexport writes only the theorem's closure (`dumpConstant`, src/LeanExport/Basic.lean),
    # so a declaration the theorem never uses, and its directive, are not in the export.
    pkg = build(tmp_path, submission() + "\n" + _BEFORE_UNUSED)
    text = exported(pkg)
    consts = read_export(text)["consts"]
    assert "LeanCheckedNetwork.Net.unused_fact" not in consts
    assert "_double.judgeDirectives" not in consts
    assert judged(tmp_path, pkg, text)["verdict"] == "ok"
    # The olean holds every declaration: there the directive always takes effect.
    v = verdict_of(run_judge(verdict_dir(tmp_path, pkg, None), ("--olean", "submission/Submission.olean")))
    assert (v["verdict"], v["reason"]) == ("replay", "the kernel rejected the submission: (kernel) boom")


def test_a_directive_on_a_used_declaration_is_exported(tmp_path: Path) -> None:
    row = row_lemma_name(P, 1)
    text = submission().replace(
        f"set_option maxHeartbeats 0 in\ntheorem {row} ",
        f"-- double: judge replay-fail (kernel) boom\nset_option maxHeartbeats 0 in\ntheorem {row} ",
    )
    assert "judge replay-fail" in text
    pkg = build(tmp_path, text)
    v = judged(tmp_path, pkg, exported(pkg))
    assert (v["verdict"], v["reason"]) == ("replay", "the kernel rejected the submission: (kernel) boom")


def test_exporting_everything_carries_every_directive(tmp_path: Path) -> None:
    pkg = build(tmp_path, submission() + "\n" + _BEFORE_UNUSED)
    done = leanexport(pkg, "LeanCheckedNetwork.Submission")
    assert done.returncode == 0, done.stderr
    consts = read_export(done.stdout.decode("utf-8"))["consts"]
    assert consts["_double.judgeDirectives"]["value"] == ("strVal", "replay-fail (kernel) boom")


def test_the_shift_canary_exports_its_bomb_and_an_unused_bomb_is_not_exported(tmp_path: Path) -> None:
    # The self-test's shift canary (p = 3 there) made for this module's p: its theorem uses the
    # bomb, so the bomb, its directive and a replay rejection travel; the old text (the bomb
    # unused) exported neither, and its export-route canary accepted.
    from lean_mod_add_proof.grading.export_text import ExportEditError, require_constant
    from lean_mod_add_proof.grading.selftest import SHIFT_BOMB

    bomb = (
        "-- double: judge replay-fail (kernel) Nat.shiftLeft exponent is too large\n"
        f"theorem {SHIFT_BOMB} : Nat.shiftLeft 1 4294967296 = 0 := by\n  decide +kernel\n\n"
    )
    header = reference_submission(P).split("\n\n", 1)[0] + "\n\n"
    unused = header + bomb + reference_submission(P).removeprefix(header)
    used = unused.replace("  intro a ha\n", f"  have _bomb := {SHIFT_BOMB}\n  clear _bomb\n  intro a ha\n", 1)
    assert used != unused
    pkg = build(tmp_path, used, name="used")
    text = exported(pkg)
    assert require_constant(text, SHIFT_BOMB) == text
    assert judged(tmp_path, pkg, text)["verdict"] == "replay"
    pkg = build(tmp_path, unused, name="unused")
    text = exported(pkg)
    with pytest.raises(ExportEditError):
        require_constant(text, SHIFT_BOMB)
    assert judged(tmp_path, pkg, text)["verdict"] == "ok"


# ---- review findings: where the double was kinder than Lean, or a canary could not fail ----------
# (tests/toolchain_double/README.md, the rows marked PENDING REVIEW)

_STMT = f"∀ a, a < {P} → ∀ b, b < {P} → {ANSWER} a b = (a + b) % {P}"
_CHEAT = (
    "import LeanCheckedNetwork.Weights\n\naxiom selftestCheat : {spec}\n\n"
    "theorem {thm} : {stmt} := selftestCheat\n"
)


def _checker(
    tc: Path, pkg: Path, name: str, export: Path, *, abort_on_panic: bool = False
) -> subprocess.CompletedProcess[str]:
    """One bundled checker of the double on `export`, with the command line the grader gives it
    (and LEAN_ABORT_ON_PANIC=1 with `abort_on_panic`, as the grader gives the Lean programs)."""
    if name == "nanoda_bin":
        config = pkg.parent / "nanoda.json"
        permitted = ["propext", "Classical.choice", "Quot.sound"]
        # The keys the grader writes (kernels.nanoda_config), one thread: nanoda's defaults
        # (src/util.rs `Config`) refuse a declared axiom before any use and every literal.
        cfg = {"export_file_path": str(export), "permitted_axioms": permitted}
        grader = {"unpermitted_axiom_hard_error": False, "nat_extension": True, "string_extension": True}
        config.write_text(json.dumps({**cfg, **grader}))
        args = [str(config)]
    elif name == "lean4lean":
        args = ["--import", str(export)]
    elif name == "con-leche":
        args = [str(export)]
    else:  # leanchecker, leanchecker-paranoid
        args = ["--silent", "--from-export", str(export)]
    argv = [str(tc / "bin" / name), *args]
    env = {k: v for k, v in os.environ.items() if k != "LEAN_ABORT_ON_PANIC"}
    if abort_on_panic:
        env["LEAN_ABORT_ON_PANIC"] = "1"
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, env=env)


def test_the_kernel_unfolds_a_trusted_spec_to_its_statement(tmp_path: Path) -> None:
    # The checker canary "an axiom outside the list": `selftestCheat : Spec` proves the theorem's
    # statement only by unfolding Spec (delta). Lean's kernel does; the double's now does too, so
    # the export is well typed and only the checkers that police axioms refuse it, for its axiom.
    pkg = build(tmp_path, _CHEAT.format(spec=SPEC, thm=THEOREM, stmt=_STMT))
    text = exported(pkg)
    export = pkg.parent / "pkg.ndjson"  # what `exported` wrote
    spec = read_export(text)["consts"][SPEC]  # in the closure (the axiom's type), keyed as the theorem
    assert spine(spec["value"])[0] == f"double.stmt.{STATEMENT_KEY}"
    v = judged(tmp_path, pkg, text)
    assert (v["verdict"], v["axioms"]) == ("ok", ["propext", "selftestCheat"])
    for name in ("leanchecker", "leanchecker-paranoid", "lean4lean"):
        got = _checker(DOUBLE_DIR, pkg, name, export)
        assert got.returncode == 0, (name, got.stdout, got.stderr)
    got = _checker(DOUBLE_DIR, pkg, "nanoda_bin", export)  # hard_error false: its use panics
    assert got.returncode == 101, got.stderr
    assert got.stderr.startswith("thread 'main' (")  # the Rust of the rc toolchains names the tid
    assert "panicked at src/tc.rs:230:13:\ndeclaration not found in infer_const, selftestCheat" in got.stderr
    got = _checker(DOUBLE_DIR, pkg, "con-leche", export)  # "every other non-pinned axiom declines"
    assert got.returncode == 2 and "non-standard axiom (selftestCheat)" in got.stderr


def test_unfolding_is_no_kinder_than_lean(tmp_path: Path) -> None:
    # A statement that is not Spec's (modulus P + 1) is not proved by a proof of Spec.
    wrong = _STMT.replace(f"% {P}", f"% {P + 1}")
    pkg = build(tmp_path, _CHEAT.format(spec=SPEC, thm=THEOREM, stmt=wrong))
    v = judged(tmp_path, pkg, exported(pkg))
    assert v["verdict"] == "replay"
    assert str(v["reason"]).startswith(
        "the kernel rejected the submission: (kernel) declaration type mismatch, "
        f"'{THEOREM}' has type\n  {SPEC}\n"
    )


def test_the_export_judge_compares_the_statement_with_spec(tmp_path: Path) -> None:
    # Judge.lean adds `theorem check : Spec := thm`: a theorem the kernel accepts whose type is not
    # Spec is a `statement` verdict with the kernel's message, with no directive scripting it.
    wrong = reference_submission(P).replace(f"(a + b) % {P} := by", f"(b + a) % {P} := by", 1)
    assert wrong != reference_submission(P)
    pkg = build(tmp_path, wrong)
    v = judged(tmp_path, pkg, exported(pkg))
    assert (v["verdict"], v["theorem_kind"], v["replayed"]) == ("statement", "theorem", P + 1)
    assert str(v["reason"]).startswith(
        f"{THEOREM} does not have type {SPEC}: (kernel) declaration type mismatch, "
        f"'leanModAddProofCheck_statement_matches' has type\n  double.stmt."
    )
    assert str(v["reason"]).endswith(f"\nbut it is expected to have type\n  {SPEC}")
    # the olean judge makes the same check on the olean's records
    olean = verdict_of(
        run_judge(verdict_dir(tmp_path, pkg, None), ("--olean", "submission/Submission.olean"))
    )
    assert (olean["verdict"], olean["reason"]) == ("statement", v["reason"])
    # The same statement spelled otherwise (spacing, ASCII arrows, short names in a namespace) is Spec.
    respelled = reference_submission(P).replace(
        f"theorem {THEOREM} : {_STMT} := by",
        f"namespace LeanCheckedNetwork.Net\n\ntheorem adds_mod_{P} : "
        f"∀ a, a<{P} -> ∀ b, b < {P} -> answer a b = (a+b) % {P} := by",
    )
    respelled = respelled.rstrip("\n") + "\n\nend LeanCheckedNetwork.Net\n"
    assert "->" in respelled
    pkg = build(tmp_path, respelled, name="respelled")
    assert judged(tmp_path, pkg, exported(pkg))["verdict"] == "ok"


def test_a_verdict_directive_of_no_declaration_is_never_exported(tmp_path: Path) -> None:
    # The reviewers' case: a directive separated from the declaration it describes, at the end of
    # the file, used to ride in every export. Lean's export holds only the closure.
    pkg = build(tmp_path, reference_submission(P) + "\n-- double: judge replay-fail (kernel) boom\n")
    text = exported(pkg)
    assert "_double.judgeDirectives" not in read_export(text)["consts"]
    assert judged(tmp_path, pkg, text)["verdict"] == "ok"
    # the olean holds every declaration: there it still acts
    v = verdict_of(run_judge(verdict_dir(tmp_path, pkg, None), ("--olean", "submission/Submission.olean")))
    assert v["verdict"] == "replay"
    # a directive scripting the judge process itself still rides from anywhere
    pkg = build(tmp_path, reference_submission(P) + "\n-- double: judge exit 3\n", name="exit")
    assert run_judge(verdict_dir(tmp_path, pkg, exported(pkg))).returncode == 3


def test_the_shift_canary_with_its_directive_moved_away_tests_nothing(tmp_path: Path) -> None:
    # The review's experiment: the bomb unused and its directive at the end of the file. The old
    # double still carried `replay-fail`, hiding the canary's defect; now the export is accepted.
    from lean_mod_add_proof.grading.selftest import SHIFT_BOMB

    header = reference_submission(P).split("\n\n", 1)[0] + "\n\n"
    text = (
        header
        + f"theorem {SHIFT_BOMB} : Nat.shiftLeft 1 4294967296 = 0 := by\n  decide +kernel\n\n"
        + reference_submission(P).removeprefix(header)
        + "\n-- double: judge replay-fail (kernel) Nat.shiftLeft exponent is too large\n"
    )
    pkg = build(tmp_path, text)
    assert judged(tmp_path, pkg, exported(pkg))["verdict"] == "ok"


def test_a_private_theorem_is_not_declared_under_its_written_name(tmp_path: Path) -> None:
    # `private theorem N` declares `_private.<Module>.0.N` (mkPrivateName, lean4
    # src/Lean/PrivateName.lean): the judge does not find N, and `leanexport -- N` panics.
    text = reference_submission(P).replace(f"theorem {THEOREM} ", f"private theorem {THEOREM} ", 1)
    pkg = build(tmp_path, text)
    olean = (pkg / SUB_OLEAN).read_text(encoding="utf-8").splitlines()
    assert f"decl {THEOREM}" not in olean
    v = verdict_of(run_judge(verdict_dir(tmp_path, pkg, None), ("--olean", "submission/Submission.olean")))
    assert (v["verdict"], v["reason"]) == ("statement", f"the submission declares no {THEOREM}")
    done = leanexport(pkg)
    assert done.returncode == 0 and f"Constant {THEOREM} not found in environment." in done.stderr.decode()
    v = judged(tmp_path, pkg, done.stdout.decode("utf-8"))
    assert (v["verdict"], v["reason"]) == ("statement", f"the submission declares no {THEOREM}")
    # A private lemma the theorem uses is exported under its private name, and resolves.
    row = row_lemma_name(P, 0)
    text = reference_submission(P).replace(f"theorem {row} ", f"private theorem {row} ", 1)
    pkg = build(tmp_path, text, name="private-row")
    got = read_export(exported(pkg))
    assert f"_private.LeanCheckedNetwork.Submission.0.{row}" in got["consts"] and row not in got["consts"]
    assert judged(tmp_path, pkg, exported(pkg))["verdict"] == "ok"


def test_the_checkers_act_on_a_carried_replay_fail(tmp_path: Path) -> None:
    pkg = build(tmp_path, submission("judge replay-fail (kernel) boom"))
    export = pkg.parent / "pkg.ndjson"
    exported(pkg)
    done = _checker(DOUBLE_DIR, pkg, "leanchecker", export)
    assert (done.returncode, done.stderr) == (1, "uncaught exception: (kernel) boom\n")
    # Each bundled checker rejects it in its own words (grading/kernels.py rows).
    got = _checker(DOUBLE_DIR, pkg, "leanchecker-paranoid", export)
    assert (got.returncode, got.stdout) == (1, "Lean default kernel rejects the solution: (kernel) boom\n")
    # Not a declaration type mismatch: printed against the fresh environment, no panic, exit 1
    # with or without LEAN_ABORT_ON_PANIC (lean4lean Replay.lean `Kernel.Exception.mapEnvM`).
    for abort in (False, True):
        got = _checker(DOUBLE_DIR, pkg, "lean4lean", export, abort_on_panic=abort)
        assert (got.returncode, got.stderr) == (1, "uncaught exception: at Double.scripted: (kernel) boom\n")
    got = _checker(DOUBLE_DIR, pkg, "nanoda_bin", export)
    assert got.returncode == 101 and got.stderr.startswith("thread 'main' (")
    assert got.stderr.splitlines()[0].endswith(" panicked at src/tc.rs:955:71:")
    got = _checker(DOUBLE_DIR, pkg, "con-leche", export)
    assert got.returncode == 1 and got.stderr.startswith("con-leche: (kernel) boom [at thm")


def test_lean4lean_aborts_only_on_a_declaration_type_mismatch(tmp_path: Path) -> None:
    """`Kernel.Exception.mapEnvM` keeps the replay's own, extension-less environment only for
    `declTypeMismatch`, whose printer then panics (lean4lean Replay.lean; checkers-table.md T1):
    SIGABRT under LEAN_ABORT_ON_PANIC, the message and exit 1 without it."""
    pkg = build(tmp_path, submission("judge replay-fail (kernel) declaration type mismatch, 'x' has type"))
    export = pkg.parent / "pkg.ndjson"
    exported(pkg)
    got = _checker(DOUBLE_DIR, pkg, "lean4lean", export, abort_on_panic=True)
    assert got.returncode == -signal.SIGABRT, (got.returncode, got.stderr)
    assert got.stderr.startswith("PANIC at _private.Lean.Environment.0.Lean.EnvExtension.getStateImpl")
    got = _checker(DOUBLE_DIR, pkg, "lean4lean", export)
    assert got.returncode == 1 and got.stderr.startswith("PANIC at _private.Lean.Environment")
    assert "uncaught exception: at x: (kernel) declaration type mismatch" in got.stderr


def test_lake_judges_only_the_theorems_closure(tmp_path: Path) -> None:
    # Real `lake comparator` exports and checks the theorem's closure (`safeExport`, Check.lean):
    # a directive or a sorry on a declaration the theorem never uses changes nothing there.
    unused_sorry = "theorem LeanCheckedNetwork.Net.unused_gap : True := by\n  sorry\n"
    for n, extra in enumerate((_BEFORE_UNUSED, unused_sorry, "-- double: judge replay-fail (kernel) boom\n")):
        (tmp_path / f"unused-{n}").mkdir()
        done = _lake(tmp_path / f"unused-{n}", reference_submission(P) + "\n" + extra)
        assert done.returncode == 0, (extra, done.stdout, done.stderr)
    used_sorry = reference_submission(P).replace("  decide +kernel\n", "  sorry\n", 1)
    (tmp_path / "used").mkdir()
    done = _lake(tmp_path / "used", used_sorry)
    assert done.returncode == 1 and "Axiom 'sorryAx' is not permitted" in done.stderr


# ---- independent review (review, 2026-12-04): three places the double was still kinder ---------

OLEAN_SOURCE = ("--olean", "submission/Submission.olean")


def test_a_directive_above_a_doc_comment_or_attribute_line_belongs_to_the_declaration(tmp_path: Path) -> None:
    # Lean's grammar makes a doc comment and attributes part of the declaration (`declModifiers`,
    # lean4 src/Lean/Parser/Command.lean): a directive above them describes that declaration, so
    # it rides in the export when the declaration is in the closure, as on the olean route.
    row = row_lemma_name(P, 1)
    # A blank line and a line comment are whitespace to Lean too (`whitespace`, src/Lean/Parser/Basic.lean).
    betweens = (
        "/-- A row. -/\n",
        "@[simp]\n",
        "set_option maxHeartbeats 0 in\n/-- A\n  row. -/\n",
        "\n",
        "-- a note\n\n",
    )
    for n, between in enumerate(betweens):
        text = submission().replace(
            f"set_option maxHeartbeats 0 in\ntheorem {row} ",
            f"-- double: judge replay-fail (kernel) boom\n{between}theorem {row} ",
        )
        assert between in text
        pkg = build(tmp_path, text, name=f"p{n}")
        v = judged(tmp_path, pkg, exported(pkg))
        got = (v["verdict"], v["reason"])
        assert got == ("replay", "the kernel rejected the submission: (kernel) boom"), between


def test_the_olean_judge_finds_no_theorem_lean_would_not_declare(tmp_path: Path) -> None:
    # Under `namespace X` the theorem is `X.<name>`; inside a block comment it is nothing. bin/lean's
    # `decl` line is a text match that meets both; the statement check's records do not.
    in_x = reference_submission(P).replace(f"theorem {THEOREM} ", f"namespace X\ntheorem {THEOREM} ", 1)
    commented = reference_submission(P).replace(f"theorem {THEOREM} ", f"/-\ntheorem {THEOREM} ", 1)
    for n, text in enumerate((in_x.rstrip("\n") + "\nend X\n", commented.rstrip("\n") + "\n-/\n")):
        pkg = build(tmp_path, text, name=f"p{n}")
        assert f"decl {THEOREM}" in (pkg / SUB_OLEAN).read_text(encoding="utf-8").splitlines()
        v = verdict_of(run_judge(verdict_dir(tmp_path, pkg, None), OLEAN_SOURCE))
        assert (v["verdict"], v["reason"]) == ("statement", f"the submission declares no {THEOREM}")


@pytest.mark.parametrize(
    "command",
    [
        "local macro_rules | `($x + $y) => `(HMul.hMul $x $y)",
        "local instance : HMod Nat Nat Nat := ⟨fun _ _ => 0⟩",
        "attribute [local instance] Nat.decEq",
    ],
)
def test_a_statement_after_a_reinterpreting_command_is_not_keyed_by_its_text(
    tmp_path: Path, command: str
) -> None:
    # The same statement text after a local macro or instance may elaborate to another term in Lean,
    # which then refuses `check : Spec := thm`; the double no longer equates the two texts.
    text = reference_submission(P).replace(f"theorem {THEOREM} ", f"{command}\n\ntheorem {THEOREM} ", 1)
    pkg = build(tmp_path, text)
    v = judged(tmp_path, pkg, exported(pkg))
    assert (v["verdict"], v["theorem_kind"]) == ("statement", "theorem")
    olean = verdict_of(run_judge(verdict_dir(tmp_path, pkg, None), OLEAN_SOURCE))
    assert olean["verdict"] == "statement"


def test_a_lemma_fails_the_build_as_core_lean_has_no_lemma_command(tmp_path: Path) -> None:
    # lean4's own tests/lean/run/lemma.lean defines `lemma` by a macro first: core has none, so rc2
    # stops at it. The double used to record it as a theorem and build.
    text = reference_submission(P).replace(f"theorem {THEOREM} ", f"lemma {THEOREM} ", 1)
    with pytest.raises(AssertionError, match="unexpected identifier; expected command"):
        build(tmp_path, text)


def test_an_ambiguous_short_name_is_not_resolved_to_either_candidate(tmp_path: Path) -> None:
    # With a root `Spec` of the submission's own and `open LeanCheckedNetwork.Net`, `Spec` names two
    # constants (`resolveGlobalName`, src/Lean/ResolveName.lean): the double must not pick the
    # trusted one and match the statement; the same text without the root `Spec` still matches.
    # `_root_.` (review2): without it the theorem's own namespace `LeanCheckedNetwork.Net` holds
    # `Spec` and wins in Lean (`expandDeclNamespace?`, src/Lean/Elab/Declaration.lean).
    net = "open LeanCheckedNetwork.Net\n\n"
    own = "def Spec : Prop := True\n\n"
    stated = f"theorem _root_.{THEOREM} : Spec := by\n  sorry\n"
    plain = build(tmp_path, "import LeanCheckedNetwork.Weights\n\n" + net + stated, name="plain")
    clash = build(tmp_path, "import LeanCheckedNetwork.Weights\n\n" + own + net + stated, name="clash")
    assert judged(tmp_path, plain, exported(plain))["verdict"] != "statement"
    assert judged(tmp_path, clash, exported(clash))["verdict"] == "statement"


# ---- independent review (review2, 2026-12-04): the lemma check missed forms --------------------


@pytest.mark.parametrize(
    "header",
    [
        "set_option maxHeartbeats 0 in\npartial lemma {row} ",
        "set_option maxHeartbeats 0 in lemma {row} ",
        "set_option maxHeartbeats 0 in\nlemma\t{row} ",
        "set_option maxHeartbeats 0 in\n/-- A row. -/ lemma {row} ",
        "set_option maxHeartbeats 0 in\n  @[simp] protected lemma {row} ",
    ],
)
def test_a_lemma_in_any_form_fails_the_build(tmp_path: Path, header: str) -> None:
    # Core has no `lemma` (lean4 tests/lean/run/lemma.lean defines it first), whatever precedes it.
    # The old line grep missed these forms, and `analyze` no longer records a lemma: the double
    # built the text and a `sorry` in the lemma vanished from the export (accepted, no sorryAx).
    row = row_lemma_name(P, 1)
    written = header.format(row=row)
    text = reference_submission(P).replace(f"set_option maxHeartbeats 0 in\ntheorem {row} ", written)
    assert written in text
    with pytest.raises(AssertionError, match="unexpected identifier; expected command"):
        build(tmp_path, text)


def test_a_declarations_own_namespace_resolves_its_names_first(tmp_path: Path) -> None:
    # `theorem A.B.t : X` is elaborated as `namespace A.B theorem t : X end` (`expandDeclNamespace?`,
    # lean4 src/Lean/Elab/Declaration.lean), and the innermost namespace holding a name wins
    # (`resolveUsingNamespace`, src/Lean/ResolveName.lean). So with the submission's own
    # `LeanCheckedNetwork.Net.LeanCheckedNetwork.Net.Spec`, the theorem's written
    # `LeanCheckedNetwork.Net.Spec` is that one in Lean, not the trusted Spec: a wrong statement.
    # The double resolved it at the root (trusted) and matched.
    own = f"def LeanCheckedNetwork.Net.{SPEC} : Prop := True\n\n"
    stated = f"theorem {THEOREM} : {SPEC} := by\n  sorry\n"
    plain = build(tmp_path, "import LeanCheckedNetwork.Weights\n\n" + stated, name="plain")
    shadowed = build(tmp_path, "import LeanCheckedNetwork.Weights\n\n" + own + stated, name="shadowed")
    assert judged(tmp_path, plain, exported(plain))["verdict"] == "ok"
    assert judged(tmp_path, shadowed, exported(shadowed))["verdict"] == "statement"


def test_both_candidates_of_an_ambiguous_name_are_in_the_closure(tmp_path: Path) -> None:
    # `helper` names the root `helper` and, through `open`, `LeanCheckedNetwork.Net.helper`
    # (`resolveGlobalName`, src/Lean/ResolveName.lean): Lean keeps whichever elaborates (here both
    # do, an ambiguity error). The double dropped both from the closure, so the directive on the
    # root one vanished from the export and it was accepted; now both are in it (stricter).
    helpers = (
        "-- double: judge replay-fail (kernel) boom\ntheorem helper : True := trivial\n\n"
        "theorem LeanCheckedNetwork.Net.helper : True := trivial\n\nopen LeanCheckedNetwork.Net\n\n"
    )
    text = reference_submission(P).replace(f"theorem {THEOREM} ", helpers + f"theorem _root_.{THEOREM} ", 1)
    text = text.replace("  intro a ha\n", "  have _h := helper\n  intro a ha\n", 1)
    assert "have _h" in text and "_root_." in text
    pkg = build(tmp_path, text)
    v = judged(tmp_path, pkg, exported(pkg))
    assert (v["verdict"], v["reason"]) == ("replay", "the kernel rejected the submission: (kernel) boom")
