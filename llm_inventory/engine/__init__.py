"""The sizing engine: pure functions from pydantic specs to pydantic results.

Nothing here prints, reads files or imports the command line's libraries.
"""
