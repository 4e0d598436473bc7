"""Kafka's StandardAuthorizer decisions over a set of ACLs (StandardAuthorizerData). Pure: the
ACLs are given to it (``broker/security/acl_store.py`` keeps them durable).

For (principal, client address, operation, resource type, resource name):

1. a principal listed in ``super.users`` is allowed everything;
2. the candidate ACLs are those of that resource type with a LITERAL pattern of the exact name
   or ``*``, or a PREFIXED pattern the name starts with;
3. one applies when its principal is the request's or ``User:*``, its host ``*`` or the client's
   address, and its operation the one asked, or ALL; an ALLOW of READ, WRITE, DELETE or ALTER
   also allows DESCRIBE, an ALLOW of ALTER_CONFIGS also DESCRIBE_CONFIGS (never for DENY);
4. any applicable DENY denies, whatever else matches; else any applicable ALLOW allows; else,
   if there is any candidate ACL at all (for anyone), denied; else
   ``allow.everyone.if.no.acl.found`` decides (default false).
"""

from __future__ import annotations

from collections.abc import Iterable

from .acl import (
    SUPPORTED_OPERATIONS,
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclFilter,
    AclOperation,
    PatternType,
    PermissionType,
    ResourceType,
)

_IMPLIES_DESCRIBE = frozenset({AclOperation.DESCRIBE, AclOperation.READ, AclOperation.WRITE,
                               AclOperation.DELETE, AclOperation.ALTER})
_IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS})
_ALLOW, _DENY = PermissionType.ALLOW, PermissionType.DENY


def parse_super_users(value: str) -> frozenset[str]:
    """``super.users``: principals separated by semicolons (a DN contains commas)."""
    return frozenset(item.strip() for item in value.split(";") if item.strip())


def _applies(acl: AclBinding, principal: str, host: str, op: AclOperation) -> bool:
    """StandardAuthorizerData.findResult, but for the resource name (matched by the caller)."""
    if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
        return False
    if acl.host != WILDCARD and acl.host != host:
        return False
    granted = acl.operation
    if granted == AclOperation.ALL or granted == op:
        return True
    if acl.permission == _ALLOW:
        if op == AclOperation.DESCRIBE:
            return granted in _IMPLIES_DESCRIBE
        if op == AclOperation.DESCRIBE_CONFIGS:
            return granted in _IMPLIES_DESCRIBE_CONFIGS
    return False


class StandardAuthorizer:
    """The ACLs indexed by resource type and pattern, and the decisions on them."""

    def __init__(self, super_users: Iterable[str] = (), allow_everyone_if_no_acl: bool = False,
                 acls: Iterable[AclBinding] = ()) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl = allow_everyone_if_no_acl
        self._acls: frozenset[AclBinding] = frozenset()
        # resource type -> pattern name -> ACLs
        self._literal: dict[ResourceType, dict[str, list[AclBinding]]] = {}
        self._prefixed: dict[ResourceType, dict[str, list[AclBinding]]] = {}
        self.replace(acls)

    # The ACLs ------------------------------------------------------------------------------------
    @property
    def acls(self) -> frozenset[AclBinding]:
        return self._acls

    def replace(self, acls: Iterable[AclBinding]) -> None:
        """Take ``acls`` as the whole set (built aside, then swapped in)."""
        acl_set = frozenset(acls)
        literal: dict[ResourceType, dict[str, list[AclBinding]]] = {}
        prefixed: dict[ResourceType, dict[str, list[AclBinding]]] = {}
        for acl in sorted(acl_set):
            index = literal if acl.pattern_type == PatternType.LITERAL else prefixed
            index.setdefault(acl.resource_type, {}).setdefault(acl.name, []).append(acl)
        self._acls, self._literal, self._prefixed = acl_set, literal, prefixed

    def matching(self, acl_filter: AclFilter) -> list[AclBinding]:
        """The ACLs ``acl_filter`` matches, in a stable order."""
        return sorted(acl for acl in self._acls if acl_filter.matches(acl))

    # Decisions -----------------------------------------------------------------------------------
    def _candidates(self, resource_type: ResourceType, name: str) -> Iterable[list[AclBinding]]:
        literal = self._literal.get(resource_type)
        if literal:
            exact = literal.get(name)
            if exact:
                yield exact
            if name != WILDCARD:
                wildcard = literal.get(WILDCARD)
                if wildcard:
                    yield wildcard
        prefixed = self._prefixed.get(resource_type)
        if prefixed:
            if len(prefixed) < len(name):
                for prefix, acls in prefixed.items():
                    if name.startswith(prefix):
                        yield acls
            else:
                for end in range(1, len(name) + 1):
                    found = prefixed.get(name[:end])
                    if found:
                        yield found

    def authorize(self, principal: str, host: str, op: AclOperation,
                  resource_type: ResourceType, name: str) -> bool:
        """Whether ``principal`` connecting from ``host`` (an address, no leading "/") may
        perform ``op`` on the resource ``name`` of ``resource_type``."""
        if principal in self.super_users:
            return True
        found = allowed = False
        for acls in self._candidates(resource_type, name):
            found = True
            for acl in acls:
                if _applies(acl, principal, host, op):
                    if acl.permission == _DENY:
                        return False
                    allowed = True
        if allowed:
            return True
        return False if found else self.allow_everyone_if_no_acl

    def authorize_by_resource_type(self, principal: str, host: str, op: AclOperation,
                                   resource_type: ResourceType) -> bool:
        """Kafka's Authorizer.authorizeByResourceType: whether ``principal`` may perform ``op``
        on some resource of the type (an ALLOW not dominated by a DENY)."""
        # A made-up name, as Kafka: super users and the no-ACL default are decided as for any
        # one resource.
        if self.authorize(principal, host, op, resource_type, "hardcode"):
            return True
        deny_literal: set[str] = set()
        deny_prefixed: set[str] = set()
        allows: list[AclBinding] = []
        for acl in self._acls:
            if acl.resource_type != resource_type:
                continue
            if acl.host != WILDCARD and acl.host != host:
                continue
            if acl.principal != principal and acl.principal != WILDCARD_PRINCIPAL:
                continue
            if acl.operation != op and acl.operation != AclOperation.ALL:
                continue
            if acl.permission == _DENY:
                if acl.pattern_type == PatternType.LITERAL:
                    if acl.name == WILDCARD:
                        return False
                    deny_literal.add(acl.name)
                else:
                    deny_prefixed.add(acl.name)
            elif acl.permission == _ALLOW:
                if acl.pattern_type == PatternType.LITERAL and acl.name == WILDCARD:
                    return True
                allows.append(acl)
        for acl in allows:
            if acl.pattern_type == PatternType.LITERAL and acl.name in deny_literal:
                continue
            if not any(acl.name[:end] in deny_prefixed for end in range(1, len(acl.name) + 1)):
                return True
        return False

    def authorized_operations(self, principal: str, host: str, resource_type: ResourceType,
                              name: str) -> int:
        """The bit field (1 << operation code) of what ``principal`` may do on the resource."""
        bits = 0
        for op in SUPPORTED_OPERATIONS[resource_type]:
            if self.authorize(principal, host, op, resource_type, name):
                bits |= 1 << op
        return bits
