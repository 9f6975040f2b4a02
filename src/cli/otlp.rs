//! `--otlp`, `--otlp-endpoint`, `--otlp-header`, `--otlp-timeout`: validated into
//! [`OtlpOptions`] before any input is read. Header values never appear in a message.

use super::args::OtlpArgs;
use super::values::parse_duration_ms;
use crate::pipeline::display_name;
use crate::report::otlp::{Endpoint, OtlpLimits, OtlpOptions, Protocol};
use anyhow::{Result, bail};
use std::time::Duration;

/// The OTLP outputs asked for, or `None` when neither `--otlp` nor `--otlp-endpoint` was
/// given.
pub fn otlp_options(args: &OtlpArgs, inputs: &[String]) -> Result<Option<OtlpOptions>> {
    if args.otlp.is_none() && args.otlp_endpoint.is_none() {
        return Ok(None);
    }
    let endpoint = match &args.otlp_endpoint {
        Some(url) => {
            let lower = url.to_ascii_lowercase();
            if !(lower.starts_with("http://") || lower.starts_with("https://")) {
                bail!(
                    "--otlp-endpoint: expected an http:// or https:// URL, got {:?}",
                    crate::report::otlp::display_url(url)
                );
            }
            let timeout_ms = parse_duration_ms(&args.otlp_timeout)
                .map_err(|e| anyhow::anyhow!("--otlp-timeout: {e}"))?;
            let Some(protocol) = Protocol::from_name(&args.otlp_protocol) else {
                bail!(
                    "--otlp-protocol: expected http/protobuf or http/json, got {:?}",
                    args.otlp_protocol
                );
            };
            Some(Endpoint {
                url: Endpoint::traces_url(url),
                protocol,
                headers: args
                    .otlp_header
                    .iter()
                    .enumerate()
                    .map(|(i, h)| header(i, h))
                    .collect::<Result<_>>()?,
                flush_timeout: Duration::from_millis(u64::try_from(timeout_ms).unwrap_or(0)),
            })
        }
        None => None,
    };
    Ok(Some(OtlpOptions {
        path: args.otlp.clone(),
        endpoint,
        inputs: inputs.iter().map(|p| display_name(p).to_string()).collect(),
        limits: OtlpLimits {
            link_targets: args.otlp_max_link_targets,
            held_spans: args.otlp_max_held_spans,
            session_roots: args.otlp_max_session_roots.max(1),
        },
    }))
}

/// `NAME=VALUE` with an HTTP token as the name; errors name the header's position, never its
/// value.
fn header(index: usize, text: &str) -> Result<(String, String)> {
    let n = index + 1;
    let Some((name, value)) = text.split_once('=') else {
        bail!("--otlp-header #{n}: expected NAME=VALUE");
    };
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        bail!("--otlp-header #{n}: the name is not an HTTP header name");
    }
    if value.chars().any(|c| c.is_control() && c != '\t') {
        bail!("--otlp-header #{n}: the value holds a control character");
    }
    Ok((name.to_string(), value.trim().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_checked_without_showing_their_value() {
        assert_eq!(
            header(0, "Authorization=Bearer s3cret").unwrap(),
            ("Authorization".into(), "Bearer s3cret".into())
        );
        for bad in [
            "no-equals-s3cret",
            "=s3cret",
            "bad name=s3cret",
            "x=s3cret\n",
        ] {
            let msg = header(2, bad).unwrap_err().to_string();
            assert!(msg.starts_with("--otlp-header #3"), "{msg}");
            assert!(!msg.contains("s3cret"), "{msg}");
        }
    }
}
