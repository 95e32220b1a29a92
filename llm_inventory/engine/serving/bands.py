"""How far each engine's reserve is trusted: bands measured on start-ups the fit never saw.

An engine's reserve (activation peak, non-torch memory, compute buffers) is an estimate with
constants chosen on real start-ups. Its band is measured, not asserted:
- every start-up record of every era of one reserve model (`ServingEngine.reserve_group`)
  is replayed, and the figure the reserve decides (the KV pool; llama.cpp's compute buffer)
  compared with what the engine printed;
- a record used to choose or tune a rule is in-sample: its error is taken leave-one-out,
  the model's offset refitted on the other in-sample records (the mean of their residuals,
  in bytes) before it is judged; a record no rule was chosen on counts as it is;
- the band is the nearest-rank p90 of those out-of-sample relative errors, quoted with their
  count and the device families, devices, eras and releases the records cover.
Outside that coverage (a device family, an era or a release line — major.minor — with no
record) the band doubles — a convention, not a measurement — and the label says
`extrapolated`. A reserve model with no
out-of-sample error at all (one in-sample record) is an `estimate`, without a band.

The figures below are computed by `tests/reserve_records.py` from the committed records;
`tests/engine/serving/test_reserve_bands.py` fails when they differ, and
`python tools/reserve_bands.py` prints them anew. A new era gets its band by adding its
start-ups to the replay there (and a `reserve_group` if it brings a new reserve model).
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_inventory.engine.trust import Trust, calibrated, estimate
from llm_inventory.spec.devices import Device

#: How much wider the band is outside the coverage (a convention; no record measures it).
WIDEN = 2.0


@dataclass(frozen=True)
class ReserveBand:
    """The out-of-sample error of one reserve model over its start-up records."""

    band: float | None  # nearest-rank p90 relative error (None: no out-of-sample error)
    errors: int  # out-of-sample errors it is the p90 of
    records: int  # start-ups replayed
    in_sample: int  # of them, used to choose or tune a rule
    figure: str  # what the error is measured on
    families: tuple[str, ...]  # device families ("nvidia 9.0"; "nvidia" = any of that vendor)
    devices: tuple[str, ...]  # the devices as the records name them
    eras: tuple[str, ...]  # registry eras (modules) with a record
    releases: tuple[str, ...]  # the releases the records ran

    def coverage(self) -> str:
        return (f"{self.records} start-ups ({self.in_sample} in-sample) on "
                f"{', '.join(self.devices)}; releases {', '.join(self.releases)}")


# Computed by tests/reserve_records.py (see the module rules); do not edit by hand.
BANDS: dict[str, ReserveBand] = {
    'llamacpp': ReserveBand(
        band=0.1267, errors=3, records=3, in_sample=3, figure='compute buffer',
        families=('cpu', 'nvidia'),
        devices=('CPU', 'CUDA GPU'),
        eras=('llamacpp_b5300', 'llamacpp_b5913', 'llamacpp_ik'),
        releases=('b5913–b6239', 'before b5913', 'ik 3760'),
    ),
    'sglang': ReserveBand(
        band=0.0941, errors=3, records=3, in_sample=2, figure='KV pool',
        families=('nvidia 8.9', 'nvidia 9.0'),
        devices=('4 × H100 80GB', '4 × L4', 'H100 80GB'),
        eras=('sglang_gpu', 'sglang_tp'),
        releases=('0.4.4', '0.4.5', '0.4.9'),
    ),
    'trtllm': ReserveBand(
        band=None, errors=0, records=1, in_sample=1, figure='KV pool',
        families=('nvidia 12.0',),
        devices=('RTX 5090',),
        eras=('trtllm_engine_path',),
        releases=('0.19.0',),
    ),
    'vllm': ReserveBand(
        band=0.0027, errors=30, records=30, in_sample=30, figure='KV pool',
        families=('nvidia 9.0',),
        devices=('H100 80GB',),
        eras=('vllm',),
        releases=('0.19.0',),
    ),
    'vllm-graphs': ReserveBand(
        band=0.3709, errors=7, records=7, in_sample=0, figure='KV pool',
        families=('nvidia 12.0', 'nvidia 8.0', 'nvidia 8.9'),
        devices=('A100 80GB PCIe', 'RTX 4070 Laptop', 'RTX 5060 Ti 16GB'),
        eras=('vllm_v29', 'vllm_v30'),
        releases=('0.29.0', '0.30.0', '0.31.0'),
    ),
    'vllm-v0': ReserveBand(
        band=0.1766, errors=6, records=6, in_sample=4, figure='KV pool',
        families=('nvidia 8.0', 'nvidia 8.6', 'nvidia 8.9', 'nvidia 9.0'),
        devices=('8 × A100 40GB', '8 × H200', 'A100 80GB', 'L40 48GB', 'RTX 3090'),
        eras=('vllm_v0',),
        releases=('0.2.4', '0.6', '0.7.1', '0.7.2', '0.7.3'),
    ),
}


def family(device: Device) -> str:
    """A device's family for coverage: vendor and compute capability."""
    vendor = (device.vendor or "unknown").lower()
    return f"{vendor} {device.compute_capability}" if device.compute_capability else vendor


def covers(families: tuple[str, ...], device: Device) -> bool:
    mine = family(device)
    return any(f == mine or f == mine.split(" ")[0] for f in families)


def _line(version: str) -> tuple[int, ...] | None:
    """A dotted release's line (major.minor), None for a build label ("b5913–b6239")."""
    parts = version.strip().lstrip("v").split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts[:2])


def release_covered(releases: tuple[str, ...], version: str) -> bool:
    """Whether a record ran the release line of `version` (major.minor); where the records
    name builds, not dotted releases, the era decides alone."""
    lines = [_line(r) for r in releases]
    wanted = _line(version)
    if wanted is None or any(line is None for line in lines):
        return True
    return wanted in lines


def reserve_trust(engine: object, device: Device) -> Trust:
    """The trust label of `engine`'s reserve on `device` (see the module rules)."""
    from llm_inventory.engine.serving import era_of
    from llm_inventory.engine.serving.base import ServingEngine

    assert isinstance(engine, ServingEngine)
    group = engine.reserve_group or engine.name
    found = BANDS.get(group)
    what = "activation peak and non-torch memory" if found is None else found.figure
    if found is None or found.band is None:
        seen = "" if found is None else f" ({found.coverage()})"
        return estimate(f"{engine.label}'s reserve ({what}): no start-up it was not fitted "
                        f"on measures its error{seen}")
    era = era_of(engine)
    outside = []
    if era not in found.eras:
        outside.append(f"no start-up of {engine.label}'s era")
    elif not release_covered(found.releases, engine.version):
        outside.append(f"no start-up of release {engine.version}")
    if not covers(found.families, device):
        outside.append(f"no start-up on a {family(device)} device like {device.id}")
    band = min(1.0, found.band * WIDEN) if outside else found.band
    basis = (f"{engine.label}'s reserve: the {found.figure} it leaves, leave-one-out error "
             f"over {found.coverage()}")
    if outside:
        basis += f"; extrapolated ({'; '.join(outside)}): the band doubled"
    return calibrated(band, basis, records=found.errors,
                      coverage=(f"{', '.join(found.devices)}; {', '.join(found.releases)}"),
                      extrapolated=bool(outside))
