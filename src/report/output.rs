//! Output files that never look complete unless they are: rows go to `<path>.partial` in
//! the same directory, which is renamed over `<path>` only after the last byte was flushed.
//! A failed or abandoned write removes the partial file.

use super::ReportError;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Buffer size of the output writer.
const WRITE_BUFFER_BYTES: usize = 256 * 1024;

/// A file being written; see the module doc.
///
/// Invariant: while `file` is `Some`, the partial file exists and belongs to us.
pub struct PartialFile {
    path: PathBuf,
    partial: PathBuf,
    file: Option<BufWriter<File>>,
}

impl PartialFile {
    /// Creates `<path>.partial`. Fails with the final path named when it cannot be created.
    pub fn create(path: &Path) -> Result<Self, ReportError> {
        let name = path.file_name().ok_or_else(|| ReportError::NotAFile {
            path: path.display().to_string(),
        })?;
        let mut partial_name = name.to_os_string();
        partial_name.push(".partial");
        let partial = path.with_file_name(partial_name);
        let file = File::create(&partial).map_err(|error| ReportError::Create {
            path: path.display().to_string(),
            error,
        })?;
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
            Some(w) => {
                w.flush()?;
                w.get_ref().sync_data()
            }
            None => Ok(()),
        }
    }

    /// Flushes, syncs and renames the partial file to the final path.
    pub fn commit(mut self) -> Result<(), ReportError> {
        let path = self.path.display().to_string();
        let Some(writer) = self.file.take() else {
            return Err(ReportError::Closed { path });
        };
        let result = writer
            .into_inner()
            .map_err(|e| e.into_error())
            .and_then(|file| file.sync_all())
            .and_then(|()| std::fs::rename(&self.partial, &self.path));
        if let Err(error) = result {
            let _ = std::fs::remove_file(&self.partial);
            return Err(ReportError::Write { path, error });
        }
        Ok(())
    }
}

impl Drop for PartialFile {
    fn drop(&mut self) {
        // Not committed: the rows are incomplete, so leave nothing behind.
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.partial);
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
