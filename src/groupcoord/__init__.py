"""groupcoord: a Kafka-compatible broker built around the classic consumer-group coordinator."""

__version__ = "0.1.0"
