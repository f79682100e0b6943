"""Campaign reports: the paper's data-quality and loop measures over the lake, with plots."""
