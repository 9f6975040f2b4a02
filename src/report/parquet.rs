//! Parquet through polars: typed columns (report-schema.md section 2 types; timestamps as
//! `Datetime(µs, "UTC")`), zstd compression, one row group per [`PARQUET_ROW_GROUP_ROWS`]
//! rows so memory stays bounded however long the capture.
//!
//! String columns are dictionary-encoded as rows arrive ([`DictColumn`]) and handed to polars'
//! Parquet encoder as dictionary arrays; given plain strings it would estimate each column's
//! cardinality and then hash every value again to build the same dictionary. The file's schema
//! still says `String`: only the pages are dictionary pages, as polars writes them itself.
//!
//! Known limit: polars marks every Parquet column optional (nullable); columns the contract
//! declares non-null simply never hold a null.

use super::output::PartialFile;
use super::row::{Cell, ColType, ColumnSpec, Table};
use super::{PARQUET_ROW_GROUP_ROWS, ReportError};
use polars::prelude::*;
use polars_arrow::array::{
    Array, DictionaryArray, MutableBinaryViewArray, PrimitiveArray as ArrowPrimitive,
};
use polars_arrow::bitmap::{Bitmap, MutableBitmap};
use polars_arrow::datatypes::{ArrowDataType, IntegerType};
use polars_parquet::write::{
    CompressedPage, CompressionOptions, ParquetType, StatisticsOptions, Version, WriteOptions,
};
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
    U8(Vec<Option<u8>>),
    I64(Vec<Option<i64>>),
    F64(Vec<Option<f64>>),
    Bool(Vec<Option<bool>>),
    Str(Box<DictColumn>),
    Timestamp(Vec<Option<i64>>),
}

/// A string column of the row group being built, as keys into its distinct values. Report
/// columns repeat few values (sessions, clients, outcomes), so a cell is usually the value
/// of the row before (one comparison) or one hash lookup.
#[derive(Default)]
struct DictColumn {
    keys: Vec<u32>,
    valid: MutableBitmap,
    /// Distinct values in key order.
    values: MutableBinaryViewArray<str>,
    index: crate::hashing::HashMap<Box<str>, u32>,
    /// The last value pushed and its key.
    last: Option<u32>,
    last_value: String,
}

impl DictColumn {
    fn push(&mut self, value: Option<&str>) {
        let key = match value {
            None => 0, // masked by `valid`
            Some(v) => match self.last {
                Some(k) if self.last_value == v => k,
                _ => {
                    let k = self.key_of(v);
                    self.last = Some(k);
                    self.last_value.clear();
                    self.last_value.push_str(v);
                    k
                }
            },
        };
        self.keys.push(key);
        self.valid.push(value.is_some());
    }

    fn key_of(&mut self, v: &str) -> u32 {
        if let Some(&k) = self.index.get(v) {
            return k;
        }
        let k = u32::try_from(self.values.len()).unwrap_or(u32::MAX);
        self.values.push_value(v);
        self.index.insert(v.into(), k);
        k
    }

    /// The buffered cells as a dictionary array, leaving the column empty.
    fn take(&mut self) -> PolarsResult<Box<dyn Array>> {
        let DictColumn {
            keys,
            valid,
            values,
            index,
            ..
        } = std::mem::take(self);
        // Reuse the table's allocation for the next group, and size the next keys like these.
        self.index = index;
        self.index.clear();
        self.keys.reserve(keys.len());
        let validity: Option<Bitmap> = valid.into();
        let keys = ArrowPrimitive::<u32>::new(ArrowDataType::UInt32, keys.into(), validity);
        let values = values.freeze();
        let dtype =
            ArrowDataType::Dictionary(IntegerType::UInt32, Box::new(values.dtype().clone()), false);
        Ok(DictionaryArray::<u32>::try_new(dtype, keys, values.boxed())?.boxed())
    }
}

impl ColumnBuffer {
    fn new(ty: ColType) -> Self {
        match ty {
            ColType::U64 => ColumnBuffer::U64(Vec::new()),
            ColType::U32 => ColumnBuffer::U32(Vec::new()),
            ColType::U16 => ColumnBuffer::U16(Vec::new()),
            ColType::U8 => ColumnBuffer::U8(Vec::new()),
            ColType::I64 => ColumnBuffer::I64(Vec::new()),
            ColType::F64 => ColumnBuffer::F64(Vec::new()),
            ColType::Bool => ColumnBuffer::Bool(Vec::new()),
            ColType::Str => ColumnBuffer::Str(Box::default()),
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
            (ColumnBuffer::U8(v), Cell::U8(x)) => v.push(Some(x)),
            (ColumnBuffer::U8(v), Cell::Null) => v.push(None),
            (ColumnBuffer::I64(v), Cell::I64(x)) => v.push(Some(x)),
            (ColumnBuffer::I64(v), Cell::Null) => v.push(None),
            (ColumnBuffer::F64(v), Cell::F64(x)) => v.push(Some(x)),
            (ColumnBuffer::F64(v), Cell::Null) => v.push(None),
            (ColumnBuffer::Bool(v), Cell::Bool(x)) => v.push(Some(x)),
            (ColumnBuffer::Bool(v), Cell::Null) => v.push(None),
            (ColumnBuffer::Str(v), Cell::Str(x)) => v.push(Some(x)),
            (ColumnBuffer::Str(v), Cell::Null) => v.push(None),
            (ColumnBuffer::Timestamp(v), Cell::Timestamp(x)) => v.push(Some(x)),
            (ColumnBuffer::Timestamp(v), Cell::Null) => v.push(None),
            _ => return false,
        }
        true
    }

    /// Moves the buffered values into an arrow array of the column's Parquet type, leaving the
    /// buffer empty.
    fn take(&mut self, name: &str) -> PolarsResult<Box<dyn Array>> {
        let name = PlSmallStr::from_str(name);
        let series = match self {
            ColumnBuffer::U64(v) => Series::new(name, take_sized(v)),
            ColumnBuffer::U32(v) => Series::new(name, take_sized(v)),
            ColumnBuffer::U16(v) => Series::new(name, take_sized(v)),
            ColumnBuffer::U8(v) => Series::new(name, take_sized(v)),
            ColumnBuffer::I64(v) => Series::new(name, take_sized(v)),
            ColumnBuffer::F64(v) => Series::new(name, take_sized(v)),
            ColumnBuffer::Bool(v) => Series::new(name, take_sized(v)),
            ColumnBuffer::Str(v) => return v.take(),
            ColumnBuffer::Timestamp(v) => {
                Int64Chunked::from_iter_options(name, take_sized(v).into_iter())
                    .into_datetime(TimeUnit::Microseconds, Some(TimeZone::UTC))
                    .into_series()
            }
        };
        // One chunk: each buffer became a single array.
        Ok(series.to_arrow(0, CompatLevel::newest()))
    }
}

/// The values of `v`, leaving it empty with room for as many: the next row group is
/// usually as large, and a column grown from nothing copies itself a dozen times.
fn take_sized<T>(v: &mut Vec<T>) -> Vec<T> {
    let room = Vec::with_capacity(v.len());
    std::mem::replace(v, room)
}

/// The polars dtype of a contract type.
pub(crate) fn dtype(ty: ColType) -> DataType {
    match ty {
        ColType::U64 => DataType::UInt64,
        ColType::U32 => DataType::UInt32,
        ColType::U16 => DataType::UInt16,
        ColType::U8 => DataType::UInt8,
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

/// zstd level 1 rather than the default 3: fewer instructions for a file no larger
/// (bench/README.md).
fn zstd_level() -> Option<polars_parquet::write::ZstdLevel> {
    polars_parquet::write::ZstdLevel::try_new(1).ok()
}

/// A Parquet file being written.
pub(crate) struct ParquetSink {
    file: SharedFile,
    writer: polars::io::parquet::write::BatchedWriter<SharedFile>,
    /// The Parquet type of each column, and the options polars' writer was made with.
    fields: Vec<ParquetType>,
    options: WriteOptions,
    columns: &'static [ColumnSpec],
    buffers: Vec<ColumnBuffer>,
    buffered_rows: usize,
}

impl ParquetSink {
    pub(crate) fn create<T: Table>(path: &Path) -> Result<Self, ReportError> {
        let file = SharedFile(Arc::new(Mutex::new(PartialFile::create(path)?)));
        let mut writer = ParquetWriter::new(file.clone())
            .with_compression(ParquetCompression::Zstd(zstd_level()))
            .set_parallel(false)
            .batched(&schema(T::COLUMNS))
            .map_err(|e| polars_error(path, e))?;
        let fields = writer.parquet_schema().fields().to_vec();
        // What `ParquetWriter` gives its own row groups, with the settings above.
        let options = WriteOptions {
            statistics: StatisticsOptions::default(),
            version: Version::V1,
            compression: CompressionOptions::Zstd(zstd_level()),
            data_page_size: None,
        };
        Ok(ParquetSink {
            file,
            writer,
            fields,
            options,
            columns: T::COLUMNS,
            buffers: T::COLUMNS.iter().map(|c| ColumnBuffer::new(c.ty)).collect(),
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
        let height = std::mem::take(&mut self.buffered_rows);
        let path = self.path();
        let mut group: Vec<Vec<CompressedPage>> = Vec::with_capacity(self.buffers.len());
        for ((buffer, spec), field) in self.buffers.iter_mut().zip(self.columns).zip(&self.fields) {
            let pages = buffer
                .take(spec.name)
                .and_then(|array| column_pages(array.as_ref(), field, self.options))
                .map_err(|e| polars_error_str(&path, e))?;
            group.push(pages);
        }
        self.writer
            .write_row_group(u64::try_from(height).unwrap_or(u64::MAX), &group)
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

/// One column chunk of a row group: encoded as polars encodes that type (dictionary pages
/// where they pay, plain pages for booleans), then compressed.
fn column_pages(
    array: &dyn Array,
    field: &ParquetType,
    options: WriteOptions,
) -> PolarsResult<Vec<CompressedPage>> {
    let encoding = polars_parquet::write::get_dtype_encoding(array.dtype());
    let mut pages = Vec::new();
    for leaf in polars_parquet::write::array_to_columns(array, field.clone(), options, &encoding)? {
        for page in leaf {
            pages.push(polars_parquet::write::compress(
                page?,
                Vec::new(),
                options.compression,
            )?);
        }
    }
    Ok(pages)
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
