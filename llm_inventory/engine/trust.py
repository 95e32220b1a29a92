"""How each figure was obtained: the trust labels every result carries.

- `exact`: counted from the model or checkpoint (parameters, bytes, state per token);
- `engine rule`: the engine's own accounting, matched on its logs (KV pool, blocks,
  maximum concurrency);
- `calibrated estimate`: fitted on measurements, with the error band it showed there (the
  runtime reserve, the time model);
- `roofline`: physics only (peak FLOP/s and bandwidth at fixed fractions);
- `calibrated on your log`: an engine's reserve moved by a local profile learned from the
  user's own start-up log (`inventory calibrate`; the basis names the file and date);
- `estimate`: read from the standard config keys of an architecture no importer models
  (the generic estimate): a figure that would be `exact` for a modelled architecture.
JSON carries them per field group (`trust`); tables show a legend and a mark per column.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from llm_inventory.spec.model import ModelSpec

TrustKind = Literal["exact", "engine rule", "calibrated estimate", "roofline", "estimate",
                    "calibrated on your log"]

#: The mark a table column carries for each kind.
MARKS: dict[str, str] = {"exact": "", "engine rule": "°", "calibrated estimate": "~",
                         "roofline": "^", "estimate": "≈", "calibrated on your log": "*"}


class Trust(BaseModel):
    """How one group of figures was obtained."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: TrustKind
    band: float | None = None  # relative error band (p90 on the calibration data)
    basis: str = ""  # what it was counted, read or fitted from

    def label(self) -> str:
        if self.kind == "calibrated on your log" and self.basis.startswith(self.kind):
            return self.basis.partition(":")[0]  # with the log's file name and date
        if self.kind == "calibrated estimate" and self.band is not None:
            return f"calibrated estimate (±{self.band:.0%})"
        return self.kind


def exact(basis: str = "") -> Trust:
    return Trust(kind="exact", basis=basis)


def counted(spec: ModelSpec, basis: str) -> Trust:
    """`exact` for a modelled architecture; `estimate` for the generic reading of one."""
    if spec.exact:
        return exact(basis)
    return Trust(kind="estimate", basis=spec.estimated or "architecture not modelled")


def engine_rule(basis: str = "") -> Trust:
    return Trust(kind="engine rule", basis=basis)


def calibrated(band: float | None, basis: str = "") -> Trust:
    return Trust(kind="calibrated estimate", band=band, basis=basis)


def roofline(basis: str = "") -> Trust:
    return Trust(kind="roofline", basis=basis)
