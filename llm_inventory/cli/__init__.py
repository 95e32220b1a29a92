"""The command line: one module per command, each parse → call the engine → render."""
