//! Typed expressions and predicates over a table's columns. SQL text is written here and
//! nowhere else: a column is a name the code spells (`&'static str`), never request text, and
//! every value becomes a literal with its quotes doubled. Components build [`Pred`]s and
//! [`Expr`]s; only the store renders them (`sql()` is private to it).

use std::ops::{Add, Div, Mul, Sub};

use lancedb::query::QueryBase;

/// A SQL type, for casts and typed nulls.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SqlType {
    Float,
    Double,
    BigInt,
    String,
}

impl SqlType {
    fn name(self) -> &'static str {
        match self {
            SqlType::Float => "FLOAT",
            SqlType::Double => "DOUBLE",
            SqlType::BigInt => "BIGINT",
            SqlType::String => "STRING",
        }
    }
}

/// A value computed over a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Col(&'static str),
    /// In a merge's condition: the stored row's column.
    Target(&'static str),
    /// In a merge's condition: the incoming row's column.
    Source(&'static str),
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Null(SqlType),
    Coalesce(Box<Expr>, Box<Expr>),
    Least(Box<Expr>, Box<Expr>),
    Exp(Box<Expr>),
    Ln(Box<Expr>),
    Cast(Box<Expr>, SqlType),
    Arith(Box<Expr>, &'static str, Box<Expr>),
}

/// A column of the table queried.
pub fn col(name: &'static str) -> Expr {
    Expr::Col(name)
}

/// Literals from Rust values.
macro_rules! literal {
    ($($t:ty => |$v:ident| $e:expr;)*) => {$(
        impl From<$t> for Expr {
            fn from($v: $t) -> Self {
                $e
            }
        }
    )*};
}
literal! {
    &str => |v| Expr::Str(v.to_string());
    String => |v| Expr::Str(v);
    &String => |v| Expr::Str(v.clone());
    i64 => |v| Expr::Int(v);
    f64 => |v| Expr::Float(v);
    f32 => |v| Expr::Float(v as f64);
    bool => |v| Expr::Bool(v);
}

impl Expr {
    fn cmp(self, op: &'static str, other: impl Into<Expr>) -> Pred {
        Pred::Cmp(self, op, other.into())
    }
    pub fn eq(self, v: impl Into<Expr>) -> Pred {
        self.cmp("=", v)
    }
    pub fn ne(self, v: impl Into<Expr>) -> Pred {
        self.cmp("<>", v)
    }
    pub fn lt(self, v: impl Into<Expr>) -> Pred {
        self.cmp("<", v)
    }
    pub fn le(self, v: impl Into<Expr>) -> Pred {
        self.cmp("<=", v)
    }
    pub fn gt(self, v: impl Into<Expr>) -> Pred {
        self.cmp(">", v)
    }
    pub fn ge(self, v: impl Into<Expr>) -> Pred {
        self.cmp(">=", v)
    }
    pub fn null(self) -> Pred {
        Pred::IsNull(self, true)
    }
    pub fn not_null(self) -> Pred {
        Pred::IsNull(self, false)
    }
    /// `self IN (values)`; matches nothing when `values` is empty.
    pub fn one_of<V: Into<Expr> + Clone>(self, values: &[V]) -> Pred {
        Pred::In(self, values.iter().cloned().map(Into::into).collect())
    }
    pub fn coalesce(self, other: impl Into<Expr>) -> Expr {
        Expr::Coalesce(Box::new(self), Box::new(other.into()))
    }
    pub fn least(self, other: impl Into<Expr>) -> Expr {
        Expr::Least(Box::new(self), Box::new(other.into()))
    }
    pub fn exp(self) -> Expr {
        Expr::Exp(Box::new(self))
    }
    pub fn ln(self) -> Expr {
        Expr::Ln(Box::new(self))
    }
    /// Text that begins with `prefix`. A `%` or `_` in `prefix` matches any text or character,
    /// so the rows are a superset: a caller that needs the exact prefix checks again.
    pub fn starts_with(self, prefix: &str) -> Pred {
        Pred::Cmp(self, "LIKE", Expr::Str(format!("{prefix}%")))
    }

    /// Text that does not begin with `prefix` (see [`Expr::starts_with`]); null is neither.
    pub fn not_starts_with(self, prefix: &str) -> Pred {
        Pred::Cmp(self, "NOT LIKE", Expr::Str(format!("{prefix}%")))
    }

    pub fn cast(self, to: SqlType) -> Expr {
        Expr::Cast(Box::new(self), to)
    }

    pub(crate) fn sql(&self) -> String {
        match self {
            Expr::Col(c) => (*c).to_string(),
            Expr::Target(c) => format!("target.{c}"),
            Expr::Source(c) => format!("source.{c}"),
            Expr::Str(s) => format!("'{}'", s.replace('\'', "''")),
            Expr::Int(i) => i.to_string(),
            // Debug keeps a decimal point (`2.0`), so SQL reads a double, not an integer.
            Expr::Float(f) => format!("{f:?}"),
            Expr::Bool(b) => b.to_string(),
            Expr::Null(t) => format!("CAST(NULL AS {})", t.name()),
            Expr::Coalesce(a, b) => format!("COALESCE({}, {})", a.sql(), b.sql()),
            Expr::Least(a, b) => format!("least({}, {})", a.sql(), b.sql()),
            Expr::Exp(a) => format!("exp({})", a.sql()),
            Expr::Ln(a) => format!("ln({})", a.sql()),
            Expr::Cast(a, t) => format!("CAST({} AS {})", a.sql(), t.name()),
            Expr::Arith(a, op, b) => format!("({} {op} {})", a.sql(), b.sql()),
        }
    }
}

macro_rules! arith {
    ($trait:ident, $method:ident, $op:literal) => {
        impl<T: Into<Expr>> $trait<T> for Expr {
            type Output = Expr;
            fn $method(self, rhs: T) -> Expr {
                Expr::Arith(Box::new(self), $op, Box::new(rhs.into()))
            }
        }
    };
}
arith!(Add, add, "+");
arith!(Sub, sub, "-");
arith!(Mul, mul, "*");
arith!(Div, div, "/");

/// A condition on a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Pred {
    /// Every row.
    All,
    Cmp(Expr, &'static str, Expr),
    In(Expr, Vec<Expr>),
    /// `IS NULL` when true, `IS NOT NULL` when false.
    IsNull(Expr, bool),
    And(Vec<Pred>),
    Or(Vec<Pred>),
}

impl Pred {
    /// Both hold (flattening nested conjunctions, dropping `All`).
    pub fn and(self, other: Pred) -> Pred {
        let mut parts = Vec::new();
        for p in [self, other] {
            match p {
                Pred::All => {}
                Pred::And(inner) => parts.extend(inner),
                p => parts.push(p),
            }
        }
        match parts.len() {
            0 => Pred::All,
            1 => parts.pop().unwrap_or(Pred::All),
            _ => Pred::And(parts),
        }
    }

    pub fn or(self, other: Pred) -> Pred {
        match (self, other) {
            (Pred::All, _) | (_, Pred::All) => Pred::All,
            (Pred::Or(mut a), b) => {
                a.push(b);
                Pred::Or(a)
            }
            (a, b) => Pred::Or(vec![a, b]),
        }
    }

    /// The rows stored in a merge target, for a merge's condition: every column of `self`
    /// read as `target.column`.
    pub fn on_target(self) -> Pred {
        self.map_cols(&|c| Expr::Target(c))
    }

    /// The stored row's columns (`Expr::Target`) the predicate reads, in a merge's condition.
    pub fn target_columns(&self) -> Vec<&'static str> {
        fn expr(e: &Expr, out: &mut Vec<&'static str>) {
            match e {
                Expr::Target(c) => out.push(c),
                Expr::Coalesce(a, b) | Expr::Least(a, b) | Expr::Arith(a, _, b) => {
                    expr(a, out);
                    expr(b, out);
                }
                Expr::Exp(a) | Expr::Ln(a) | Expr::Cast(a, _) => expr(a, out),
                _ => {}
            }
        }
        let mut out = Vec::new();
        match self {
            Pred::All => {}
            Pred::Cmp(a, _, b) => {
                expr(a, &mut out);
                expr(b, &mut out);
            }
            Pred::In(a, v) => {
                expr(a, &mut out);
                v.iter().for_each(|e| expr(e, &mut out));
            }
            Pred::IsNull(a, _) => expr(a, &mut out),
            Pred::And(v) | Pred::Or(v) => v.iter().for_each(|p| out.extend(p.target_columns())),
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    fn map_cols(self, f: &dyn Fn(&'static str) -> Expr) -> Pred {
        fn expr(e: Expr, f: &dyn Fn(&'static str) -> Expr) -> Expr {
            let b = |e: Box<Expr>| Box::new(expr(*e, f));
            match e {
                Expr::Col(c) => f(c),
                Expr::Coalesce(a, c) => Expr::Coalesce(b(a), b(c)),
                Expr::Least(a, c) => Expr::Least(b(a), b(c)),
                Expr::Exp(a) => Expr::Exp(b(a)),
                Expr::Ln(a) => Expr::Ln(b(a)),
                Expr::Cast(a, t) => Expr::Cast(b(a), t),
                Expr::Arith(a, op, c) => Expr::Arith(b(a), op, b(c)),
                other => other,
            }
        }
        match self {
            Pred::All => Pred::All,
            Pred::Cmp(a, op, b) => Pred::Cmp(expr(a, f), op, expr(b, f)),
            Pred::In(a, v) => Pred::In(expr(a, f), v),
            Pred::IsNull(a, n) => Pred::IsNull(expr(a, f), n),
            Pred::And(v) => Pred::And(v.into_iter().map(|p| p.map_cols(f)).collect()),
            Pred::Or(v) => Pred::Or(v.into_iter().map(|p| p.map_cols(f)).collect()),
        }
    }

    /// The SQL filter, or none for every row.
    pub(super) fn filter(&self) -> Option<String> {
        (*self != Pred::All).then(|| self.sql())
    }

    pub(crate) fn sql(&self) -> String {
        let join = |parts: &[Pred], sep: &str| {
            let parts: Vec<String> = parts.iter().map(|p| format!("({})", p.sql())).collect();
            parts.join(sep)
        };
        match self {
            Pred::All => "true".into(),
            Pred::Cmp(a, op, b) => format!("{} {op} {}", a.sql(), b.sql()),
            Pred::In(_, values) if values.is_empty() => "false".into(),
            Pred::In(a, values) => {
                let values: Vec<String> = values.iter().map(Expr::sql).collect();
                format!("{} IN ({})", a.sql(), values.join(", "))
            }
            Pred::IsNull(a, true) => format!("{} IS NULL", a.sql()),
            Pred::IsNull(a, false) => format!("{} IS NOT NULL", a.sql()),
            Pred::And(parts) if parts.is_empty() => "true".into(),
            Pred::Or(parts) if parts.is_empty() => "false".into(),
            Pred::And(parts) => join(parts, " AND "),
            Pred::Or(parts) => join(parts, " OR "),
        }
    }
}

/// A query narrowed by a typed predicate.
/// The rows of `table` matching `predicate`, only `columns` of them when named.
pub(super) async fn matching(
    table: &lancedb::Table,
    predicate: &Pred,
    columns: Option<&[&str]>,
) -> Result<Vec<lancedb::arrow::arrow_array::RecordBatch>, super::error::StoreError> {
    let mut query = table.query().filtered(predicate);
    if let Some(columns) = columns {
        query = query.select(lancedb::query::Select::columns(columns));
    }
    read(&query).await
}

/// Runs `query` and collects what it answers; again (twice at most) when a purge deleted a
/// file of the version it started reading — a forget removes old versions at once, and a
/// read that began before sees the current version the next time.
pub(super) async fn read(
    query: &impl lancedb::query::ExecutableQuery,
) -> Result<Vec<lancedb::arrow::arrow_array::RecordBatch>, super::error::StoreError> {
    use futures::TryStreamExt;
    let mut tries = 0;
    loop {
        let answer = async { query.execute().await?.try_collect::<Vec<_>>().await }.await;
        match answer {
            Err(e) if read_again(&e, &mut tries) => {}
            answer => return Ok(answer?),
        }
    }
}

/// Runs `query` and hands each batch to `each` as it comes, so a pass over every row holds
/// one batch rather than the whole answer (at 1M memories decay's eight columns were ~85 MB
/// read whole). Read again, as [`read`] does, when a purge deleted a file before any batch was
/// handed out; after that a second read would hand rows twice, so the error is returned and
/// the pass is left to its next run.
pub(super) async fn each_batch(
    query: &impl lancedb::query::ExecutableQuery,
    mut each: impl FnMut(
        lancedb::arrow::arrow_array::RecordBatch,
    ) -> Result<(), super::error::StoreError>,
) -> Result<(), super::error::StoreError> {
    use futures::TryStreamExt;
    let mut tries = 0;
    loop {
        let (mut handed, mut refused) = (false, None);
        let answer = async {
            let mut stream = query.execute().await?;
            while let Some(batch) = stream.try_next().await? {
                handed = true;
                if let Err(e) = each(batch) {
                    refused = Some(e);
                    break;
                }
            }
            Ok::<_, lancedb::Error>(())
        }
        .await;
        if let Some(e) = refused {
            return Err(e);
        }
        match answer {
            Err(e) if !handed && read_again(&e, &mut tries) => {}
            answer => return Ok(answer?),
        }
    }
}

/// Whether a read that failed with `e` should run again (a purge deleted a file under it,
/// and it has not tried twice already); counts the try.
fn read_again(e: &lancedb::Error, tries: &mut u32) -> bool {
    if *tries >= 2 || !pruned_under_us(e) {
        return false;
    }
    *tries += 1;
    tracing::debug!("a file was pruned during a read; reading again: {e}");
    true
}

/// Whether `e` says a data or index file of the table is gone (LanceDB names the path).
fn pruned_under_us(e: &lancedb::Error) -> bool {
    let text = e.to_string();
    text.contains("Not found") && (text.contains(".lance") || text.contains("_indices"))
}

pub(super) trait Filtered {
    fn filtered(self, p: &Pred) -> Self;
}

impl<Q: QueryBase> Filtered for Q {
    fn filtered(self, p: &Pred) -> Self {
        match p.filter() {
            Some(sql) => self.only_if(sql),
            None => self,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_quoted_and_columns_are_not() {
        let p = col("namespace").eq("o'brien; DROP").and(col("n").lt(3_i64));
        assert_eq!(p.sql(), "(namespace = 'o''brien; DROP') AND (n < 3)");
    }

    #[test]
    fn floats_stay_floats_and_nulls_are_typed() {
        assert_eq!(col("s").ge(2.0_f64).sql(), "s >= 2.0");
        assert_eq!(Expr::Null(SqlType::BigInt).sql(), "CAST(NULL AS BIGINT)");
        let e = (col("a") + 1.0_f64).least(0.5_f64).cast(SqlType::Float);
        assert_eq!(e.sql(), "CAST(least((a + 1.0), 0.5) AS FLOAT)");
    }

    #[tokio::test]
    async fn a_prefix_selects_rows_by_the_start_of_a_text() {
        use crate::store::{test_store, MemoryRecord, WriteOp};
        use mnemo_protocol::memory::MemoryKind;
        let dir = tempfile::tempdir().unwrap();
        let store = test_store(dir.path()).await;
        let rows: Vec<MemoryRecord> = [Some("file:/n/a.md"), Some("mcp:claude"), None]
            .into_iter()
            .enumerate()
            .map(|(i, source)| {
                let mut r = MemoryRecord::new("n".into(), format!("m{i}"), MemoryKind::Episodic, 1);
                r.source = source.map(str::to_string);
                r.vector = vec![0.5; 4];
                r
            })
            .collect();
        store.writer().submit(WriteOp::Insert(rows)).await.unwrap();
        let sources = |p: Pred| {
            let store = store.clone();
            async move {
                let mut s: Vec<Option<String>> = store
                    .columns_of(&p, &["source"])
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|r| r.source)
                    .collect();
                s.sort();
                s
            }
        };
        assert_eq!(
            sources(col("source").starts_with("file:")).await,
            vec![Some("file:/n/a.md".to_string())]
        );
        let not_notes = col("source")
            .null()
            .or(col("source").not_starts_with("file:"));
        assert_eq!(
            sources(not_notes).await,
            vec![None, Some("mcp:claude".to_string())]
        );
    }

    #[test]
    fn empty_sets_match_nothing_and_all_matches_everything() {
        assert_eq!(col("id").one_of::<String>(&[]).sql(), "false");
        assert_eq!(Pred::All.and(Pred::All), Pred::All);
        assert_eq!(Pred::All.and(col("x").null()).sql(), "x IS NULL");
        assert_eq!(col("x").null().or(Pred::All), Pred::All);
    }

    #[test]
    fn conjunctions_flatten_and_targets_are_named() {
        let p = col("a")
            .null()
            .and(col("b").not_null())
            .and(col("c").eq(1_i64));
        assert!(matches!(&p, Pred::And(v) if v.len() == 3));
        let t = col("last").null().or(col("last").lt(Expr::Source("last")));
        assert_eq!(
            t.on_target().sql(),
            "(target.last IS NULL) OR (target.last < source.last)"
        );
    }

    /// LanceDB reads what we render: every row, no row, typed values and merge conditions.
    #[tokio::test]
    async fn lancedb_reads_the_rendered_predicates() {
        use crate::store::schema::tests::record;
        use crate::store::WriteOp;
        let dir = tempfile::tempdir().unwrap();
        let store = crate::store::test_store(dir.path()).await;
        let mut rows = vec![record("a", "one", 4), record("b", "two", 4)];
        rows[1].namespace = "o'brien".into();
        rows[1].salience = 8.0;
        store.writer().submit(WriteOp::Insert(rows)).await.unwrap();
        assert_eq!(store.count(&Pred::All).await.unwrap(), 2);
        assert_eq!(
            store.count(&col("id").one_of::<String>(&[])).await.unwrap(),
            0
        );
        assert_eq!(
            store.count(&col("namespace").eq("o'brien")).await.unwrap(),
            1
        );
        let high = col("salience").cast(SqlType::Double).ge(7.5_f64);
        assert_eq!(store.count(&high).await.unwrap(), 1);
        let none = store
            .writer()
            .submit(WriteOp::Delete(col("id").one_of::<String>(&[])))
            .await
            .unwrap();
        assert_eq!(none, 0);
        let updated = store
            .writer()
            .submit(WriteOp::Update {
                predicate: Pred::All,
                columns: vec![("faded_at", Expr::Int(7))],
            })
            .await
            .unwrap();
        assert_eq!(updated, 2);
        let faded = col("faded_at").eq(7_i64).and(col("id").one_of(&["a", "b"]));
        assert_eq!(store.count(&faded).await.unwrap(), 2);
    }
}
