"""Committed offsets: the manager, the compact store, bulk replay and transactional offsets."""
