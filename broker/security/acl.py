"""Kafka's ACL model: resource types, pattern types, operations and permissions with their wire
codes, an ACL binding, and the filters of DescribeAcls / DeleteAcls (Kafka's AclBindingFilter:
ResourcePatternFilter + AccessControlEntryFilter). Pure data, no I/O."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class PermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


WILDCARD = "*"  # a LITERAL resource name or an ACL host matching every one
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"  # the only name of the CLUSTER resource

# The operations each resource type supports (Kafka's AclEntry.supportedOperations): the bits of
# an authorized-operations field.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE,
                         AclOperation.DESCRIBE, AclOperation.DELETE, AclOperation.ALTER,
                         AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS),
    ResourceType.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE,
                         AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS),
    ResourceType.CLUSTER: (AclOperation.CREATE, AclOperation.CLUSTER_ACTION,
                           AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,
                           AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER,
                           AclOperation.DESCRIBE),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE),
    ResourceType.DELEGATION_TOKEN: (AclOperation.DESCRIBE,),
    ResourceType.USER: (AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS),
}


def all_operations(resource_type: ResourceType) -> int:
    """The authorized-operations bit field with every supported operation (no authorizer)."""
    return sum(1 << op for op in SUPPORTED_OPERATIONS[resource_type])


def _enum_or_unknown(enum: type[IntEnum], code: int) -> IntEnum:
    try:
        return enum(code)
    except ValueError:
        return enum(0)  # Kafka's fromCode: an undefined byte is UNKNOWN


def resource_type(code: int) -> ResourceType:
    return ResourceType(_enum_or_unknown(ResourceType, code))


def pattern_type(code: int) -> PatternType:
    return PatternType(_enum_or_unknown(PatternType, code))


def operation(code: int) -> AclOperation:
    return AclOperation(_enum_or_unknown(AclOperation, code))


def permission(code: int) -> PermissionType:
    return PermissionType(_enum_or_unknown(PermissionType, code))


@dataclass(frozen=True, slots=True, order=True)
class AclBinding:
    """One ACL: a resource pattern and an access control entry."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: PermissionType

    @property
    def pattern(self) -> tuple[ResourceType, str, PatternType]:
        return self.resource_type, self.name, self.pattern_type

    def pattern_text(self) -> str:
        """Kafka's ResourcePattern.toString (what kafka-acls.sh prints)."""
        return (f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, "
                f"patternType={self.pattern_type.name})")

    def entry_text(self) -> str:
        """Kafka's AccessControlEntry.toString."""
        return (f"(principal={self.principal}, host={self.host}, "
                f"operation={self.operation.name}, permissionType={self.permission.name})")

    def __str__(self) -> str:
        return f"(pattern={self.pattern_text()}, entry={self.entry_text()})"

    def to_json(self) -> dict[str, object]:
        return {"resourceType": self.resource_type.name, "name": self.name,
                "patternType": self.pattern_type.name, "principal": self.principal,
                "host": self.host, "operation": self.operation.name,
                "permissionType": self.permission.name}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> AclBinding:
        return cls(ResourceType[str(data["resourceType"])], str(data["name"]),
                   PatternType[str(data["patternType"])], str(data["principal"]),
                   str(data["host"]), AclOperation[str(data["operation"])],
                   PermissionType[str(data["permissionType"])])


def validation_error(acl: AclBinding) -> str | None:
    """Why Kafka refuses to create ``acl`` (INVALID_REQUEST), or None: AclApis' checks of the
    name, then AclControlManager.validateNewAcl."""
    if acl.resource_type == ResourceType.CLUSTER and acl.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if acl.name == "":
        return "Invalid empty resource name"
    if acl.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resourceType {acl.resource_type.name}"
    if acl.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {acl.pattern_type.name}"
    if acl.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"Invalid operation {acl.operation.name}"
    if acl.permission not in (PermissionType.DENY, PermissionType.ALLOW):
        return f"Invalid permissionType {acl.permission.name}"
    if ":" not in acl.principal:
        return (f"Could not parse principal from `{acl.principal}` (no colon is present "
                "separating the principal type from the principal name)")
    return None


@dataclass(frozen=True, slots=True)
class AclFilter:
    """Kafka's AclBindingFilter: None name/principal/host match any; ANY types match any."""

    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission: PermissionType = PermissionType.ANY

    def unknown_part(self) -> str | None:
        """AclControlManager.validateFilter's complaint about an UNKNOWN code, or None."""
        if self.resource_type == ResourceType.UNKNOWN or self.pattern_type == PatternType.UNKNOWN:
            return "Unknown patternFilter."
        if self.operation == AclOperation.UNKNOWN or self.permission == PermissionType.UNKNOWN:
            return "Unknown entryFilter."
        return None

    def matches_pattern(self, acl: AclBinding) -> bool:
        """ResourcePatternFilter.matches."""
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        wanted = self.pattern_type
        if wanted not in (PatternType.ANY, PatternType.MATCH) and wanted != acl.pattern_type:
            return False
        name = self.name
        if name is None:
            return True
        if wanted == PatternType.ANY or wanted == acl.pattern_type:
            return name == acl.name
        # MATCH: every pattern that applies to a resource called ``name``
        if acl.pattern_type == PatternType.LITERAL:
            return name == acl.name or acl.name == WILDCARD
        return name.startswith(acl.name)

    def matches_entry(self, acl: AclBinding) -> bool:
        """AccessControlEntryFilter.matches."""
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != acl.operation:
            return False
        return self.permission == PermissionType.ANY or self.permission == acl.permission

    def matches(self, acl: AclBinding) -> bool:
        return self.matches_pattern(acl) and self.matches_entry(acl)
