"""The classic consumer-group coordinator: pure state machine, no I/O."""
