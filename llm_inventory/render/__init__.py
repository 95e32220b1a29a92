"""Rendering: engine results to tables (Rich), JSON and YAML. Only the CLI calls in here."""
