"""InitProducerId (key 22) for idempotent, non-transactional producers.

A fresh producer (producer_id -1) gets a new id from the persisted counter and epoch 0. A
producer that presents its current id and epoch (KIP-360, after a sequence error) gets the
same id with the epoch bumped, or a new id when the epoch would overflow. Transactions are
not supported: a transactional id is refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
which clients treat as fatal and report, instead of retrying forever.
"""

from __future__ import annotations

import logging
from typing import Any

from groupcoord.broker.state import Broker
from groupcoord.errors import ErrorCode
from groupcoord.handling import RequestContext
from groupcoord.protocol.entities import NO_THROTTLE, err, make

log = logging.getLogger(__name__)


_MAX_EPOCH = 32767


def handle(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    messages = broker.registry.lookup(ctx.api_key, ctx.api_version)
    resp_t = messages.response_type
    if request.transactional_id is not None:
        return make(
            resp_t,
            throttle_time=NO_THROTTLE,
            error_code=err(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
            producer_id=-1,
            producer_epoch=-1,
        )
    pid = int(getattr(request, "producer_id", -1))
    epoch = int(getattr(request, "producer_epoch", -1))
    if pid >= 0 and 0 <= epoch < _MAX_EPOCH - 1:
        new_pid, new_epoch = pid, epoch + 1
    else:
        new_pid, new_epoch = broker.producer_ids.allocate(), 0
    log.info("producer id %d epoch %d for client %s", new_pid, new_epoch, ctx.client_id)
    return make(
        resp_t,
        throttle_time=NO_THROTTLE,
        error_code=err(ErrorCode.NONE),
        producer_id=new_pid,
        producer_epoch=new_epoch,
    )
