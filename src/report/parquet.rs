//! Parquet through polars: typed columns (report-schema.md section 2 types; timestamps as
//! `Datetime(µs, "UTC")`), zstd compression, one row group per [`PARQUET_ROW_GROUP_ROWS`]
//! rows so memory stays bounded however long the capture.
//!
//! Known limit: polars marks every Parquet column optional (nullable); columns the contract
//! declares non-null simply never hold a null.

use super::output::PartialFile;
use super::row::{Cell, ColType, ColumnSpec, Table};
use super::{PARQUET_ROW_GROUP_ROWS, ReportError};
use polars::prelude::*;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The partial file, shared between the polars writer (which owns its `Write`) and us
/// (who must commit it after polars wrote the footer). A mutex rather than a `RefCell`
/// keeps the table writer `Send`.
#[derive(Clone)]
struct SharedFile(Arc<Mutex<PartialFile>>);

impl SharedFile {
    fn lock(&self) -> std::io::Result<std::sync::MutexGuard<'_, PartialFile>> {
        self.0
            .lock()
            .map_err(|_| std::io::Error::other("output lock poisoned"))
    }
}

impl Write for SharedFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.lock()?.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.lock()?.flush()
    }
}

/// Values of one column for the row group being built.
enum ColumnBuffer {
    U64(Vec<Option<u64>>),
    U32(Vec<Option<u32>>),
    U16(Vec<Option<u16>>),
    I64(Vec<Option<i64>>),
    F64(Vec<Option<f64>>),
    Bool(Vec<Option<bool>>),
    /// Built in place: a cell costs a copy into the column's buffer, not an allocation.
    Str(StringChunkedBuilder),
    Timestamp(Vec<Option<i64>>),
}

impl ColumnBuffer {
    fn new(ty: ColType, name: &str) -> Self {
        match ty {
            ColType::U64 => ColumnBuffer::U64(Vec::new()),
            ColType::U32 => ColumnBuffer::U32(Vec::new()),
            ColType::U16 => ColumnBuffer::U16(Vec::new()),
            ColType::I64 => ColumnBuffer::I64(Vec::new()),
            ColType::F64 => ColumnBuffer::F64(Vec::new()),
            ColType::Bool => ColumnBuffer::Bool(Vec::new()),
            ColType::Str => ColumnBuffer::Str(StringChunkedBuilder::new(
                PlSmallStr::from_str(name),
                PARQUET_ROW_GROUP_ROWS,
            )),
            ColType::Timestamp => ColumnBuffer::Timestamp(Vec::new()),
        }
    }

    /// Appends `cell`; false when it does not fit the column type.
    fn push(&mut self, cell: Cell<'_>) -> bool {
        match (self, cell) {
            (ColumnBuffer::U64(v), Cell::U64(x)) => v.push(Some(x)),
            (ColumnBuffer::U64(v), Cell::Null) => v.push(None),
            (ColumnBuffer::U32(v), Cell::U32(x)) => v.push(Some(x)),
            (ColumnBuffer::U32(v), Cell::Null) => v.push(None),
            (ColumnBuffer::U16(v), Cell::U16(x)) => v.push(Some(x)),
            (ColumnBuffer::U16(v), Cell::Null) => v.push(None),
            (ColumnBuffer::I64(v), Cell::I64(x)) => v.push(Some(x)),
            (ColumnBuffer::I64(v), Cell::Null) => v.push(None),
            (ColumnBuffer::F64(v), Cell::F64(x)) => v.push(Some(x)),
            (ColumnBuffer::F64(v), Cell::Null) => v.push(None),
            (ColumnBuffer::Bool(v), Cell::Bool(x)) => v.push(Some(x)),
            (ColumnBuffer::Bool(v), Cell::Null) => v.push(None),
            (ColumnBuffer::Str(v), Cell::Str(x)) => v.append_value(x),
            (ColumnBuffer::Str(v), Cell::Null) => v.append_null(),
            (ColumnBuffer::Timestamp(v), Cell::Timestamp(x)) => v.push(Some(x)),
            (ColumnBuffer::Timestamp(v), Cell::Null) => v.push(None),
            _ => return false,
        }
        true
    }

    /// Moves the buffered values into a polars column, leaving the buffer empty.
    fn take(&mut self, name: &str) -> Column {
        let name = PlSmallStr::from_str(name);
        let series = match self {
            ColumnBuffer::U64(v) => Series::new(name, std::mem::take(v)),
            ColumnBuffer::U32(v) => Series::new(name, std::mem::take(v)),
            ColumnBuffer::U16(v) => Series::new(name, std::mem::take(v)),
            ColumnBuffer::I64(v) => Series::new(name, std::mem::take(v)),
            ColumnBuffer::F64(v) => Series::new(name, std::mem::take(v)),
            ColumnBuffer::Bool(v) => Series::new(name, std::mem::take(v)),
            ColumnBuffer::Str(v) => {
                let fresh = StringChunkedBuilder::new(name, PARQUET_ROW_GROUP_ROWS);
                std::mem::replace(v, fresh).finish().into_series()
            }
            ColumnBuffer::Timestamp(v) => {
                Int64Chunked::from_iter_options(name, std::mem::take(v).into_iter())
                    .into_datetime(TimeUnit::Microseconds, Some(TimeZone::UTC))
                    .into_series()
            }
        };
        series.into_column()
    }
}

/// The polars dtype of a contract type.
pub(crate) fn dtype(ty: ColType) -> DataType {
    match ty {
        ColType::U64 => DataType::UInt64,
        ColType::U32 => DataType::UInt32,
        ColType::U16 => DataType::UInt16,
        ColType::I64 => DataType::Int64,
        ColType::F64 => DataType::Float64,
        ColType::Bool => DataType::Boolean,
        ColType::Str => DataType::String,
        ColType::Timestamp => DataType::Datetime(TimeUnit::Microseconds, Some(TimeZone::UTC)),
    }
}

/// The polars schema of a table.
pub(crate) fn schema(columns: &[ColumnSpec]) -> Schema {
    columns
        .iter()
        .map(|c| Field::new(PlSmallStr::from_str(c.name), dtype(c.ty)))
        .collect()
}

/// zstd level 1 rather than the default 3: 13 M fewer instructions on a 20 MB capture, and the
/// file came out no larger (bench/README.md, session 4).
fn zstd_level() -> Option<polars_parquet::write::ZstdLevel> {
    polars_parquet::write::ZstdLevel::try_new(1).ok()
}

/// A Parquet file being written.
pub(crate) struct ParquetSink {
    file: SharedFile,
    writer: polars::io::parquet::write::BatchedWriter<SharedFile>,
    columns: &'static [ColumnSpec],
    buffers: Vec<ColumnBuffer>,
    buffered_rows: usize,
}

impl ParquetSink {
    pub(crate) fn create<T: Table>(path: &Path) -> Result<Self, ReportError> {
        let file = SharedFile(Arc::new(Mutex::new(PartialFile::create(path)?)));
        let writer = ParquetWriter::new(file.clone())
            .with_compression(ParquetCompression::Zstd(zstd_level()))
            .set_parallel(false)
            .batched(&schema(T::COLUMNS))
            .map_err(|e| polars_error(path, e))?;
        Ok(ParquetSink {
            file,
            writer,
            columns: T::COLUMNS,
            buffers: T::COLUMNS
                .iter()
                .map(|c| ColumnBuffer::new(c.ty, c.name))
                .collect(),
            buffered_rows: 0,
        })
    }

    /// The final path, for error messages.
    pub(crate) fn path(&self) -> String {
        self.file
            .lock()
            .map(|f| f.path().display().to_string())
            .unwrap_or_default()
    }

    /// Buffers one row, given as its cells; writes a row group when the buffer is full.
    pub(crate) fn push(
        &mut self,
        cells: Vec<Cell<'_>>,
        row_number: u64,
    ) -> Result<(), ReportError> {
        if cells.len() != self.buffers.len() {
            return Err(ReportError::Schema {
                path: self.path(),
                row: row_number,
                column: "(column count)",
            });
        }
        for ((buffer, cell), spec) in self.buffers.iter_mut().zip(cells).zip(self.columns) {
            if (!spec.nullable && cell == Cell::Null) || !buffer.push(cell) {
                return Err(ReportError::Schema {
                    path: self.path(),
                    row: row_number,
                    column: spec.name,
                });
            }
        }
        self.buffered_rows = self.buffered_rows.saturating_add(1);
        if self.buffered_rows >= PARQUET_ROW_GROUP_ROWS {
            self.flush_group()?;
        }
        Ok(())
    }

    fn flush_group(&mut self) -> Result<(), ReportError> {
        if self.buffered_rows == 0 {
            return Ok(());
        }
        let columns: Vec<Column> = self
            .buffers
            .iter_mut()
            .zip(self.columns)
            .map(|(b, spec)| b.take(spec.name))
            .collect();
        let height = std::mem::take(&mut self.buffered_rows);
        let path = self.path();
        let df = DataFrame::new(height, columns).map_err(|e| polars_error_str(&path, e))?;
        self.writer
            .write_batch(&df)
            .map_err(|e| polars_error_str(&path, e))
    }

    /// Writes the last row group and the footer, then moves the file to its path.
    pub(crate) fn finish(mut self) -> Result<(), ReportError> {
        self.flush_group()?;
        let path = self.path();
        self.writer
            .finish()
            .map_err(|e| polars_error_str(&path, e))?;
        let ParquetSink { file, writer, .. } = self;
        drop(writer);
        let mutex =
            Arc::try_unwrap(file.0).map_err(|_| ReportError::Closed { path: path.clone() })?;
        let out = mutex
            .into_inner()
            .map_err(|_| ReportError::Closed { path })?;
        out.commit()
    }
}

fn polars_error(path: &Path, e: PolarsError) -> ReportError {
    polars_error_str(&path.display().to_string(), e)
}

fn polars_error_str(path: &str, e: PolarsError) -> ReportError {
    // Polars wraps I/O errors; keep its message on one line.
    let message = e.to_string().replace('\n', " ");
    ReportError::Parquet {
        path: path.to_string(),
        message,
    }
}
