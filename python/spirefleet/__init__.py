"""spirefleet's Python side: the PyTorch reference model (spirefleet.model)."""
