"""`python -m llm_inventory` runs the command line."""

from llm_inventory.cli.app import main

if __name__ == "__main__":
    raise SystemExit(main())
