"""Real checkpoints as input: safetensors headers, their index, Hub cache folders, GGUF files.

Readers here open files but read only headers (never tensor data) and return pydantic
tables; `llm_inventory.spec.loader` turns them into a ModelSpec with `checkpoint` facts.
Nothing is imported at package import: each reader loads on first use.
"""
