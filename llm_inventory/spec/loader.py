"""Resolve a MODEL argument to a ModelSpec, offline by default.

MODEL may be a preset name (`llama-3.1-70b`), a YAML model file, a Hugging Face
`config.json`, a folder holding one (its safetensors headers or index are read too), a
Hugging Face cache folder, a GGUF file, or a Hugging Face id (`org/name[@revision]`: a preset
alias, else the local Hub cache, else, with the `hub` extra, the Hub; see spec/hub.py).
Checkpoints are read by their headers only; the readers load on first use, so presets and
YAML files import none of them. The same loader serves every command.
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


def config_name(data: dict[str, Any], path: Path) -> str:
    """A config's model name: its `_name_or_path` (a local path gives its last part), else
    the file's stem, else, for a file called config.json, its folder's name."""
    given = data.get("_name_or_path")
    if isinstance(given, str) and given.strip():
        given = given.strip().rstrip("/")
        local = given.startswith(("/", ".", "~")) or given.count("/") > 1 or "\\" in given
        return given.replace("\\", "/").rsplit("/", 1)[-1] if local else given
    if path.stem != "config":
        return path.stem
    return path.resolve().parent.name or path.stem


def _from_config_file(path: Path, name: str | None = None) -> ModelSpec:
    from llm_inventory.spec.hf import from_hf_config
    from llm_inventory.spec.yaml_io import load_mapping

    data = load_mapping(path)
    return from_hf_config(data, str(path), name or config_name(data, path))


def _from_folder(path: Path, name: str | None = None) -> ModelSpec:
    """A model folder: config.json with its safetensors headers (or index), a Hugging Face
    cache folder (`models--org--name`, resolved to a snapshot), or a folder of one GGUF."""
    from llm_inventory.checkpoint.folder import hub_name, is_hub_cache, resolve_hub_cache

    name = name or hub_name(path)
    if is_hub_cache(path):
        path = resolve_hub_cache(path)
    config = path / "config.json"
    if config.is_file():
        spec = _from_config_file(config, name)
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
    if found.table is None and path.parent.name == "snapshots":
        found = _kept_headers(path, found)
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
    update: dict[str, Any] = {"checkpoint": facts}
    if not spec.exact and spec.estimated:
        # The shapes are guessed, but the weights are what the files hold.
        source = "safetensors headers" if facts.headers_read else "safetensors index"
        estimated = (f"{spec.estimated}; its weights are exact: {facts.total_bytes:,} B read "
                     f"from the checkpoint's {source}")
        update.update(estimated=estimated, notes=[
            estimated if note == spec.estimated else note for note in spec.notes])
    return spec.model_copy(update=update)


def _kept_headers(snapshot: Path, found: Any) -> Any:
    """A Hub snapshot whose shards are absent but whose headers were kept beside it."""
    from llm_inventory.checkpoint.folder import FolderCheckpoint
    from llm_inventory.checkpoint.safetensors import TensorTable
    from llm_inventory.spec.hub import stored_headers

    kept = stored_headers(snapshot)
    if kept is None:
        return found
    tensors, files = kept
    table = TensorTable(files=files, tensors=tensors)
    notes = ["shards not downloaded: their headers, read from the Hub, give the sizes"]
    if found.index_total is not None and found.index_total != table.total_bytes:
        notes.append(f"the index gives total_size {found.index_total:,} B but the headers "
                     f"hold {table.total_bytes:,} B; the headers are used")
    return FolderCheckpoint(table=table, index_total=found.index_total,
                            index_names=found.index_names, files=files, notes=notes)


def _from_gguf(path: Path) -> ModelSpec:
    from llm_inventory.checkpoint.gguf import read_gguf
    from llm_inventory.checkpoint.gguf_spec import spec_from_gguf

    return spec_from_gguf(read_gguf(path))


def _from_hub_id(reference: str, repo: str, revision: str | None) -> ModelSpec:
    """`org/name[@revision]`: a preset alias, else the Hub cache, else the Hub (spec/hub.py)."""
    from llm_inventory.spec.hub import resolve

    if revision is None:
        from llm_inventory.spec.presets import find_preset, load_preset

        try:
            return load_preset(find_preset(repo).name)
        except InputError:
            pass  # not an alias: a Hub id
    try:
        spec: ModelSpec = resolve(reference, repo, revision, _from_folder)
    except InputError as exc:  # offline, or no hub extra: name the presets that read alike
        from llm_inventory.spec.presets import closest

        close = closest(repo)
        if not close:
            raise
        raise InputError(exc.field, f"{exc.message}; a preset reads alike: "
                         f"{', '.join(close)} (a preset plans offline)") from None
    return spec


@reading
def load_model(reference: str) -> ModelSpec:
    """Load MODEL: a preset, a YAML model file, a config.json, a model or Hub cache folder,
    or a GGUF file (any file of a split set). An estimated model is reported first
    (`estimates.report`: a warning, or a refusal under --strict)."""
    spec = _load_model(reference)
    if not spec.exact:
        from llm_inventory.spec import estimates

        estimates.report(spec)
    return spec


def _load_model(reference: str) -> ModelSpec:
    if not reference.strip():
        raise InputError("model", "empty model name")
    path = Path(reference).expanduser()
    looks_like_path = (
        path.suffix in (".yaml", ".yml", ".json", ".gguf", ".safetensors") or "/" in reference
    )
    from llm_inventory.files import exists, is_dir, is_file, too_long

    if too_long(reference):  # as the system would say, in one bounded line
        raise InputError(reference, "cannot be read: File name too long")
    if is_dir(path):  # these never raise: a name no file can have (too long) is not there
        return _from_folder(path)
    # A Hub id is org/name: a name without a slash (a preset) never loads the Hub client.
    if not exists(path) and "/" in reference:
        from llm_inventory.spec.hub import parse_hub_id

        hub = parse_hub_id(reference)
        if hub is not None:
            return _from_hub_id(reference, *hub)
    if is_file(path) or looks_like_path:
        if path.suffix == ".json":
            return _from_config_file(path)
        if path.suffix == ".gguf" and is_file(path):
            return _from_gguf(path)
        if path.suffix == ".safetensors" and is_file(path):
            raise InputError(reference, f"pass the folder that holds it ({path.parent}): its "
                             "config.json gives the shapes and every shard the sizes")
        if path.suffix in (".yaml", ".yml"):
            from llm_inventory.spec.yaml_io import load_mapping

            return spec_from_mapping(load_mapping(path), str(path))
        if not exists(path):
            raise InputError(reference, "no such file or folder")
        raise InputError(reference, "expected a .yaml model file, a config.json, or a folder")
    from llm_inventory.spec.presets import load_preset

    return load_preset(reference)
