"""Request handlers; importing this package registers every API route."""

from .. import api_versions  # noqa: F401
from . import (  # noqa: F401
    alter_configs,
    consumer_group,
    create_partitions,
    create_topics,
    delete_records,
    delete_topics,
    describe_configs,
    fetch,
    find_coordinator,
    groups,
    init_producer_id,
    list_offsets,
    metadata,
    offset_for_leader_epoch,
    offsets,
    produce,
    transactions,
)
