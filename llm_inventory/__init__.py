"""llm-inventory: a capacity planner for LLM serving.

The package is a library first. Its public API is what `__all__` names: load a model
(`load_model`, `resolve_device`), inventory it (`build_inventory`), size its persistent state
(`state_layers`, `size_state`), place it on devices (`plan_placement`) and pick the plan for
a workload (`recommend`), each with its request and result types; every result is a
pydantic model in base units. Names load on first use, so `import llm_inventory` costs
nothing. `llm_inventory.cli` is a thin command line on top.

    from llm_inventory import InventoryRequest, build_inventory, load_model

    inventory = build_inventory(load_model("llama-3.1-70b"), InventoryRequest(context=8000))
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name → the module that defines it.
_PUBLIC = {
    "load_model": "llm_inventory.spec.loader",
    "ModelSpec": "llm_inventory.spec.model",
    "Device": "llm_inventory.spec.devices",
    "resolve_device": "llm_inventory.spec.devices",
    "build_inventory": "llm_inventory.engine.inventory",
    "InventoryRequest": "llm_inventory.engine.inventory",
    "Inventory": "llm_inventory.engine.inventory",
    "count_parameters": "llm_inventory.engine.params",
    "ParameterCount": "llm_inventory.engine.params",
    "state_layers": "llm_inventory.engine.model_state",
    "size_state": "llm_inventory.engine.state",
    "StateLayer": "llm_inventory.engine.state",
    "StateRequest": "llm_inventory.engine.state",
    "StateResult": "llm_inventory.engine.state",
    "plan_placement": "llm_inventory.engine.placement",
    "PlacementRequest": "llm_inventory.engine.placement",
    "PlacementResult": "llm_inventory.engine.placement",
    "Plan": "llm_inventory.engine.placement",
    "recommend": "llm_inventory.engine.recommend",
    "RecommendRequest": "llm_inventory.engine.recommend",
    "RecommendResult": "llm_inventory.engine.recommend",
    "Workload": "llm_inventory.engine.recommend",
    "Targets": "llm_inventory.engine.recommend",
    "InventoryError": "llm_inventory.errors",
    "InputError": "llm_inventory.errors",
    "CheckFailed": "llm_inventory.errors",
}

__all__ = [
    "CheckFailed", "Device", "InputError", "Inventory", "InventoryError", "InventoryRequest",
    "ModelSpec", "ParameterCount", "PlacementRequest", "PlacementResult", "Plan",
    "RecommendRequest", "RecommendResult", "StateLayer", "StateRequest", "StateResult",
    "Targets", "Workload", "__version__", "build_inventory", "count_parameters",
    "load_model", "plan_placement", "recommend", "resolve_device", "size_state",
    "state_layers",
]

if TYPE_CHECKING:
    from llm_inventory.engine.inventory import Inventory, InventoryRequest, build_inventory
    from llm_inventory.engine.model_state import state_layers
    from llm_inventory.engine.params import ParameterCount, count_parameters
    from llm_inventory.engine.placement import (
        PlacementRequest,
        PlacementResult,
        Plan,
        plan_placement,
    )
    from llm_inventory.engine.recommend import (
        RecommendRequest,
        RecommendResult,
        Targets,
        Workload,
        recommend,
    )
    from llm_inventory.engine.state import StateLayer, StateRequest, StateResult, size_state
    from llm_inventory.errors import CheckFailed, InputError, InventoryError
    from llm_inventory.spec.devices import Device, resolve_device
    from llm_inventory.spec.loader import load_model
    from llm_inventory.spec.model import ModelSpec


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'llm_inventory' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
