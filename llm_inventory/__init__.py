"""llm-inventory: a capacity planner for LLM serving.

The package is a library first: `llm_inventory.engine` holds pure sizing functions that take
pydantic specs and return pydantic results; `llm_inventory.cli` is a thin command line on top.
"""

__version__ = "0.1.0"
