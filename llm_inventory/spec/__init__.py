"""Model descriptions: the pydantic spec, and the loaders that build it from YAML files,
presets, Hugging Face configs and checkpoints."""
