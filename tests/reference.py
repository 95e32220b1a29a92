"""Reference data shipped with the tests (copies of public figures, never edited).

- data/models: real configs + reference.json, counts computed independently by transformers.
- data/configs, data/engine-logs/configs: more real configs; data/engine-logs/runs.json: what
  vLLM 0.19 allocated at 30 start-ups.
- data/transformers-defaults: each configuration class's own defaults.
- data/oracle-totals.json: totals for the last three, computed by instantiating each config
  with transformers on PyTorch's meta device.
- data/configs-2026, data/configs-2026-more, data/transformers-defaults-2026: this year's
  architectures; data/oracle-2026.json: their figures (tools/reference_counts.py).
- data/configs-2026-reported: a config found only as a report's copy (GLM-4.7-Flash), its
  figures in data/oracle-2026-glm4-moe-lite.json.
- data/configs-2026-checkpoint-code: configs of types transformers has no class for;
  data/checkpoint-code-counts.json: their figures from the checkpoints' own modelling code
  (tools/checkpoint_code_counts.py).
- data/transformers-architectures.json: the model classes transformers 5.23.0 maps to each
  model type (tools/transformers_architectures.py).
- data/spec-snapshots: the ModelSpec the importer built for each config, recorded by
  tests/spec/test_spec_snapshots.py (UPDATE_SPEC_SNAPSHOTS=1), one file per model type.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llm_inventory.spec.model import ModelSpec

DATA = Path(__file__).resolve().parent / "data"
TOOLS = Path(__file__).resolve().parents[1] / "tools"

#: This year's config folders counted some other way than transformers on the meta device.
COUNTED_OTHERWISE_2026 = {
    "configs-2026-checkpoint-code": "the checkpoint's own modelling code "
                                    "(checkpoint-code-counts.json)",
    "configs-2026-checkpoint-listing": "the checkpoint's tensor listing",
}
#: This year's config folders whose every file has transformers' figures in an
#: oracle-2026*.json: each configs-2026* folder (a new reference set is one more folder,
#: found by name) but those counted otherwise, and the class defaults.
ORACLE_FOLDERS_2026 = tuple(sorted(
    p.name for p in DATA.glob("configs-2026*")
    if p.is_dir() and p.name not in COUNTED_OTHERWISE_2026)) + ("transformers-defaults-2026",)
#: The folders whose counts follow the meta-built model, by transformers or by the
#: checkpoint's own code (not a report's copy, whose count is the report's).
MODELLED_FOLDERS_2026 = tuple(f for f in ORACLE_FOLDERS_2026 if f != "configs-2026-reported") \
    + ("configs-2026-checkpoint-code",)


def check_reference_set(entries: list[dict[str, Any]], folder: Path,
                        types: set[str]) -> None:
    """A reference set of this year's figures covers `types`, each entry computed with
    transformers 5.25.0 and torch 2.13.0 without error, and `folder`'s index lists every
    config in it."""
    assert {e["model_type"] for e in entries} == types
    for e in entries:
        assert e["versions"]["transformers"] == "5.25.0", e["file"]
        assert str(e["versions"]["torch"]).startswith("2.13.0"), e["file"]
        assert "error" not in e, e["file"]
    listed = {e["file"] for e in json.loads((folder / "index.json").read_text())}
    assert listed == {p.name for p in folder.glob("*.json")} - {"index.json"}


def check_counts(spec: ModelSpec, entry: dict[str, Any]) -> None:
    """The importer's count of `spec` equals a reference entry's to the parameter (total,
    and active where the entry has it), and is labelled exact."""
    from llm_inventory.engine.params import count_parameters

    params = count_parameters(spec)
    assert params.total == entry["total_params"], entry["file"]
    if entry.get("active_params") is not None:
        assert params.active == entry["active_params"], entry["file"]
    assert spec.exact, spec.estimated


def check_parts(spec: ModelSpec, entry: dict[str, Any]) -> None:
    """`check_counts`, and the input embedding, the output head and the MoE layers as the
    entry has them (for a class whose head `tools/reference_counts.py` finds at the top)."""
    from llm_inventory.engine.params import count_parameters

    check_counts(spec, entry)
    params = count_parameters(spec)
    assert (params.input_embedding, params.lm_head, params.moe_layers) == (
        entry["input_embedding_params"], entry["output_head_params"], entry["moe_layers"])


def load_tool(name: str) -> ModuleType:
    """A dev-only script of tools/ loaded as a module (`name`: its file's stem)."""
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@cache
def reference_models() -> list[dict[str, Any]]:
    return list(json.loads((DATA / "models" / "reference.json").read_text()))


def model_config(name: str) -> dict[str, Any]:
    return dict(json.loads((DATA / "models" / f"{name}.json").read_text()))


@cache
def oracle_totals() -> list[tuple[Path, int]]:
    """(config path, total parameters) for every config with an oracle total."""
    data = json.loads((DATA / "oracle-totals.json").read_text())
    rows = [(DATA / "transformers-defaults" / f"{mt}.json", total)
            for mt, total in data["transformers-defaults"].items()]
    for folder in ("configs", "engine-logs/configs"):
        rows += [(DATA / folder / name, total) for name, total in data[folder].items()]
    return rows


@cache
def engine_runs() -> list[dict[str, Any]]:
    return list(json.loads((DATA / "engine-logs" / "runs.json").read_text()))


def merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """`base` with `patch` merged in: nested mappings merge, other values replace."""
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out
