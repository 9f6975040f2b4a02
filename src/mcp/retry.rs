//! Retry inference (report-schema.md section 4): attempt, retry_of, retry_origin, evidence.
