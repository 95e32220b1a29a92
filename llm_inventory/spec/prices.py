"""Price catalog and use-case presets: the package data `recommend` reads.

`data/prices.yaml` holds dated, sourced rental prices per GPU-hour (see its header);
`--prices FILE` adds or replaces entries. `data/usecases.yaml` holds the named workloads.
Both are read on first use and cached.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from llm_inventory.errors import InputError

# $ per GPU-hour: 80,000x the dearest listed rental (about $12), so that a month of a fleet stays
# a finite float (1e308 once printed "Infinity" in JSON).
MAX_PRICE = 1e6


class Price(BaseModel):
    """One provider's rate for one device, per GPU-hour (at most MAX_PRICE)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    device: str = Field(min_length=1)
    provider: str = Field(min_length=1)
    offer: str = ""
    on_demand: float = Field(gt=0, le=MAX_PRICE, allow_inf_nan=False)
    spot: float | None = Field(default=None, gt=0, le=MAX_PRICE, allow_inf_nan=False)
    as_of: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")
    source: str = Field(min_length=1)


class PriceCatalog(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[1] = 1
    currency: str = "USD"
    prices: list[Price] = Field(default_factory=list)

    def merged(self, extra: PriceCatalog) -> PriceCatalog:
        """This catalog with `extra`'s entries replacing those of the same device and
        provider."""
        keys = {(p.device, p.provider) for p in extra.prices}
        kept = [p for p in self.prices if (p.device, p.provider) not in keys]
        return self.model_copy(update={"prices": kept + list(extra.prices)})


class UseCase(BaseModel):
    """A named workload: lengths, latency targets (seconds) and their percentile."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    isl: int = Field(ge=1)
    osl: int = Field(ge=1)
    ttft_s: float | None = Field(default=None, gt=0)
    tpot_s: float | None = Field(default=None, gt=0)
    e2e_s: float | None = Field(default=None, gt=0)
    percentile: Literal["p50", "p95"] = "p50"


def _read(resource: str) -> Any:
    from importlib.resources import files

    from llm_inventory.spec.yaml_io import parse_yaml

    text = files("llm_inventory").joinpath("data", resource).read_text("utf-8")
    return parse_yaml(text, f"llm_inventory/data/{resource}")


@functools.cache
def price_catalog() -> PriceCatalog:
    """The packaged price catalog."""
    return PriceCatalog.model_validate(_read("prices.yaml"))


def load_prices(path: Path | str) -> PriceCatalog:
    """A user price file (the catalog's schema), as InputError naming the field on error."""
    from llm_inventory.spec.errors import from_validation
    from llm_inventory.spec.yaml_io import parse_json, parse_yaml, read_text

    path = Path(path)
    text = read_text(path)
    data = parse_json(text, str(path)) if path.suffix.lower() == ".json" \
        else parse_yaml(text, str(path))
    if isinstance(data, list):
        data = {"prices": data}
    try:
        return PriceCatalog.model_validate(data)
    except ValidationError as exc:
        raise from_validation(exc, str(path)) from exc


@functools.cache
def use_cases() -> dict[str, UseCase]:
    """The named workloads, by name."""
    data = _read("usecases.yaml")
    return {name: UseCase.model_validate(body) for name, body in data["usecases"].items()}


def use_case(name: str) -> UseCase:
    found = use_cases().get(name.strip().lower())
    if found is None:
        raise InputError("use_case", f"unknown use case {name!r}; known: "
                         + ", ".join(use_cases()))
    return found
