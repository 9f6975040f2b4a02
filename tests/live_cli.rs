//! Integration tests: `mcp-trace live`'s errors, each one line and exit 2, before any capture.
//! Built without the `live` feature, the command says so; with it, an unknown interface, a
//! bad capture filter, a bad duration and a missing permission each name what is wrong.

use crate::cli::{assert_clean_failure, mcp_trace};
#[cfg(feature = "live")]
use std::process::Command;

/// Exit 2 with a single `mcp-trace:` line containing `needle`, nothing on stdout.
fn assert_one_line_exit_2(out: &std::process::Output, needle: &str) {
    assert_clean_failure(out, needle);
    assert!(out.stdout.is_empty(), "nothing on stdout");
}

#[cfg(not(feature = "live"))]
#[test]
fn without_the_feature_live_says_how_to_build_it() {
    let out = mcp_trace(&["live", "-i", "lo", "--duration", "1s"]);
    assert_one_line_exit_2(&out, "built without live capture");
    assert_one_line_exit_2(&out, "--features live");
}

#[cfg(feature = "live")]
mod with_live {
    use super::*;

    fn is_root() -> bool {
        Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
    }

    #[test]
    fn an_unknown_interface_lists_the_known_ones() {
        let out = mcp_trace(&["live", "-i", "no-such-if0", "--duration", "1s"]);
        assert_one_line_exit_2(&out, "no interface named `no-such-if0`");
        assert_one_line_exit_2(&out, "lo");
    }

    #[test]
    fn a_bad_duration_fails_before_the_capture() {
        let out = mcp_trace(&["live", "-i", "lo", "--duration", "soon"]);
        assert_one_line_exit_2(&out, "--duration");
    }

    #[test]
    fn a_bad_filter_names_the_filter() {
        let out = mcp_trace(&["live", "-i", "lo", "-f", "tcp and and", "--duration", "1s"]);
        if is_root() {
            assert_one_line_exit_2(&out, "-f: bad capture filter `tcp and and`");
        } else {
            // Without the permission to capture, the interface cannot be opened at all.
            assert_one_line_exit_2(&out, "permission denied");
        }
    }

    /// As an unprivileged user (setpriv from util-linux drops root), the error names the
    /// capabilities that would allow it.
    #[test]
    fn without_permission_the_error_names_the_capabilities() {
        let bin = env!("CARGO_BIN_EXE_mcp-trace");
        let out = if is_root() {
            Command::new("setpriv")
                .args([
                    "--reuid=65534",
                    "--regid=65534",
                    "--clear-groups",
                    "--inh-caps=-all",
                ])
                .args([bin, "live", "-i", "lo", "--duration", "1s"])
                .output()
                .expect("run setpriv")
        } else {
            mcp_trace(&["live", "-i", "lo", "--duration", "1s"])
        };
        assert_one_line_exit_2(&out, "permission denied");
        assert_one_line_exit_2(&out, "CAP_NET_RAW and CAP_NET_ADMIN");
    }

    #[test]
    fn a_raw_file_that_cannot_be_created_is_named() {
        if !is_root() {
            return;
        }
        let out = mcp_trace(&[
            "live",
            "-i",
            "lo",
            "-w",
            "/no/such/dir/raw.pcapng",
            "--duration",
            "1s",
        ]);
        assert_one_line_exit_2(&out, "-w /no/such/dir/raw.pcapng");
    }
}
