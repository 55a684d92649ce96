//! Renderers. They format what the ledger and the findings hold and compute nothing new.

pub mod json;
pub mod plot;
pub mod plot_evidence;
pub mod safe_text;
pub mod show;
pub mod table;
pub mod text_table;
pub mod top;
