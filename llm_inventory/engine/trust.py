"""How each figure was obtained: the trust labels every result carries.

The output contract (one label per field group, `trust` in JSON, a mark per table column):
- `exact`: counted from the model or checkpoint (parameters, bytes, state per token) with
  every input that shapes it understood;
- `engine rule`: the engine's own accounting, cited to its source and replayed on its logs
  (KV pool, blocks, maximum concurrency);
- `calibrated`: a fitted constant (the runtime reserve, the time model) quoted with the band
  it showed on records the fit never saw (`band`), how many (`records`) and the devices and
  releases they cover (`coverage`); outside that coverage `extrapolated` is set and the band
  is widened;
- `calibrated on your log`: a local profile learned from the user's own start-up log;
- `estimate`: a generic rule for what is not modelled (or a constant no unseen record
  measures), saying what was estimated and why;
- `bound`: a physical limit (datasheet peaks at 100 %); no estimate ever beats it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

if TYPE_CHECKING:
    from llm_inventory.spec.model import ModelSpec

TrustKind = Literal["exact", "engine rule", "calibrated", "calibrated on your log", "estimate",
                    "bound"]

CALIBRATED = ("calibrated", "calibrated on your log")

#: The mark a table column carries for each kind.
MARKS: dict[str, str] = {"exact": "", "engine rule": "°", "calibrated": "~",
                         "calibrated on your log": "~", "bound": "^", "estimate": "≈"}


def percent(band: float) -> str:
    """A band as a table shows it: one decimal below 10 %, whole percents above."""
    return f"±{band * 100:.1f}%" if band < 0.095 else f"±{band:.0%}"


class Trust(BaseModel):
    """How one group of figures was obtained."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: TrustKind
    band: float | None = None  # relative error band: p90 on records the fit did not see
    basis: str = ""  # what it was counted, read or fitted from
    records: int | None = None  # how many unseen records (or rows) the band was measured on
    coverage: str = ""  # the devices and releases those records cover
    extrapolated: bool = False  # asked outside that coverage: the band is widened

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """`records`, `coverage` and `extrapolated` belong to calibrated figures alone:
        other labels keep the three keys they always had."""
        data: dict[str, Any] = handler(self)
        if self.kind not in CALIBRATED:
            for key in ("records", "coverage", "extrapolated"):
                data.pop(key, None)
        return data

    def label(self) -> str:
        if self.kind == "calibrated on your log" and self.basis.startswith(self.kind):
            return self.basis.partition(":")[0]  # with the log's file name and date
        if self.kind not in CALIBRATED or self.band is None:
            return self.kind
        kind = f"{self.kind}, extrapolated" if self.extrapolated else self.kind
        count = f", {self.records:,} unseen" if self.records else ""
        return f"{kind} ({percent(self.band)}{count})"


def exact(basis: str = "") -> Trust:
    return Trust(kind="exact", basis=basis)


def counted(spec: ModelSpec, basis: str) -> Trust:
    """`exact` for a modelled architecture; `estimate` for the generic reading of one."""
    if spec.exact:
        return exact(basis)
    return Trust(kind="estimate", basis=spec.estimated or "architecture not modelled")


def counted_state(spec: ModelSpec, basis: str) -> Trust:
    """The state per token and sequence: as `counted`, and an `estimate` where the model's
    state rule is assumed (`ModelSpec.state_estimated`)."""
    if spec.state_estimated:
        return Trust(kind="estimate", basis=spec.state_estimated)
    return counted(spec, basis)


def engine_rule(basis: str = "") -> Trust:
    return Trust(kind="engine rule", basis=basis)


def calibrated(band: float | None, basis: str = "", *, records: int | None = None,
               coverage: str = "", extrapolated: bool = False) -> Trust:
    """A fitted figure with its out-of-sample band; without one it is an `estimate`."""
    if band is None:
        return Trust(kind="estimate", basis=basis)
    return Trust(kind="calibrated", band=band, basis=basis, records=records,
                 coverage=coverage, extrapolated=extrapolated)


def on_your_log(band: float | None, basis: str) -> Trust:
    """A profile learned from the user's own start-up log (file, date in `basis`)."""
    return Trust(kind="calibrated on your log", band=band, basis=basis)


def estimate(basis: str) -> Trust:
    return Trust(kind="estimate", basis=basis)


def bound(basis: str = "") -> Trust:
    return Trust(kind="bound", basis=basis)


def roofline(basis: str = "") -> Trust:
    """The roofline at 100 % of every peak: a `bound`."""
    return bound(basis)
