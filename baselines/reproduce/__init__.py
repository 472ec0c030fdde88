"""One module per paper that regenerates its figures and tables: ``run(scale, out_dir) -> report path``."""
