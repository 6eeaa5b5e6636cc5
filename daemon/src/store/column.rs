//! How each Rust type of a table column is stored in Arrow: its data type, nullability, and
//! the conversions both ways. The row types (`MemoryRecord`) are lists of such columns, so
//! adding a column is one line there.

use std::sync::Arc;

use lancedb::arrow::arrow_array::{
    builder::{Float32Builder, ListBuilder, StringBuilder},
    Array, ArrayRef, BooleanArray, FixedSizeListArray, Float32Array, Int64Array, ListArray,
    StringArray,
};
use lancedb::arrow::arrow_schema::{DataType, Field};
use mnemo_protocol::belief::{BeliefSource, BeliefType};
use mnemo_protocol::entity::EntityType;
use mnemo_protocol::graph::{EdgeType, NodeKind};
use mnemo_protocol::memory::MemoryKind;

use super::error::StoreError;

pub trait Column: Sized + Default {
    /// `dim` is the vector width; other types ignore it.
    fn data_type(dim: i32) -> DataType;
    fn nullable() -> bool {
        false
    }
    fn to_array(values: Vec<&Self>, dim: i32) -> Result<ArrayRef, StoreError>;
    /// The value at `row`; a null or a column of another type reads as the default.
    fn read(array: &dyn Array, row: usize) -> Self;
}

fn cast<T: 'static>(array: &dyn Array) -> Option<&T> {
    array.as_any().downcast_ref::<T>()
}

/// A column of required text.
fn texts<'a>(values: impl Iterator<Item = &'a str>) -> Result<ArrayRef, StoreError> {
    Ok(Arc::new(values.map(Some).collect::<StringArray>()))
}

impl Column for String {
    fn data_type(_: i32) -> DataType {
        DataType::Utf8
    }
    fn to_array(values: Vec<&Self>, _: i32) -> Result<ArrayRef, StoreError> {
        texts(values.into_iter().map(String::as_str))
    }
    fn read(array: &dyn Array, row: usize) -> Self {
        Option::<String>::read(array, row).unwrap_or_default()
    }
}

impl Column for Option<String> {
    fn data_type(_: i32) -> DataType {
        DataType::Utf8
    }
    fn nullable() -> bool {
        true
    }
    fn to_array(values: Vec<&Self>, _: i32) -> Result<ArrayRef, StoreError> {
        Ok(Arc::new(
            values
                .into_iter()
                .map(|v| v.as_deref())
                .collect::<StringArray>(),
        ))
    }
    fn read(array: &dyn Array, row: usize) -> Self {
        cast::<StringArray>(array)
            .filter(|a| a.is_valid(row))
            .map(|a| a.value(row).to_string())
    }
}

macro_rules! primitive_column {
    ($ty:ty, $array:ty, $data_type:expr) => {
        impl Column for $ty {
            fn data_type(_: i32) -> DataType {
                $data_type
            }
            fn to_array(values: Vec<&Self>, _: i32) -> Result<ArrayRef, StoreError> {
                Ok(Arc::new(
                    values.into_iter().map(|v| Some(*v)).collect::<$array>(),
                ))
            }
            fn read(array: &dyn Array, row: usize) -> Self {
                Option::<$ty>::read(array, row).unwrap_or_default()
            }
        }
        impl Column for Option<$ty> {
            fn data_type(_: i32) -> DataType {
                $data_type
            }
            fn nullable() -> bool {
                true
            }
            fn to_array(values: Vec<&Self>, _: i32) -> Result<ArrayRef, StoreError> {
                Ok(Arc::new(values.into_iter().copied().collect::<$array>()))
            }
            fn read(array: &dyn Array, row: usize) -> Self {
                cast::<$array>(array)
                    .filter(|a| a.is_valid(row))
                    .map(|a| a.value(row))
            }
        }
    };
}
primitive_column!(i64, Int64Array, DataType::Int64);
primitive_column!(f32, Float32Array, DataType::Float32);
primitive_column!(bool, BooleanArray, DataType::Boolean);

fn item(data_type: DataType) -> Arc<Field> {
    Arc::new(Field::new("item", data_type, true))
}

/// A list of strings (tags, ids).
impl Column for Vec<String> {
    fn data_type(_: i32) -> DataType {
        DataType::List(item(DataType::Utf8))
    }
    fn nullable() -> bool {
        true
    }
    fn to_array(values: Vec<&Self>, _: i32) -> Result<ArrayRef, StoreError> {
        let mut builder = ListBuilder::new(StringBuilder::new());
        for list in values {
            for entry in list {
                builder.values().append_value(entry);
            }
            builder.append(true);
        }
        Ok(Arc::new(builder.finish()))
    }
    fn read(array: &dyn Array, row: usize) -> Self {
        let Some(list) = cast::<ListArray>(array).filter(|a| a.is_valid(row)) else {
            return Vec::new();
        };
        let values = list.value(row);
        cast::<StringArray>(values.as_ref())
            .map(|v| v.iter().flatten().map(str::to_string).collect())
            .unwrap_or_default()
    }
}

/// An embedding: a fixed-size list of `dim` floats.
impl Column for Vec<f32> {
    fn data_type(dim: i32) -> DataType {
        DataType::FixedSizeList(item(DataType::Float32), dim)
    }
    fn to_array(values: Vec<&Self>, dim: i32) -> Result<ArrayRef, StoreError> {
        if let Some(bad) = values.iter().find(|v| v.len() != dim as usize) {
            return Err(StoreError::Schema(format!(
                "vector of {} dimensions for a table of {dim}",
                bad.len()
            )));
        }
        let floats = Float32Array::from_iter_values(values.into_iter().flatten().copied());
        Ok(Arc::new(FixedSizeListArray::try_new(
            item(DataType::Float32),
            dim,
            Arc::new(floats),
            None,
        )?))
    }
    fn read(array: &dyn Array, row: usize) -> Self {
        let Some(list) = cast::<FixedSizeListArray>(array).filter(|a| a.is_valid(row)) else {
            return Vec::new();
        };
        let values = list.value(row);
        cast::<Float32Array>(values.as_ref())
            .map(|v| v.values().to_vec())
            .unwrap_or_default()
    }
}

/// A vector of any width, or none (stored as a nullable list): for the small tables whose
/// vectors are compared in memory, not indexed, so a change of embedder needs no new schema.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Floats(pub Vec<f32>);

impl Column for Floats {
    fn data_type(_: i32) -> DataType {
        DataType::List(item(DataType::Float32))
    }
    fn nullable() -> bool {
        true
    }
    fn to_array(values: Vec<&Self>, _: i32) -> Result<ArrayRef, StoreError> {
        let mut builder = ListBuilder::new(Float32Builder::new());
        for Floats(v) in values {
            builder.values().append_slice(v);
            builder.append(!v.is_empty());
        }
        Ok(Arc::new(builder.finish()))
    }
    fn read(array: &dyn Array, row: usize) -> Self {
        let Some(list) = cast::<ListArray>(array).filter(|a| a.is_valid(row)) else {
            return Floats::default();
        };
        let values = list.value(row);
        Floats(
            cast::<Float32Array>(values.as_ref())
                .map(|v| v.values().to_vec())
                .unwrap_or_default(),
        )
    }
}

/// A closed set of names stored as text (kinds, edge types); an unknown name reads as the
/// default.
macro_rules! named_column {
    ($ty:ty) => {
        impl Column for $ty {
            fn data_type(_: i32) -> DataType {
                DataType::Utf8
            }
            fn to_array(values: Vec<&Self>, _: i32) -> Result<ArrayRef, StoreError> {
                texts(values.into_iter().map(|k| k.as_str()))
            }
            fn read(array: &dyn Array, row: usize) -> Self {
                Option::<String>::read(array, row)
                    .and_then(|k| k.parse().ok())
                    .unwrap_or_default()
            }
        }
    };
}
named_column!(MemoryKind);
named_column!(EdgeType);
named_column!(NodeKind);
named_column!(EntityType);
named_column!(BeliefType);
named_column!(BeliefSource);

/// Declares the row type of a table without vectors from its columns (`name: Type`, each a
/// [`Column`]): the struct, its Arrow schema and both batch conversions.
macro_rules! table_rows {
    ($(#[$row_doc:meta])* $row:ident { $( $(#[$doc:meta])* $name:ident : $ty:ty ),* $(,)? }) => {
        $(#[$row_doc])*
        #[derive(Debug, Clone, PartialEq, Default)]
        pub struct $row {
            $( $(#[$doc])* pub $name: $ty, )*
        }

        impl $row {
            pub fn schema() -> lancedb::arrow::arrow_schema::SchemaRef {
                use $crate::store::column::Column;
                std::sync::Arc::new(lancedb::arrow::arrow_schema::Schema::new(vec![
                    $( lancedb::arrow::arrow_schema::Field::new(
                        stringify!($name), <$ty as Column>::data_type(0), <$ty as Column>::nullable()), )*
                ]))
            }

            pub fn to_batch(rows: &[Self]) -> Result<lancedb::arrow::arrow_array::RecordBatch, $crate::store::StoreError> {
                use $crate::store::column::Column;
                let columns: Vec<lancedb::arrow::arrow_array::ArrayRef> = vec![
                    $( <$ty as Column>::to_array(rows.iter().map(|r| &r.$name).collect(), 0)?, )*
                ];
                Ok(lancedb::arrow::arrow_array::RecordBatch::try_new(Self::schema(), columns)?)
            }

            /// Rows of a batch; columns it lacks read as defaults.
            pub fn from_batch(batch: &lancedb::arrow::arrow_array::RecordBatch) -> Vec<Self> {
                use $crate::store::column::Column;
                $( let $name = batch.column_by_name(stringify!($name)); )*
                (0..batch.num_rows())
                    .map(|row| Self {
                        $( $name: $name.map(|c| <$ty as Column>::read(c.as_ref(), row)).unwrap_or_default(), )*
                    })
                    .collect()
            }
        }

        impl $crate::store::keyed::Rows for $row {
            fn schema() -> lancedb::arrow::arrow_schema::SchemaRef {
                $row::schema()
            }
            fn to_batch(rows: &[Self]) -> Result<lancedb::arrow::arrow_array::RecordBatch, $crate::store::StoreError> {
                $row::to_batch(rows)
            }
            fn from_batch(batch: &lancedb::arrow::arrow_array::RecordBatch) -> Vec<Self> {
                $row::from_batch(batch)
            }
        }
    };
}
pub(crate) use table_rows;
