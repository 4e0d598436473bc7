"""Share groups (KIP-932): membership, epochs and the ``simple`` assignor for group type "share".

A share group's members are assigned partitions that several members may share; the records
themselves are handed out by the broker's share partitions (``kafkette.broker.share``).
"""
