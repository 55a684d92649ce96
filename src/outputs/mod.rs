//! Renderers. They format what the ledger and the findings hold and compute nothing new.

pub mod calls_compare;
pub mod csv;
pub mod csv_views;
pub mod diff;
pub mod doctor;
pub mod job_set;
pub mod json;
pub mod plot;
pub mod safe_text;
pub mod show;
pub mod show_calls;
pub mod table;
pub mod telemetry_table;
pub mod text_table;
pub mod top;
pub mod verdict;
pub mod wrap;
