"""Values for shell completion: preset names and aliases, device ids and aliases, dtypes,
serving engines.

Each completer takes what has been typed and returns (value, help) pairs; Click turns them
into bash, zsh and fish completions. A MODEL that is being typed as a path gets nothing
back, so that the shell completes file names instead.
"""

from __future__ import annotations


def _matches(candidates: list[tuple[str, str]], incomplete: str) -> list[tuple[str, str]]:
    wanted = incomplete.lower()
    seen: set[str] = set()
    found = []
    for value, help_text in candidates:
        if value.lower().startswith(wanted) and value not in seen:
            seen.add(value)
            found.append((value, help_text))
    return found


def models(incomplete: str) -> list[tuple[str, str]]:
    """Preset names, then their aliases (Hub ids such as meta-llama/Llama-3.1-8B)."""
    from llm_inventory.spec.presets import presets

    names = [(p.name, p.description) for p in presets()]
    aliases = [(a, f"alias of {p.name}") for p in presets() for a in p.aliases]
    return _matches(names + aliases, incomplete)


def devices(incomplete: str) -> list[tuple[str, str]]:
    """Device ids, then their aliases."""
    from llm_inventory.spec.devices import list_devices

    catalog = list_devices()
    ids = [(d.id, d.name) for d in catalog]
    aliases = [(a, f"alias of {d.id}") for d in catalog for a in d.aliases]
    return _matches(ids + aliases, incomplete)


def dtypes(incomplete: str) -> list[tuple[str, str]]:
    """Every dtype the tool knows, with its width."""
    from llm_inventory.units import DTYPE_BITS

    return _matches([(name, f"{bits} bits") for name, bits in DTYPE_BITS.items()], incomplete)


def engines(incomplete: str) -> list[tuple[str, str]]:
    """Engine names, then NAME@VERSION for the lowest release of each accounting era; after
    a comma (several engines side by side), the next one."""
    from llm_inventory.engine import serving

    done, _, current = incomplete.rpartition(",")
    prefix = f"{done}," if done else ""
    eras = serving.all_eras()
    names = [(name, f"the default {name} era") for name in serving.names()]
    versions = [(f"{e.name}@{e.version}", e.label) for e in eras]
    return [(prefix + value, text) for value, text in _matches(names + versions, current)]


def use_cases(incomplete: str) -> list[tuple[str, str]]:
    """The named workloads of `recommend --use-case`, with their lengths."""
    from llm_inventory.spec.prices import use_cases as named

    return _matches([(name, f"ISL {u.isl:,} · OSL {u.osl:,}") for name, u in named().items()],
                    incomplete)


def objectives(incomplete: str) -> list[tuple[str, str]]:
    """What `recommend --objective` ranks by."""
    from llm_inventory.engine.recommend.models import OBJECTIVES

    return _matches([(key, text.split(";")[-1].strip()) for key, text in OBJECTIVES.items()],
                    incomplete)


def sort_keys(incomplete: str) -> list[tuple[str, str]]:
    """What `placement --sort` orders by."""
    from llm_inventory.engine.placement.models import ORDERS

    return _matches([(key, text.split(";")[-1].strip()) for key, text in ORDERS.items()],
                    incomplete)
