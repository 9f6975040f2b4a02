//! Output files that never look complete unless they are: rows go to `<path>.partial` in
//! the same directory, which is renamed over `<path>` only after the last byte was flushed.
//! A failed or abandoned write removes the partial file.
//!
//! A path that already names something other than a regular file (`/dev/null`,
//! `/dev/stdout`, a named pipe) is written in place: there is no file to replace, and a
//! rename would put a regular file where the device or pipe was.

use super::ReportError;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Buffer size of the output writer.
const WRITE_BUFFER_BYTES: usize = 256 * 1024;

/// A file being written; see the module doc.
///
/// Invariant: while `file` is `Some` and `partial` is `Some`, the partial file exists and
/// belongs to us.
pub struct PartialFile {
    path: PathBuf,
    /// `None` when writing in place (a device or a pipe).
    partial: Option<PathBuf>,
    file: Option<BufWriter<File>>,
}

impl PartialFile {
    /// Creates `<path>.partial`. Fails with the final path named when it cannot be created.
    pub fn create(path: &Path) -> Result<Self, ReportError> {
        let name = path.file_name().ok_or_else(|| ReportError::NotAFile {
            path: path.display().to_string(),
        })?;
        let create_error = |error| ReportError::Create {
            path: path.display().to_string(),
            error,
        };
        let in_place = match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => {
                return Err(create_error(std::io::Error::new(
                    std::io::ErrorKind::IsADirectory,
                    "is a directory",
                )));
            }
            Ok(meta) => !meta.is_file(),
            Err(_) => false,
        };
        let (partial, file) = if in_place {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(create_error)?;
            (None, file)
        } else {
            let mut partial_name = name.to_os_string();
            partial_name.push(".partial");
            let partial = path.with_file_name(partial_name);
            let file = File::create(&partial).map_err(create_error)?;
            (Some(partial), file)
        };
        Ok(PartialFile {
            path: path.to_path_buf(),
            partial,
            file: Some(BufWriter::with_capacity(WRITE_BUFFER_BYTES, file)),
        })
    }

    /// The final path, for error messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Wraps an I/O error with the final path.
    pub fn io_error(&self, error: std::io::Error) -> ReportError {
        ReportError::Write {
            path: self.path().display().to_string(),
            error,
        }
    }

    /// Flushes what is buffered and waits until the file's data is on disk, so that
    /// [`PartialFile::commit`] has little left to wait for. For a writer on a thread of its
    /// own, whose waits do not hold up the analysis.
    pub fn sync_so_far(&mut self) -> std::io::Result<()> {
        match self.file.as_mut() {
            Some(w) if self.partial.is_some() => {
                w.flush()?;
                w.get_ref().sync_data()
            }
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }

    /// Flushes, syncs and renames the partial file to the final path (written in place:
    /// flushes).
    pub fn commit(mut self) -> Result<(), ReportError> {
        let path = self.path.display().to_string();
        let Some(writer) = self.file.take() else {
            return Err(ReportError::Closed { path });
        };
        let flushed = writer.into_inner().map_err(|e| e.into_error());
        let result = match &self.partial {
            Some(partial) => flushed
                .and_then(|file| file.sync_all())
                .and_then(|()| std::fs::rename(partial, &self.path)),
            None => flushed.map(drop),
        };
        if let Err(error) = result {
            if let Some(partial) = &self.partial {
                let _ = std::fs::remove_file(partial);
            }
            return Err(ReportError::Write { path, error });
        }
        Ok(())
    }
}

impl Drop for PartialFile {
    fn drop(&mut self) {
        // Not committed: the rows are incomplete, so leave nothing behind.
        if self.file.take().is_some()
            && let Some(partial) = &self.partial
        {
            let _ = std::fs::remove_file(partial);
        }
    }
}

impl Write for PartialFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.file.as_mut() {
            Some(w) => w.write(buf),
            None => Err(std::io::Error::other("output already closed")),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.file.as_mut() {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_renames_and_drop_removes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        let mut f = PartialFile::create(&path).unwrap();
        f.write_all(b"a\n").unwrap();
        assert!(dir.path().join("out.csv.partial").exists());
        assert!(!path.exists());
        f.commit().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"a\n");
        assert!(!dir.path().join("out.csv.partial").exists());

        let path2 = dir.path().join("other.jsonl");
        let mut g = PartialFile::create(&path2).unwrap();
        g.write_all(b"x").unwrap();
        drop(g);
        assert!(!path2.exists());
        assert!(!dir.path().join("other.jsonl.partial").exists());
    }

    /// A named pipe, like `/dev/null` or `/dev/stdout`, is written in place and stays what
    /// it was.
    #[test]
    fn a_pipe_is_written_in_place() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        let mut f = PartialFile::create(&fifo).unwrap();
        f.write_all(b"row\n").unwrap();
        f.sync_so_far().unwrap();
        f.write_all(b"last\n").unwrap();
        f.commit().unwrap();
        assert_eq!(reader.join().unwrap(), b"row\nlast\n");
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        assert!(!dir.path().join("pipe.partial").exists());
    }

    #[test]
    fn a_directory_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let err = PartialFile::create(dir.path()).err().unwrap();
        assert!(err.to_string().contains("is a directory"), "{err}");
    }

    #[test]
    fn unwritable_directory_names_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing-dir").join("out.csv");
        let err = PartialFile::create(&path).err().unwrap();
        let msg = err.to_string();
        assert!(msg.contains("out.csv"), "{msg}");
        assert!(!msg.contains('\n'));
    }
}
