"""Request handlers; importing this package registers every API route."""

from .. import api_versions  # noqa: F401
from . import metadata  # noqa: F401
from . import find_coordinator, groups, offsets  # noqa: F401
from . import alter_configs, create_partitions, create_topics, delete_records  # noqa: F401
from . import delete_topics, describe_configs  # noqa: F401
from . import fetch, init_producer_id, list_offsets, offset_for_leader_epoch, produce  # noqa: F401
