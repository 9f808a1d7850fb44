"""schedule="auto" as users meet it (issue 29, section auto): both models' candidates in one front ranked
by one estimate, the front and the choice remembered across processes (and a damaged or foreign store
ignored), and fronts printed as a readable table."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from click.testing import CliRunner

import autosparse as asp
from autosparse.api import auto
from autosparse.autoschedule import JointFront, SparseAutoFront, store, tiebreak
from autosparse.autoschedule import select as selection
from autosparse.autoschedule.select import estimated_work, estimates
from autosparse.cli import main
from autosparse.notation import parse

SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """This process forgets what it decided and stores its decisions apart from other tests', and
    searches stop after two seconds (a frontier of the programs taken is still a frontier of valid
    schedules)."""
    monkeypatch.setattr(store, "cache_dir", lambda: tmp_path)
    monkeypatch.setattr(auto, "_fronts", {})
    monkeypatch.setattr(auto, "_choices", {})
    monkeypatch.setattr(auto, "_trials", {})
    monkeypatch.setattr(auto, "decisions", auto.Decisions())
    monkeypatch.setattr(auto, "SEARCH_SECONDS", 2.0)
    return auto


def _dense(value):
    if isinstance(value, asp.Tensor):
        return value.to_numpy()
    return value.toarray() if sp.issparse(value) else np.asarray(value)


def _tensor3(shape, density, seed, format="sss"):
    rng = np.random.default_rng(seed)
    dense = np.where(rng.random(shape) < density, rng.random(shape), 0.0)
    return asp.Tensor.from_numpy(dense, format=format)


def _random(m, n, density, seed):
    return sp.random(m, n, density, format="csr", random_state=seed)


def _explicit_zero():
    matrix = _random(9, 7, 0.3, 3)
    matrix.data[::2] = 0.0  # stored, but zero
    return matrix


KERNELS = {
    "SpMV2": ("a(i) = B(i,j) * C(j,k) * d(k)", "ijk->i", {"B": "ds", "C": "ds"},
              lambda: {"B": _random(9, 7, 0.3, 1), "C": _random(7, 5, 0.4, 2), "d": np.arange(1.0, 6.0)}),
    "SpGEMM": ("A(i,j) = B(i,k) * C(k,j)", None, {"B": "csr", "C": "csr", "A": "csr"},
               lambda: {"B": _random(8, 6, 0.3, 3), "C": _random(6, 10, 0.3, 4)}),
    "SDDMM": ("A(i,j) = B(i,j) * C(i,k) * D(k,j)", None, {"B": "csr", "A": "csr"},
              lambda: {"B": _random(7, 9, 0.3, 5), "C": np.arange(21.0).reshape(7, 3),
                       "D": np.linspace(0, 1, 27).reshape(3, 9)}),
    "MTTKRP": ("A(i,j) = B(i,k,l) * C(k,j) * D(l,j)", None, {"B": "sss"},
               lambda: {"B": _tensor3((5, 4, 6), 0.3, 6), "C": np.arange(8.0).reshape(4, 2),
                        "D": np.linspace(-1, 1, 12).reshape(6, 2)}),
    "TTMc": ("A(i,j,k) = B(i,l,m) * C(l,j) * D(m,k)", None, {"B": "sss"},
             lambda: {"B": _tensor3((4, 5, 3), 0.4, 7), "C": np.arange(10.0).reshape(5, 2),
                      "D": np.linspace(0, 2, 6).reshape(3, 2)}),
}
SUBSCRIPTS = {"SpMV2": "ij,jk,k->i", "SpGEMM": "ik,kj->ij", "SDDMM": "ij,ik,kj->ij", "MTTKRP": "ikl,kj,lj->ij",
              "TTMc": "ilm,lj,mk->ijk"}


def _evaluated(expression, formats, operands, **options):
    lhs = expression.split("(")[0]
    return _dense(asp.evaluate(expression, format=formats.get(lhs), schedule="auto", **operands, **options))


def _decided(expression, formats, operands):
    """`_evaluated` until no tie is on trial (each contender serves 1 + SAMPLES calls): the choice made
    and stored. Every call's value is checked against the first's."""
    first = _evaluated(expression, formats, operands)
    for _ in range(20):
        if not auto._trials:
            return first
        np.testing.assert_allclose(_evaluated(expression, formats, operands), first)
    pytest.fail("a trial went on for 20 calls")


def _reference(name, operands):
    names = KERNELS[name][0].split("=")[1].replace(" ", "").split("*")
    return np.einsum(SUBSCRIPTS[name], *(_dense(operands[n.split("(")[0]]) for n in names))


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_auto_with_both_models_computes_numpys_values(fresh, name):
    expression, _, formats, make = KERNELS[name]
    operands = make()
    np.testing.assert_allclose(_evaluated(expression, formats, operands), _reference(name, operands), atol=1e-12)
    front = next(iter(fresh._fronts.values()))[0]
    assert isinstance(front, JointFront)
    models = {cand.found_by for cand in front}
    assert models == ({"asymptotic"} if name == "SpGEMM" else {"asymptotic", "sparseauto"})  # SparseAuto
    # keeps no schedule writing a CSR result out of order, so SpGEMM has only asymptotic candidates


def test_auto_on_a_4d_mttkrp(fresh):
    """B stored dsss: the asymptotic frontier was empty here (issue 29); SparseAuto's candidates stand in."""
    rng = np.random.default_rng(8)
    dense = np.where(rng.random((6, 5, 4, 3)) < 0.3, rng.random((6, 5, 4, 3)), 0.0)
    operands = {"B": asp.Tensor.from_numpy(dense, format="dsss"), "C": rng.random((5, 2)), "D": rng.random((4, 2)),
                "E": rng.random((3, 2))}
    got = asp.evaluate("A(i,j) = B(i,k,l,m) * C(k,j) * D(l,j) * E(m,j)", schedule="auto", **operands)
    np.testing.assert_allclose(got, np.einsum("iklm,kj,lj,mj->ij", dense, *(operands[n] for n in "CDE")))
    assert any(cand.found_by == "sparseauto" for cand in next(iter(fresh._fronts.values()))[0])


@pytest.mark.parametrize("case", ["empty", "all-zero", "single-entry", "explicit-zero", "size-1"])
def test_auto_on_edge_operands(fresh, case):
    expression, _, formats, _ = KERNELS["SpMV2"]
    B = {"empty": sp.csr_matrix((0, 7)), "all-zero": sp.csr_matrix((9, 7)),
         "single-entry": sp.csr_matrix(([2.5], ([3], [4])), shape=(9, 7)), "explicit-zero": _explicit_zero(),
         "size-1": sp.csr_matrix(np.array([[1.5]]))}[case]
    C = _random(B.shape[1], 5, 0.4, 2) if case != "size-1" else sp.csr_matrix(np.array([[2.0, 0.0, 3.0]]))
    operands = {"B": B, "C": C, "d": np.arange(1.0, C.shape[1] + 1)}
    np.testing.assert_allclose(_evaluated(expression, formats, operands), _reference("SpMV2", operands))


@pytest.mark.parametrize("model", ["asymptotic", "sparseauto", "auto"])
def test_model_option_forces_one_model_or_consults_both(fresh, model):
    expression, _, formats, make = KERNELS["TTMc"]
    operands = make()
    np.testing.assert_allclose(_evaluated(expression, formats, operands, model=model), _reference("TTMc", operands))
    front = next(iter(fresh._fronts.values()))[0]
    assert {cand.found_by for cand in front} == ({"asymptotic", "sparseauto"} if model == "auto" else {model})


def test_the_joint_pick_has_the_least_estimate_of_both_models(fresh):
    """TTMc: SparseAuto excludes the 3-D temporary by design; the joint front holds both kinds, each
    costed by the one estimate `select` ranks by; the tie-break's first contender is the least of all
    of them, and what `select` keeps is one of the tied contenders."""
    expression, _, formats, make = KERNELS["TTMc"]
    operands = make()
    front = auto.autoschedule(expression, formats, model="auto", time_limit=2.0)
    work = estimates(front, operands)
    assert len(work) == len(front) and all(w > 0 for w in work)
    kinds = {cand.found_by for cand in front}
    assert kinds == {"asymptotic", "sparseauto"}
    ranked = selection.ranking(front, operands)  # the default may have the least estimate
    assert ranked[0][0] == min([*work, estimated_work(front, front.default, operands)])
    assert ranked[0][0] == estimated_work(front, ranked[0][1], operands)
    assert front.select(**operands) in tiebreak.tied(ranked)
    sparseauto = [c for c in front if c.found_by == "sparseauto"]
    assert {str(c.cin) for c in sparseauto} == {str(c.cin) for c in auto.autoschedule(expression, formats,
                                                                                        model="sparseauto")}


def test_a_sum_has_only_asymptotic_candidates(fresh):
    front = auto.autoschedule("a(i) = B(i,j) * c(j) + d(i)", {"B": "csr"}, model="auto")
    assert isinstance(front, JointFront) and {c.found_by for c in front} == {"asymptotic"}


def _run_again(script: str, cache: Path) -> dict:
    """`script` in a fresh Python process on the same cache directory; it prints a JSON object."""
    env = {**os.environ, "AUTOSPARSE_CACHE_DIR": str(cache), "PYTHONPATH": str(SRC)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


SECOND_PROCESS = """
import json, dataclasses, numpy as np, scipy.sparse as sp, autosparse as asp
from autosparse.api import auto
B = sp.random({m}, 7, 0.3, format="csr", random_state=1)
C = sp.random(7, 5, 0.4, format="csr", random_state=2)
d = np.arange(1.0, 6.0)
a = asp.evaluate("a(i) = B(i,j) * C(j,k) * d(k)", B=B, C=C, d=d, schedule="auto")
print(json.dumps({{"equal": bool(np.allclose(a, B.toarray() @ C.toarray() @ d)),
                  **dataclasses.asdict(auto.decisions)}}))
"""


def test_a_second_process_reuses_the_stored_front_and_choice(fresh, tmp_path, monkeypatch):
    monkeypatch.setenv("AUTOSPARSE_CACHE_DIR", str(tmp_path))
    expression, _, formats, make = KERNELS["SpMV2"]
    operands = make()  # B is 9 x 7: size class 16 x 8
    _decided(expression, formats, operands)
    assert (fresh.decisions.searches, fresh.decisions.selections) == (1, 1)
    again = _run_again(SECOND_PROCESS.format(m=9), tmp_path)
    assert again == {"equal": True, "searches": 0, "selections": 0, "stored_fronts": 1, "stored_choices": 1}
    larger = _run_again(SECOND_PROCESS.format(m=40), tmp_path)  # another size class: selected, not searched
    assert larger == {"equal": True, "searches": 0, "selections": 1, "stored_fronts": 1, "stored_choices": 0}


def test_a_stored_front_selects_as_the_searched_one(fresh, tmp_path, monkeypatch):
    """Stored asymptotic candidates are re-derived from their sketches: the same CIN, the same costs."""
    monkeypatch.setenv("AUTOSPARSE_CACHE_DIR", str(tmp_path))
    expression, _, formats, make = KERNELS["SDDMM"]
    operands = make()
    _decided(expression, formats, operands)
    searched, choice = auto.chosen(parse(expression), formats, operands)
    monkeypatch.setattr(auto, "_fronts", {})
    monkeypatch.setattr(auto, "_choices", {})
    stored, again = auto.chosen(parse(expression), formats, operands)
    assert fresh.decisions.stored_fronts == 1 and fresh.decisions.stored_choices == 1
    assert [str(c.cin) for c in stored] == [str(c.cin) for c in searched]
    assert estimates(stored, operands) == estimates(searched, operands)
    assert str(again.cin) == str(choice.cin)
    assert str(stored.select(**operands).cin) == str(searched.select(**operands).cin)


def _stored_files(cache: Path) -> list[Path]:
    return sorted((cache / "autoschedule").glob("*.json"))


@pytest.mark.parametrize("damage", ["garbage", "truncated", "writable by others", "another expression's CIN",
                                    "a sketch node it does not know", "deeply nested"])
def test_a_damaged_or_foreign_store_is_ignored(fresh, tmp_path, monkeypatch, damage):
    monkeypatch.setenv("AUTOSPARSE_CACHE_DIR", str(tmp_path))
    expression, _, formats, make = KERNELS["SpMV2"]
    operands = make()
    _decided(expression, formats, operands)
    files = _stored_files(tmp_path)
    assert len(files) == 2  # the front and the choice
    for path in files:
        text = path.read_text()
        record = json.loads(text)
        if damage == "garbage":
            path.write_bytes(b"\x00\xff not json")
        elif damage == "truncated":
            path.write_text(text[: len(text) // 2])
        elif damage == "writable by others":
            os.chmod(path, 0o666)
        elif damage == "another expression's CIN":
            for cand in record.get("candidates", [record.get("choice")]):
                cand.pop("sketch", None)
                cand.update(cin="∀i ∀j a(i) += B(i,j)", formats={"B": "ds", "a": "d"})
            path.write_text(json.dumps(record))
        elif damage == "a sketch node it does not know":
            for cand in record.get("candidates", [record.get("choice")]):
                cand["sketch"] = ["import", "os"]
            path.write_text(json.dumps(record))
        else:
            field = "candidates" if "candidates" in record else "choice"
            path.write_text(f'{{"key": {json.dumps(record["key"])}, "{field}": {"[" * 100000}{"]" * 100000}}}')
    monkeypatch.setattr(auto, "_fronts", {})
    monkeypatch.setattr(auto, "_choices", {})
    monkeypatch.setattr(auto, "_trials", {})
    monkeypatch.setattr(auto, "decisions", auto.Decisions())
    np.testing.assert_allclose(_evaluated(expression, formats, operands), _reference("SpMV2", operands))
    assert (auto.decisions.searches, auto.decisions.selections, auto.decisions.stored_choices) == (1, 1, 0)


def test_print_front_is_a_table_with_each_candidates_cin():
    front = auto.autoschedule("a(i) = B(i,j) * C(j,k) * d(k)", {"B": "ds", "C": "ds"})
    text = str(front)
    assert "object at 0x" not in text and text.startswith(f"{len(front)} candidates for a(i) = B(i,j) * C(j,k) * d(k)")
    rows = text.split("\n[")[1:]
    assert len(rows) == len(front) == 28
    for number, (cand, row) in enumerate(zip(front, rows)):
        assert row.startswith(f"{number}] asymptotic") and f"cin:        {cand.cin}\n" in row
        assert f"cost:       {cand.cost}\n" in row and row.endswith(f"as it runs: {cand.running_cost}")
        assert all(str(query) in row for query in cand.running_cost.queries)
    assert len(set(rows)) == len(rows)  # candidates that tie in cost still print apart (CIN, transposes)
    assert "transposes: B -> s1s0" in text and "temporaries: w0" in text
    assert str(front) == text  # deterministic


def test_print_sparseauto_and_joint_fronts():
    sparseauto = auto.autoschedule("A(i,l) = B(i,j) * C(j,k) * D(k,l)", {"B": "ds"}, model="sparseauto")
    assert isinstance(sparseauto, SparseAutoFront)
    text = str(sparseauto)
    for cand in sparseauto:
        assert f"cin:        {cand.cin}" in text and f"program:    {cand}" in text
        assert f"time: {cand.cost.time}   memory: {cand.cost.memory}" in text
    joint = auto.autoschedule("A(i,l) = B(i,j) * C(j,k) * D(k,l)", {"B": "ds"}, model="auto")
    assert str(joint).count("] sparseauto") == len(sparseauto)
    assert str(joint).count("] asymptotic") == len(joint) - len(sparseauto)


def test_cli_autoschedule_prints_the_table_for_both_models():
    args = ["autoschedule", "A(i,l) = B(i,j) * C(j,k) * D(k,l)", "-f", "B=ds", "--model", "auto", "--stats",
            "--check"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    front = auto.autoschedule("A(i,l) = B(i,j) * C(j,k) * D(k,l)", {"B": "ds"}, model="auto")
    assert str(front) in result.output
    assert "programs processed:" in result.output and "3 SMT (everywhere)" in result.output
    assert f"compiled and equal to numpy: {len(front)} / {len(front)}" in result.output


def _forgotten(monkeypatch):
    """This process's memory of fronts and choices emptied, as a new process would start (the store kept)."""
    for memo in ("_fronts", "_choices", "_trials"):
        monkeypatch.setattr(auto, memo, {})


@pytest.mark.parametrize("name", ["SpMV2", "SDDMM", "TTMc"])
def test_a_remembered_whole_search_serves_later_processes_and_replaces_a_short_searchs_choices(
        fresh, monkeypatch, name):
    """`autoschedule(..., remember=True)`: the front stored where `schedule="auto"` looks for it (the
    result's format inferred as evaluate infers it), so a later process searches nothing; a choice made
    from the short search it replaced is not served from the new front."""
    expression, _, formats, make = KERNELS[name]
    operands = make()
    monkeypatch.setattr(auto, "SEARCH_SECONDS", 0.05)
    _decided(expression, formats, operands)  # a short search's front, a choice made from it and stored
    assert fresh.decisions.searches == 1
    short = [str(c.cin) for c in next(iter(fresh._fronts.values()))[0]]
    given = {n: f for n, f in formats.items() if n != expression.split("(")[0]}  # the result's inferred
    whole = asp.autoschedule(expression, given, model="auto", remember=True, time_limit=3.0)
    _forgotten(monkeypatch)
    before = fresh.decisions.stored_choices
    np.testing.assert_allclose(_evaluated(expression, formats, operands), _reference(name, operands), atol=1e-12)
    assert fresh.decisions.searches == 1 and fresh.decisions.stored_fronts == 1  # no search: the stored front
    served = next(iter(fresh._fronts.values()))[0]
    assert [str(c.cin) for c in served] == [str(c.cin) for c in whole]
    # the short search's choice is served only where the whole search found the same front (SpMV2's is
    # whole in 0.05 s); TTMc's short front holds fewer candidates
    assert fresh.decisions.stored_choices == before + (short == [str(c.cin) for c in whole])
    assert name != "TTMc" or short != [str(c.cin) for c in whole]
    _decided(expression, formats, operands)
    _forgotten(monkeypatch)
    np.testing.assert_allclose(_evaluated(expression, formats, operands), _reference(name, operands), atol=1e-12)
    assert fresh.decisions.stored_choices == before + 1 + (short == [str(c.cin) for c in whole])


def test_remembering_in_this_process_drops_the_choices_made_from_the_front_it_replaces(fresh, monkeypatch):
    expression, _, formats, make = KERNELS["SDDMM"]
    operands = make()
    monkeypatch.setattr(auto, "SEARCH_SECONDS", 0.05)
    _decided(expression, formats, operands)
    assert fresh._choices
    asp.autoschedule(expression, formats, model="auto", remember=True, time_limit=1.0)
    assert not fresh._choices and not fresh._trials
    np.testing.assert_allclose(_evaluated(expression, formats, operands), _reference("SDDMM", operands), atol=1e-12)
    assert fresh.decisions.searches == 1  # the remembered front, not a new search


@pytest.mark.parametrize("options, message", [({"paper": True}, "paper"), ({"taco": True}, "taco")])
def test_remember_refuses_options_that_search_another_front(fresh, options, message):
    with pytest.raises(asp.AutosparseError, match=message):
        asp.autoschedule("a(i) = B(i,j) * c(j)", {"B": "csr"}, remember=True, **options)


def test_remember_refuses_formats_for_tensors_the_expression_lacks(fresh):
    with pytest.raises(asp.AutosparseError, match=r"\['Z'\]"):
        asp.autoschedule("a(i) = B(i,j) * c(j)", {"B": "csr", "Z": "csr"}, remember=True)


def test_the_cli_remembers_a_whole_search_for_schedule_auto(fresh, monkeypatch):
    expression, _, formats, make = KERNELS["SpMV2"]
    operands = make()
    result = CliRunner().invoke(main, ["autoschedule", expression, "-f", "B=ds", "-f", "C=ds", "--remember"])
    assert result.exit_code == 0, result.output
    assert "remembered for schedule=\"auto\"" in result.output
    _forgotten(monkeypatch)  # a later process
    np.testing.assert_allclose(_evaluated(expression, formats, operands), _reference("SpMV2", operands), atol=1e-12)
    assert fresh.decisions.searches == 0 and fresh.decisions.stored_fronts == 1
    refused = CliRunner().invoke(main, ["autoschedule", expression, "--remember", "--paper"])
    assert refused.exit_code != 0 and "--paper" in refused.output
