"""Request handlers; importing this package registers every API route."""

from .. import api_versions  # noqa: F401
from . import metadata  # noqa: F401
