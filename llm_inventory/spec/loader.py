"""Resolve a MODEL argument to a ModelSpec, offline.

MODEL may be a preset name (`llama-3.1-70b`), a YAML model file, a Hugging Face
`config.json`, a folder holding one (its safetensors headers or index are read too), a
Hugging Face cache folder, or a GGUF file. Checkpoints are read by their headers only; the
readers load on first use, so presets and YAML files import none of them. The same loader
serves every command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llm_inventory.errors import InputError
from llm_inventory.spec.model import ModelSpec
from llm_inventory.spec.yaml_io import reading


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
    """A model folder: config.json with its safetensors headers (or index), a Hugging Face
    cache folder (`models--org--name`, resolved to a snapshot), or a folder of one GGUF."""
    from llm_inventory.checkpoint.folder import hub_name, is_hub_cache, resolve_hub_cache

    name = hub_name(path)
    if is_hub_cache(path):
        path = resolve_hub_cache(path)
    config = path / "config.json"
    if config.is_file():
        spec = _from_config_file(config, name or path.name)
        return _with_safetensors(spec, path)
    ggufs = _gguf_models(path)
    if len(ggufs) == 1:
        return _from_gguf(ggufs[0])
    if ggufs:
        raise InputError(str(path), "holds several GGUF models ("
                         + ", ".join(p.name for p in ggufs) + "); pass one file")
    if any(path.glob("*.safetensors")) or (path / "model.safetensors.index.json").is_file():
        raise InputError(str(path), "holds safetensors but no config.json: the shapes a plan "
                         "needs come from config.json")
    raise InputError(str(path), "folder holds no config.json")


def _gguf_models(path: Path) -> list[Path]:
    """One file per GGUF model in a folder: a split set counts once, projectors not at all."""
    import re

    found = []
    for file in sorted(path.glob("*.gguf")):
        split = re.match(r"^.+-(\d{5})-of-\d{5}\.gguf$", file.name)
        if (split and split.group(1) != "00001") or file.name.startswith("mmproj"):
            continue
        found.append(file)
    return found


def _with_safetensors(spec: ModelSpec, path: Path) -> ModelSpec:
    """Attach what the folder's safetensors headers (or index) say to the config's spec."""
    from llm_inventory.checkpoint.classify import build_facts
    from llm_inventory.checkpoint.folder import read_folder

    found = read_folder(path)
    if not found.found:
        if found.notes:
            return spec.model_copy(update={"notes": spec.notes + found.notes})
        return spec
    layers = spec.decoder.layers if spec.decoder is not None else None
    if found.table is not None:
        tensors = found.table.tensors
        total = found.table.total_bytes
        metadata = found.table.metadata
    else:
        tensors = found.index_tensors()
        total = found.index_total or 0
        metadata = {}
    facts = build_facts(
        fmt="safetensors",
        path=str(path),
        files=found.files,
        tensors=tensors,
        headers_read=found.table is not None,
        total_bytes=total,
        stack_layers=layers,
        metadata=metadata,
        notes=found.notes,
    )
    return spec.model_copy(update={"checkpoint": facts})


def _from_gguf(path: Path) -> ModelSpec:
    from llm_inventory.checkpoint.gguf import read_gguf
    from llm_inventory.checkpoint.gguf_spec import spec_from_gguf

    return spec_from_gguf(read_gguf(path))


@reading
def load_model(reference: str) -> ModelSpec:
    """Load MODEL: a preset, a YAML model file, a config.json, a model or Hub cache folder,
    or a GGUF file (any file of a split set)."""
    if not reference.strip():
        raise InputError("model", "empty model name")
    path = Path(reference).expanduser()
    looks_like_path = (
        path.suffix in (".yaml", ".yml", ".json", ".gguf", ".safetensors") or "/" in reference
    )
    if path.is_dir():
        return _from_folder(path)
    if path.is_file() or looks_like_path:
        if path.suffix == ".json":
            return _from_config_file(path)
        if path.suffix == ".gguf" and path.is_file():
            return _from_gguf(path)
        if path.suffix == ".safetensors" and path.is_file():
            raise InputError(reference, f"pass the folder that holds it ({path.parent}): its "
                             "config.json gives the shapes and every shard the sizes")
        if path.suffix in (".yaml", ".yml"):
            from llm_inventory.spec.yaml_io import load_mapping

            return spec_from_mapping(load_mapping(path), str(path))
        if not path.exists():
            raise InputError(reference, "no such file or folder")
        raise InputError(reference, "expected a .yaml model file, a config.json, or a folder")
    from llm_inventory.spec.presets import load_preset

    return load_preset(reference)
