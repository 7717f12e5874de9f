"""Reports read the analysis result (plain data) and never recompute statistics."""
