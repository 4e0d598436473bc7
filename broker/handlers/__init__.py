"""Request handlers, one module per API or family of APIs.

Nothing is imported here: ``broker/registry.py`` imports a handler module when its API is first
requested (``routes.TABLE`` names the module of each API key).
"""
