//! What a recording's file must be before any of its rows is read: the tables of a recording,
//! nothing SQLite would compute while reading, and row counts a recorder could have written.
//!
//! A `.ledger` may come from anyone. SQLite computes a virtual generated column on every read
//! (even of an immutable file), a view or a virtual table runs whatever SQL its schema holds, and a
//! column default stands in for values missing from short rows, so none of these is accepted:
//! gpuledger writes none of them. Row counts are checked with `COUNT(*)` (a pass over the table's
//! pages, bounded by the file) before the rows are held in memory.
// ref: https://www.sqlite.org/pragma.html#pragma_table_xinfo (hidden: 2 and 3 are generated)
// ref: https://www.sqlite.org/gencol.html (virtual columns are computed when read)

use super::read_rows::Layout;
use super::SCHEMA_VERSION;
use rusqlite::Connection;
use std::collections::BTreeSet;

/// Tables every recording has.
const REQUIRED: [&str; 7] = [
    "meta",
    "samples",
    "processes",
    "devices",
    "series",
    "points",
    "findings",
];
/// Tables some versions have.
const OPTIONAL: [&str; 6] = [
    "kernel_log",
    "output_lines",
    "output_tail",
    "rates",
    "rate_points",
    "markers",
];
/// Most rows of the tables that are held in memory whole (samples and points are folded as
/// they stream, the evidence tables are read with a limit).
pub(super) const MAX_ROWS: [(&str, i64); 5] = [
    ("meta", 10_000),
    ("processes", 100_000),
    ("devices", 4_096),
    ("series", 200_000),
    ("findings", 100_000),
];
/// Most series (regions) in one (pid, device, class) group: they are merged with one cursor each.
pub(super) const MAX_GROUP_SERIES: usize = 256;
/// Longest string or blob SQLite hands out while reading a recording (a recorder writes command
/// lines and messages far below it).
pub(super) const MAX_VALUE_BYTES: i32 = 16 << 20;

/// Checks that the file has the tables of a recording, nothing computed on read and bounded row
/// counts, and says which optional parts it has. The error is why it is not a usable recording.
pub(super) fn check(conn: &Connection) -> Result<Layout, String> {
    let tables = schema(conn)?;
    let missing: Vec<&str> = REQUIRED
        .into_iter()
        .filter(|t| !tables.contains(*t))
        .collect();
    if !missing.is_empty() {
        return Err(format!("missing tables: {}", missing.join(", ")));
    }
    for table in REQUIRED.iter().chain(&OPTIONAL) {
        if tables.contains(*table) {
            plain_columns(conn, table)?;
        }
    }
    for (table, max) in MAX_ROWS {
        let n: i64 = query_one(conn, &format!("SELECT COUNT(*) FROM {table}"))?;
        if n > max {
            return Err(format!(
                "{n} rows in {table}; a recording holds at most {max}"
            ));
        }
    }
    let widest: Option<i64> = query_one(
        conn,
        "SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM series GROUP BY pid, device, class)",
    )?;
    if let Some(n) = widest.filter(|n| *n > MAX_GROUP_SERIES as i64) {
        return Err(format!(
            "{n} series for one process, device and class; a recording holds at most {MAX_GROUP_SERIES}"
        ));
    }
    let labels: bool = query_one(
        conn,
        "SELECT EXISTS(SELECT 1 FROM pragma_table_info('processes') WHERE name = 'labels')",
    )?;
    Ok(Layout {
        labels,
        kernel_log: tables.contains("kernel_log"),
        output: OPTIONAL[1..].iter().all(|t| tables.contains(*t)),
        version: SCHEMA_VERSION,
    })
}

/// The names of the file's tables, refusing views, triggers and virtual tables.
fn schema(conn: &Connection) -> Result<BTreeSet<String>, String> {
    let rows: Vec<(String, String, Option<String>)> = (|| {
        let mut st = conn.prepare("SELECT type, name, sql FROM sqlite_master")?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        rows.collect::<rusqlite::Result<_>>()
    })()
    .map_err(|e| e.to_string())?;
    let mut tables = BTreeSet::new();
    for (kind, name, sql) in rows {
        let is_virtual = sql.as_deref().is_some_and(|s| {
            s.trim_start()
                .get(..14)
                .is_some_and(|h| h.eq_ignore_ascii_case("create virtual"))
        });
        match kind.as_str() {
            "table" if !is_virtual => {
                tables.insert(name);
            }
            "index" => {}
            _ => {
                return Err(format!(
                    "it holds {} {name:?}, which gpuledger never writes",
                    if is_virtual {
                        "the virtual table"
                    } else {
                        &kind
                    }
                ))
            }
        }
    }
    Ok(tables)
}

/// Refuses generated columns and defaults that are not plain literals.
fn plain_columns(conn: &Connection, table: &str) -> Result<(), String> {
    let cols: Vec<(String, i64, Option<String>)> = (|| {
        let mut st = conn.prepare("SELECT name, hidden, dflt_value FROM pragma_table_xinfo(?1)")?;
        let rows = st.query_map([table], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        rows.collect::<rusqlite::Result<_>>()
    })()
    .map_err(|e| e.to_string())?;
    for (name, hidden, default) in cols {
        if hidden != 0 {
            return Err(format!(
                "column {table}.{name} is generated or hidden, which gpuledger never writes"
            ));
        }
        if default.as_deref().is_some_and(|d| !is_literal(d)) {
            return Err(format!(
                "column {table}.{name} has a computed default, which gpuledger never writes"
            ));
        }
    }
    Ok(())
}

/// A number, `NULL` or a quoted string of at most 64 bytes: what gpuledger's schema uses.
fn is_literal(default: &str) -> bool {
    let d = default.trim();
    let quoted = d.len() >= 2 && d.starts_with('\'') && d.ends_with('\'');
    d.len() <= 64
        && (quoted && !d[1..d.len() - 1].contains('\'')
            || d.eq_ignore_ascii_case("null")
            || !d.is_empty()
                && d.bytes()
                    .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)))
}

fn query_one<T: rusqlite::types::FromSql>(conn: &Connection, sql: &str) -> Result<T, String> {
    conn.query_row(sql, [], |r| r.get(0))
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_are_plain() {
        for ok in ["'{}'", "0", "-1.5", "NULL", "''"] {
            assert!(is_literal(ok), "{ok}");
        }
        for bad in [
            "printf('%.*c', 200000000, 'x')",
            "(randomblob(1000000000))",
            "'a' || 'b'",
            "x",
        ] {
            assert!(!is_literal(bad), "{bad}");
        }
    }
}
