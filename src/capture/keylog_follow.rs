//! A key log file followed as it grows (`SSLKEYLOGFILE` of a client that is running): each
//! call hands the complete lines appended since the last one. A missing file is one not
//! written yet; a file that shrank was started again and is read from its beginning.
//! Lines are never interpreted here (the TLS stage parses them) and never printed.

use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

/// Most bytes of one line kept while waiting for its end; a longer "line" is not a key log
/// line and is dropped up to its newline.
pub const MAX_KEYLOG_LINE_BYTES: usize = 4096;

/// One key log file and how far it was read.
#[derive(Debug)]
pub struct KeylogFollower {
    path: PathBuf,
    offset: u64,
    /// The start of a line whose newline has not been written yet.
    partial: Vec<u8>,
    /// Skipping the rest of a line longer than [`MAX_KEYLOG_LINE_BYTES`].
    skipping: bool,
}

impl KeylogFollower {
    pub fn new(path: PathBuf) -> KeylogFollower {
        KeylogFollower {
            path,
            offset: 0,
            partial: Vec::new(),
            skipping: false,
        }
    }

    /// Appends to `out` the complete lines written since the last call, each with its newline.
    pub fn read_new_lines(&mut self, out: &mut Vec<u8>) {
        let Ok(mut file) = std::fs::File::open(&self.path) else {
            return;
        };
        let len = file.metadata().map_or(0, |m| m.len());
        if len < self.offset {
            self.offset = 0;
            self.partial.clear();
            self.skipping = false;
        }
        if len == self.offset || file.seek(SeekFrom::Start(self.offset)).is_err() {
            return;
        }
        let mut fresh = Vec::new();
        if file
            .take(len - self.offset)
            .read_to_end(&mut fresh)
            .is_err()
        {
            return;
        }
        self.offset += fresh.len() as u64;
        for piece in fresh.split_inclusive(|&b| b == b'\n') {
            let complete = piece.last() == Some(&b'\n');
            if self.skipping {
                self.skipping = !complete;
                continue;
            }
            if self.partial.len() + piece.len() > MAX_KEYLOG_LINE_BYTES {
                self.partial.clear();
                self.skipping = !complete;
                continue;
            }
            self.partial.extend_from_slice(piece);
            if complete {
                out.append(&mut self.partial);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn hands_complete_lines_once_as_the_file_grows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.log");
        let mut follower = KeylogFollower::new(path.clone());
        let mut out = Vec::new();
        follower.read_new_lines(&mut out);
        assert!(out.is_empty(), "a file not written yet is empty");

        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(b"CLIENT_RANDOM aa bb\nSERVER_HANDSHAKE_TRAFFIC_SECRET c")
            .unwrap();
        f.flush().unwrap();
        follower.read_new_lines(&mut out);
        assert_eq!(out, b"CLIENT_RANDOM aa bb\n");
        out.clear();
        follower.read_new_lines(&mut out);
        assert!(out.is_empty(), "nothing new, and the partial line waits");

        f.write_all(b"c dd\n").unwrap();
        f.flush().unwrap();
        follower.read_new_lines(&mut out);
        assert_eq!(out, b"SERVER_HANDSHAKE_TRAFFIC_SECRET cc dd\n");
    }

    #[test]
    fn a_file_started_again_is_read_from_its_beginning() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.log");
        std::fs::write(&path, b"CLIENT_RANDOM aa bb\nCLIENT_RANDOM cc dd\n").unwrap();
        let mut follower = KeylogFollower::new(path.clone());
        let mut out = Vec::new();
        follower.read_new_lines(&mut out);
        assert_eq!(out.len(), 40);
        std::fs::write(&path, b"CLIENT_RANDOM ee ff\n").unwrap();
        out.clear();
        follower.read_new_lines(&mut out);
        assert_eq!(out, b"CLIENT_RANDOM ee ff\n");
    }

    #[test]
    fn an_overlong_line_is_dropped_and_the_next_one_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("keys.log");
        let mut text = vec![b'x'; MAX_KEYLOG_LINE_BYTES * 3];
        text.extend_from_slice(b"\nCLIENT_RANDOM aa bb\n");
        std::fs::write(&path, &text).unwrap();
        let mut follower = KeylogFollower::new(path);
        let mut out = Vec::new();
        follower.read_new_lines(&mut out);
        assert_eq!(out, b"CLIENT_RANDOM aa bb\n");
    }
}
