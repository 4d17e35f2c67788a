"""Text editing core: matching old_string safely, diffs, and file round-trips."""
