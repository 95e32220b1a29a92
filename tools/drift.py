"""Drift check before a release: what the field has that the tool does not model.

Dev-only: nothing in the package or its test run depends on it (a fast test checks its pure
helpers on a small fixture). It lists

1. model types in transformers' configuration registry (`CONFIG_MAPPING_NAMES` of
   `transformers/models/auto/configuration_auto.py`) that `llm_inventory.spec.hf.registry`
   has no row for, each tagged with the auto classes that name it (causal LM,
   image-text-to-text, ...) from `modeling_auto.py`, so decoders and multimodal models
   stand out from the rest;
2. architecture classes in vLLM's model registry (the `_..._MODELS` tables of
   `vllm/model_executor/models/registry.py`) that no registry row lists, with the table
   each comes from;
3. engine releases newer than the newest accounting era each engine has
   (`llm_inventory.engine.serving.ERAS`), from a given list or the package index.

Both registries are read as source text with `ast` (no transformers or vLLM import is
needed, so any checkout or installed copy serves):

    # transformers: the installed package (no path), or a checkout / unpacked wheel
    python tools/drift.py --transformers
    python tools/drift.py --transformers ~/src/transformers/src/transformers
    # vLLM: the installed package (no path), a checkout, or its registry.py
    python tools/drift.py --vllm ~/src/vllm
    # releases: a file of "ENGINE VERSION" lines, or ask the package index (pip)
    python tools/drift.py --releases releases.txt
    python tools/drift.py --pypi vllm sglang

Options combine; `--json` prints one JSON document instead of text. The exit code is 0
whatever drift is found (it is a report, not a gate).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

# The auto-class tables of modeling_auto.py whose model types are served as text generators
# (decoders and multimodal models); any other table only tags a type.
GENERATIVE_TABLES = (
    "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
    "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES",
    "MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES",
    "MODEL_FOR_VISION_2_SEQ_MAPPING_NAMES",
    "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
    "MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES",
)
# PyPI names of the engines the package index can be asked about, by ERAS engine name.
PYPI_NAMES = {"vllm": "vllm", "sglang": "sglang", "trtllm": "tensorrt-llm"}
INSTALLED = Path("<installed>")


def _literal_pairs(node: ast.AST) -> dict[str, Any]:
    """The (key, value) pairs of an OrderedDict([...]) / dict literal / {...} of constants."""
    out: dict[str, Any] = {}
    if isinstance(node, ast.Call):
        # OrderedDict([...]), dict({...}), OrderedDict(**{...}, **OTHER): the literal parts
        for part in [*node.args[:1], *(k.value for k in node.keywords if k.arg is None)]:
            out.update(_literal_pairs(part))
        return out
    if isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values, strict=True):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                out[key.value] = _value(value)
    elif isinstance(node, ast.List | ast.Tuple):
        for item in node.elts:
            if isinstance(item, ast.Tuple) and len(item.elts) == 2:
                key = item.elts[0]
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    out[key.value] = _value(item.elts[1])
    return out


def _value(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def module_tables(source: str, names: Iterable[str] | None = None,
                  pattern: str | None = None) -> dict[str, dict[str, Any]]:
    """The module-level literal mappings of a Python source, by variable name: those in
    `names`, or whose name matches `pattern`."""
    wanted = set(names or ())
    regex = re.compile(pattern) if pattern else None
    found: dict[str, dict[str, Any]] = {}
    for stmt in ast.parse(source).body:
        update = _update_call(stmt)
        if update is not None:
            name, value = update
            if name in wanted or (regex is not None and regex.fullmatch(name)):
                found.setdefault(name, {}).update(_literal_pairs(value))
            continue
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        else:
            continue
        for target in targets:
            if not isinstance(target, ast.Name):
                continue
            if target.id in wanted or (regex is not None and regex.fullmatch(target.id)):
                found.setdefault(target.id, {}).update(_literal_pairs(value))
    return found


def _update_call(stmt: ast.stmt) -> tuple[str, ast.AST] | None:
    """`NAME.update({...})` at module level: (NAME, the literal)."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return None
    func = stmt.value.func
    if (isinstance(func, ast.Attribute) and func.attr == "update"
            and isinstance(func.value, ast.Name) and stmt.value.args):
        return func.value.id, stmt.value.args[0]
    return None


def transformers_types(*sources: str) -> list[str]:
    """Model types of `CONFIG_MAPPING_NAMES` in the sources that build it
    (configuration_auto.py; from 5.25 also auto_mappings.py, which it imports and extends)."""
    types: set[str] = set()
    for source in sources:
        types |= set(module_tables(source, ["CONFIG_MAPPING_NAMES"]).get(
            "CONFIG_MAPPING_NAMES", {}))
    return sorted(types)


def auto_tables(modeling_auto: str) -> dict[str, list[str]]:
    """model type -> the `MODEL_FOR_*_MAPPING_NAMES` tables of modeling_auto.py naming it."""
    tags: dict[str, list[str]] = {}
    for table, pairs in module_tables(modeling_auto, pattern=r"MODEL_.*MAPPING_NAMES").items():
        for model_type in pairs:
            tags.setdefault(model_type, []).append(table)
    return {k: sorted(v) for k, v in tags.items()}


def vllm_architectures(registry_source: str) -> dict[str, str]:
    """architecture class -> vLLM registry table (`_TEXT_GENERATION_MODELS`, ...)."""
    found: dict[str, str] = {}
    for table, pairs in module_tables(registry_source, pattern=r"_[A-Z0-9_]*MODELS").items():
        for arch in pairs:
            found.setdefault(arch, table)
    return found


def missing_types(types: Iterable[str], known: Iterable[str],
                  tags: Mapping[str, list[str]]) -> list[dict[str, Any]]:
    """Types the registry lacks, generative ones (GENERATIVE_TABLES) first."""
    have = set(known)
    rows = [{"model_type": t, "tables": list(tags.get(t, [])),
             "generative": any(x in GENERATIVE_TABLES for x in tags.get(t, []))}
            for t in sorted(set(types) - have)]
    return sorted(rows, key=lambda r: (not r["generative"], r["model_type"]))


def missing_architectures(archs: Mapping[str, str],
                          known: Iterable[str]) -> list[dict[str, str]]:
    have = set(known)
    return [{"architecture": a, "table": t} for a, t in sorted(archs.items()) if a not in have]


def version_key(version: str) -> tuple[int, ...]:
    """Numeric key of a release: "0.30.1" -> (0, 30, 1); "b8123" -> (8123,); pre-release and
    local suffixes are dropped ("0.31.0rc1" -> (0, 31, 0))."""
    version = version.strip().lstrip("vb")
    parts = []
    for piece in version.split("."):
        match = re.match(r"\d+", piece)
        if match is None:
            break
        parts.append(int(match.group()))
        if match.end() != len(piece):
            break
    return tuple(parts)


def newest_eras(eras: Iterable[tuple[str, str, str]]) -> dict[str, str]:
    """engine -> the lowest release of its newest era."""
    newest: dict[str, str] = {}
    for engine, low, _ in eras:
        if engine not in newest or version_key(low) > version_key(newest[engine]):
            newest[engine] = low
    return newest


def newer_releases(releases: Iterable[tuple[str, str]],
                   newest: Mapping[str, str]) -> list[dict[str, str]]:
    """Releases above the newest era's lowest release that are not that release itself:
    a candidate for a new era once its source has been read (the newest era answers them
    now, with a warning). Only final releases (no rc, dev or post suffix) are listed."""
    out = []
    for engine, version in releases:
        low = newest.get(engine)
        if low is None or not re.fullmatch(r"[vb]?\d+(\.\d+)*", version.strip()):
            continue
        if version_key(version) > version_key(low):
            out.append({"engine": engine, "release": version.strip(), "newest_era": low})
    return sorted(out, key=lambda r: (r["engine"], version_key(r["release"])))


def parse_release_lines(text: str) -> list[tuple[str, str]]:
    """"ENGINE VERSION" per line (`#` comments and blank lines skipped)."""
    found = []
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            engine, _, version = line.partition(" ")
            found.append((engine.strip(), version.strip()))
    return found


def pip_versions(package: str) -> list[str]:
    """Releases the package index lists, through pip's own client (`pip index versions`)."""
    run = subprocess.run([sys.executable, "-m", "pip", "index", "versions", package],
                         capture_output=True, text=True, timeout=120, check=False)
    match = re.search(r"Available versions:\s*(.+)", run.stdout)
    return [v.strip() for v in match.group(1).split(",")] if match else []


def _registry() -> tuple[list[str], list[str], list[tuple[str, str, str]]]:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from llm_inventory.engine.serving import ERAS
    from llm_inventory.spec.hf.registry import MODELS

    archs = [a for _, _, classes in MODELS.values() for a in classes]
    return sorted(MODELS), archs, list(ERAS)


def _installed(package: str) -> Path:
    """The folder of an installed package, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{package} is not installed here: give its folder")
    return Path(next(iter(spec.submodule_search_locations)))


def _transformers_root(path: Path) -> Path:
    if path == INSTALLED:
        path = _installed("transformers")
    for candidate in (path, path / "transformers", path / "src" / "transformers"):
        if (candidate / "models" / "auto" / "configuration_auto.py").is_file():
            return candidate
    raise SystemExit(f"--transformers: no models/auto/configuration_auto.py under {path}")


def _vllm_registry(path: Path) -> Path:
    if path == INSTALLED:
        path = _installed("vllm")
    if path.is_file():
        return path
    for candidate in (path, path / "vllm"):
        found = candidate / "model_executor" / "models" / "registry.py"
        if found.is_file():
            return found
    raise SystemExit(f"--vllm: no vllm/model_executor/models/registry.py under {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transformers", type=Path, nargs="?", const=INSTALLED,
                        help="transformers package folder (no value: the installed one)")
    parser.add_argument("--vllm", type=Path, nargs="?", const=INSTALLED,
                        help="vLLM checkout, package or registry.py (no value: installed)")
    parser.add_argument("--releases", type=Path, help='file of "ENGINE VERSION" lines')
    parser.add_argument("--pypi", nargs="*", choices=sorted(PYPI_NAMES),
                        help="ask the package index for these engines' releases")
    parser.add_argument("--all", action="store_true",
                        help="list non-generative transformers types too")
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    types, archs, eras = _registry()
    report: dict[str, Any] = {}
    if args.transformers:
        root = _transformers_root(args.transformers)
        auto = root / "models" / "auto"
        hf = transformers_types(*(p.read_text() for p in (
            auto / "auto_mappings.py", auto / "configuration_auto.py") if p.is_file()))
        tags = auto_tables((root / "models/auto/modeling_auto.py").read_text())
        rows = missing_types(hf, types, tags)
        report["transformers"] = {"path": str(root), "types": len(hf),
                                  "missing": [r for r in rows if args.all or r["generative"]]}
    if args.vllm:
        registry = _vllm_registry(args.vllm)
        found = vllm_architectures(registry.read_text())
        report["vllm"] = {"path": str(registry), "architectures": len(found),
                          "missing": missing_architectures(found, archs)}
    releases: list[tuple[str, str]] = []
    if args.releases:
        releases += parse_release_lines(args.releases.read_text())
    for engine in args.pypi or []:
        releases += [(engine, v) for v in pip_versions(PYPI_NAMES[engine])]
    if args.releases or args.pypi:
        newest = newest_eras(eras)
        report["releases"] = {"newest_eras": newest,
                              "newer": newer_releases(releases, newest)}
    if not report:
        parser.error("give at least one of --transformers, --vllm, --releases, --pypi")
    if args.json:
        print(json.dumps(report, indent=1, sort_keys=True))
        return 0
    if "transformers" in report:
        t = report["transformers"]
        print(f"transformers ({t['types']} types at {t['path']}): "
              f"{len(t['missing'])} the registry lacks")
        for row in t["missing"]:
            tables = ", ".join(x.removeprefix("MODEL_FOR_").removesuffix("_MAPPING_NAMES")
                               for x in row["tables"]) or "no auto model class"
            print(f"  {row['model_type']:<32} {tables}")
    if "vllm" in report:
        v = report["vllm"]
        print(f"vLLM ({v['architectures']} architectures at {v['path']}): "
              f"{len(v['missing'])} no registry row lists")
        for row in v["missing"]:
            print(f"  {row['architecture']:<48} {row['table']}")
    if "releases" in report:
        r = report["releases"]
        print("newest era per engine: " + ", ".join(
            f"{k} {v}" for k, v in sorted(r["newest_eras"].items())))
        for row in r["newer"]:
            print(f"  {row['engine']} {row['release']} is newer than its newest era "
                  f"({row['newest_era']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
