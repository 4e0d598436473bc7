"""PySpark pipeline over kafkette's own logs (optional extra: ``pip install 'kafkette[pipeline]'``).

The broker never imports this package. Entry point: ``kafkette pipeline lag`` (pipeline.cli).
"""
