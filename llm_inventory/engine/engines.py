"""The serving engines and accounting eras modelled, as `inventory engines` lists them:
whatever the registry (`engine/serving/ERAS` and run-time registrations) holds."""

from __future__ import annotations

from pydantic import BaseModel

from llm_inventory.engine.serving import ServingEngine, era_ranges, get


class EngineRule(BaseModel):
    rule: str
    source: str


class EngineEra(BaseModel):
    """One engine in one accounting era."""

    engine: str  # as --engine spells it
    versions: str  # the releases whose accounting it follows
    lowest: str  # the lowest release `--engine NAME@VERSION` maps to it
    below: str | None  # the next era's lowest release (None: the newest)
    version: str  # the release it answers for by default
    label: str
    default: bool  # what `--engine NAME` picks
    summary: str
    programs: list[str]  # command lines `inventory launch` reads for it
    rules: list[EngineRule]
    # a release newer than the newest one modelled: the newest era answers, and says so
    warning: str | None = None


class EngineList(BaseModel):
    schema_version: int = 1
    engines: list[EngineEra]


def _era(engine: ServingEngine, lowest: str, below: str | None, default: bool) -> EngineEra:
    return EngineEra(engine=engine.name, versions=engine.versions, lowest=lowest, below=below,
                     version=engine.version, label=engine.label, default=default,
                     summary=engine.summary,
                     programs=[" ".join(p) for p in engine.programs],
                     rules=[EngineRule(rule=r, source=s) for r, s in engine.rules],
                     warning=engine.release_warning)


def engine_list() -> EngineList:
    """Every era, newest era of each engine first, as the registry orders them."""
    seen: set[str] = set()
    found = []
    for engine, lowest, below in era_ranges():
        found.append(_era(engine, lowest, below, engine.name not in seen))
        seen.add(engine.name)
    return EngineList(engines=found)


def engine_detail(spec: str) -> EngineEra:
    """The era `NAME` or `NAME@VERSION` names (InputError for an unknown one)."""
    engine = get(spec)
    default = get(engine.name)
    for era, lowest, below in era_ranges():
        if era.name == engine.name and era.versions == engine.versions:
            return _era(engine, lowest, below, era is default)
    return _era(engine, engine.version, None, engine is default)
