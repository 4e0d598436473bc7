"""Shared test setup. The broker fixtures come from the kafkette pytest plugin (broker.testing)."""
