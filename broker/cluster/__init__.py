"""Several nodes in one process (``kafkette serve --nodes N``): which node serves what, the
nodes' lifecycle, and fault injection for testing clients."""
