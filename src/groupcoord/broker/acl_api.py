"""CreateAcls (key 30), DescribeAcls (29) and DeleteAcls (31), against ``broker.authorizer``'s
store, as Kafka's ``AclApis`` / ``AclControlManager`` answer them: SECURITY_DISABLED without an
authorizer; an invalid binding INVALID_REQUEST with Kafka's message; bindings persisted at once.
(Who may call them, CLUSTER ALTER / DESCRIBE, is checked in front: ``broker.authz``.)"""

from __future__ import annotations

import itertools
from typing import Any

from groupcoord.broker.acl import AclBinding, AclFilter
from groupcoord.broker.state import Broker
from groupcoord.errors import ErrorCode
from groupcoord.handling import RequestContext
from groupcoord.protocol.entities import NO_THROTTLE, child, err, make

__all__ = ["create_acls", "delete_acls", "describe_acls"]

_DISABLED = "No Authorizer is configured on the broker"


def _resp_t(broker: Broker, ctx: RequestContext) -> type[Any]:
    return broker.registry.lookup(ctx.api_key, ctx.api_version).response_type


def _filter(f: Any) -> AclFilter:
    return AclFilter(
        resource_type=int(f.resource_type_filter),
        resource_name=f.resource_name_filter,
        pattern_type=int(f.pattern_type_filter),
        principal=f.principal_filter,
        host=f.host_filter,
        operation=int(f.operation),
        permission=int(f.permission_type),
    )


def create_acls(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    resp_t = _resp_t(broker, ctx)
    result_t = child(resp_t, "results")
    results = []
    new: list[AclBinding] = []
    for c in request.creations:
        if not broker.authorizer.enabled:
            results.append(
                make(result_t, error_code=err(ErrorCode.SECURITY_DISABLED), error_message=_DISABLED)
            )
            continue
        binding = AclBinding(
            resource_type=int(c.resource_type),
            resource_name=str(c.resource_name),
            pattern_type=int(c.resource_pattern_type),
            principal=str(c.principal),
            host=str(c.host),
            operation=int(c.operation),
            permission=int(c.permission_type),
        )
        problem = binding.validate()
        if problem is not None:
            results.append(make(result_t, error_code=err(ErrorCode.INVALID_REQUEST), error_message=problem))
            continue
        new.append(binding)
        results.append(make(result_t, error_code=err(ErrorCode.NONE), error_message=None))
    if new:
        broker.authorizer.store.add(new)
    return make(resp_t, throttle_time=NO_THROTTLE, results=tuple(results))


def describe_acls(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    resp_t = _resp_t(broker, ctx)
    if not broker.authorizer.enabled:
        return make(
            resp_t,
            throttle_time=NO_THROTTLE,
            error_code=err(ErrorCode.SECURITY_DISABLED),
            error_message=_DISABLED,
            resources=(),
        )
    resource_t = child(resp_t, "resources")
    acl_t = child(resource_t, "acls")
    found = broker.authorizer.store.matching(_filter(request))
    resources = []
    for (rtype, name, pattern), group in itertools.groupby(
        found, key=lambda b: (b.resource_type, b.resource_name, b.pattern_type)
    ):
        acls = tuple(
            make(
                acl_t, principal=b.principal, host=b.host, operation=b.operation, permission_type=b.permission
            )
            for b in group
        )
        resources.append(
            make(resource_t, resource_type=rtype, resource_name=name, pattern_type=pattern, acls=acls)
        )
    return make(
        resp_t,
        throttle_time=NO_THROTTLE,
        error_code=err(ErrorCode.NONE),
        error_message=None,
        resources=tuple(resources),
    )


def delete_acls(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    resp_t = _resp_t(broker, ctx)
    result_t = child(resp_t, "filter_results")
    match_t = child(result_t, "matching_acls")
    results = []
    gone: set[AclBinding] = set()
    for f in request.filters:
        if not broker.authorizer.enabled:
            results.append(
                make(
                    result_t,
                    error_code=err(ErrorCode.SECURITY_DISABLED),
                    error_message=_DISABLED,
                    matching_acls=(),
                )
            )
            continue
        matched = broker.authorizer.store.matching(_filter(f))
        gone.update(matched)
        results.append(
            make(
                result_t,
                error_code=err(ErrorCode.NONE),
                error_message=None,
                matching_acls=tuple(
                    make(
                        match_t,
                        error_code=err(ErrorCode.NONE),
                        error_message=None,
                        resource_type=b.resource_type,
                        resource_name=b.resource_name,
                        pattern_type=b.pattern_type,
                        principal=b.principal,
                        host=b.host,
                        operation=b.operation,
                        permission_type=b.permission,
                    )
                    for b in matched
                ),
            )
        )
    if gone:
        broker.authorizer.store.remove(gone)
    return make(resp_t, throttle_time=NO_THROTTLE, filter_results=tuple(results))
