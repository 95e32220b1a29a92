"""Resolve a MODEL argument to a ModelSpec, offline.

MODEL may be a preset name (`llama-3.1-70b`), a YAML model file, a Hugging Face
`config.json`, or a folder holding one. The same loader serves every command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llm_inventory.errors import InputError
from llm_inventory.spec.model import ModelSpec


def spec_from_mapping(data: dict[str, Any], label: str) -> ModelSpec:
    """Validate a model-description mapping (YAML or preset) into a ModelSpec."""
    from pydantic import ValidationError

    from llm_inventory.spec.errors import from_validation

    try:
        return ModelSpec.model_validate(data)
    except ValidationError as exc:
        raise from_validation(exc, label) from exc


def _from_config_file(path: Path, name: str | None = None) -> ModelSpec:
    from llm_inventory.spec.hf import from_hf_config
    from llm_inventory.spec.yaml_io import load_mapping

    data = load_mapping(path)
    return from_hf_config(data, str(path), name or path.parent.name or path.stem)


def _from_folder(path: Path) -> ModelSpec:
    config = path / "config.json"
    if config.is_file():
        return _from_config_file(config, path.name)
    raise InputError(str(path), "folder holds no config.json")


def load_model(reference: str) -> ModelSpec:
    """Load MODEL: a preset, a YAML model file, a config.json, or a folder with one."""
    if not reference.strip():
        raise InputError("model", "empty model name")
    path = Path(reference).expanduser()
    looks_like_path = path.suffix in (".yaml", ".yml", ".json") or "/" in reference
    if path.is_dir():
        return _from_folder(path)
    if path.is_file() or looks_like_path:
        if path.suffix == ".json":
            return _from_config_file(path)
        if path.suffix in (".yaml", ".yml"):
            from llm_inventory.spec.yaml_io import load_mapping

            return spec_from_mapping(load_mapping(path), str(path))
        if not path.exists():
            raise InputError(reference, "no such file or folder")
        raise InputError(reference, "expected a .yaml model file, a config.json, or a folder")
    from llm_inventory.spec.presets import load_preset

    return load_preset(reference)
