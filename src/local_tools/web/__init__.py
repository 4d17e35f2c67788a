"""Web engines: page conversion and search providers (the network itself is security/net.py)."""
