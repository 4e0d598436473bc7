"""Classic groups: the group state machine, JoinGroup/SyncGroup and the group manager."""
