"""The shell engine: command analysis, processes with bounded output, tree kill.

Knows nothing of the tool contract: takes plain values, raises the project's errors.
"""
