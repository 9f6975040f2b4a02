//! Wires the stages together: inputs -> frames -> segments -> streams -> HTTP -> sinks.
