"""Print the reserve bands `llm_inventory/engine/serving/bands.py` ships, computed from the
committed start-up records (dev only; run from the repository root).

    python tools/reserve_bands.py            # the table, record by record
    python tools/reserve_bands.py --literal  # the BANDS literal to paste into bands.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.reserve_records import bands, literal, out_of_sample, points  # noqa: E402


def main() -> None:
    if "--literal" in sys.argv:
        print(literal(bands()))
        return
    groups: dict[str, list] = {}  # type: ignore[type-arg]
    for p in points():
        groups.setdefault(p.group, []).append(p)
    for name, group in groups.items():
        errors = iter(out_of_sample(group))
        inside = sum(p.in_sample for p in group)
        print(f"\n{name}")
        for p in group:
            loo = next(errors) if (not p.in_sample or inside > 1) else None
            said = f"{loo:7.2%}" if loo is not None else "      —"
            print(f"  {p.record[:44]:44} {p.era:19} {p.release:7} {p.device[:24]:24} "
                  f"{'in-sample' if p.in_sample else 'held out ':9} error {p.error:+7.2%} "
                  f"out-of-sample {said}")
        band = bands()[name]
        print(f"  band {band.band!r} over {band.errors} out-of-sample errors")


if __name__ == "__main__":
    main()
