//! RPC stage: HTTP bodies -> JSON-RPC messages (single, batch, or SSE events).
