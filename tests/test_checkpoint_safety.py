"""A run folder is data: resuming a crafted checkpoint runs nothing from it."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from evolve.cli.main import cli
from evolve.model.plan import Plan, Task
from evolve.run import checkpoint
from evolve.run.state_codec import StateError, decode, encode

ROOT = Path(__file__).resolve().parents[1]
REFUND = ROOT / "examples" / "refund.yaml"
ARGS = ["--generations", "2", "--population", "4", "--keep", "2", "--jobs", "1", "--no-report"]


class Payload:
    """Unpickling this creates ``marker``: the classic pickle exploit, made harmless."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def finished_run(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    result = CliRunner().invoke(cli, ["run", str(REFUND), *ARGS, "--out", str(folder)])
    assert result.exit_code == 0, result.output
    return folder


def resume(folder: Path) -> Any:
    return CliRunner().invoke(cli, ["run", str(REFUND), *ARGS, "--resume", str(folder)])


def test_a_pickle_in_the_run_folder_is_never_loaded(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    marker = tmp_path / "pwned"
    (folder / "checkpoint.pkl").write_bytes(pickle.dumps(Payload(marker)))
    result = resume(folder)
    assert result.exit_code == 2
    assert "old pickle format" in result.output and "Traceback" not in result.output
    assert not marker.exists()


@pytest.mark.parametrize("tag", [
    {"$object": "os:system", "fields": {}},
    {"$object": "subprocess:Popen", "fields": {"args": "touch x"}},
    {"$object": "evolve.cli.main:main", "fields": {}},
    {"$object": "builtins:eval", "fields": {}},
    {"$array": "object", "shape": [1], "bytes": ""},
    {"$generator": "os", "state": {}},
    {"$unknown": 1},
])
def test_a_crafted_state_inside_a_real_checkpoint_is_refused(tmp_path: Path, tag: dict[str, Any]) -> None:
    folder = finished_run(tmp_path)
    path = folder / "checkpoint.json"
    blob = json.loads(path.read_text())
    blob["state"]["serial"] = tag
    path.write_text(json.dumps(blob))
    result = resume(folder)
    assert result.exit_code == 2, result.output
    assert "corrupt checkpoint state" in result.output
    assert "Traceback" not in result.output


def test_no_module_is_imported_because_a_checkpoint_names_it() -> None:
    with pytest.raises(StateError, match="unknown class"):
        decode({"$object": "evolve.not_imported_module:Thing", "fields": {}})


def test_a_real_checkpoint_resumes(tmp_path: Path) -> None:
    folder = finished_run(tmp_path)
    before = (folder / "best.json").read_bytes()
    result = resume(folder)
    assert result.exit_code == 0, result.output
    assert (folder / "best.json").read_bytes() == before


@pytest.mark.parametrize("damage", ["empty", "delete", "cut", "edit"])
def test_a_damaged_events_log_is_refused(tmp_path: Path, damage: str) -> None:
    folder = finished_run(tmp_path)
    events = folder / "events.jsonl"
    data = events.read_bytes()
    if damage == "empty":
        events.write_bytes(b"")
    elif damage == "delete":
        events.unlink()
    elif damage == "cut":
        events.write_bytes(data[: len(data) // 3])
    else:
        events.write_bytes(data.replace(b'"generation"', b'"generatioN"', 1))
    result = resume(folder)
    assert result.exit_code == 2, result.output
    assert "events.jsonl" in result.output and "cannot be resumed" in result.output
    assert "Traceback" not in result.output
    if damage != "delete":
        assert b"\x00" not in events.read_bytes()


plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (st.lists(inner, max_size=4) | st.tuples(inner, inner)
                   | st.dictionaries(st.text(max_size=4) | st.integers(), inner, max_size=4)),
    max_leaves=20)


@given(plain)
def test_plain_values_round_trip_exactly(value: Any) -> None:
    out = decode(json.loads(json.dumps(encode(value))))
    assert out == value and type(out) is type(value)


def test_evolve_objects_arrays_and_generators_round_trip() -> None:
    rng = np.random.default_rng(7)
    plan = Plan(tasks=(Task(id="t1", tool="a", inputs={"x": [1, "$y"]}),))
    value: dict[str, Any] = {"plan": plan, "a": np.arange(6, dtype=np.int64).reshape(2, 3), "rng": rng,
             "n": np.int64(3), "keys": {1: "one"}}
    out = decode(json.loads(json.dumps(encode(value))))
    assert out["plan"] == plan and out["keys"] == {1: "one"} and out["n"] == np.int64(3)
    assert np.array_equal(out["a"], value["a"])
    assert out["rng"].integers(1 << 30) == rng.integers(1 << 30)


def test_unknown_types_are_refused_when_writing() -> None:
    with pytest.raises(StateError, match="cannot be checkpointed"):
        encode({"f": lambda: None})


JSON_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=5))
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.one_of(st.text(max_size=4), st.integers(-3, 3)), inner, max_size=4),
    max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES, st.integers(0, 5))
def test_a_checkpoint_made_in_pieces_is_the_text_json_makes_at_once(value: object, depth: int) -> None:
    whole = json.dumps(value, separators=(",", ":"), allow_nan=True)
    assert checkpoint.dumps_in_pieces(value, depth) == whole


def test_a_state_that_cannot_be_checkpointed_is_a_clear_error(tmp_path: Path) -> None:
    """A state with something the codec refuses fails the first checkpoint, which is on disk
    before the search goes on (the error is caught in the chore that encodes it and raised again
    in the search's thread); nothing is written."""
    writer = checkpoint.Writer(tmp_path, {"problem": "x"})
    with pytest.raises(checkpoint.CheckpointError, match="cannot checkpoint the search state"):
        writer.save({"generation": 1, "odd": object()}, 0, "")
    assert not (tmp_path / checkpoint.CHECKPOINT).exists()
    writer.save({"generation": 2, "fine": [1, 2]}, 0, "")  # the writer goes on
    writer.wait()
    assert json.loads((tmp_path / checkpoint.CHECKPOINT).read_text())["generation"] == 2
