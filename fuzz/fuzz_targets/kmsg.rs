#![no_main]
//! The saved kernel log of a capture (`ROOT/dev/kmsg`) is untrusted: parsing never panics, keeps
//! at most one record per line, and a parsed log printed back reads back as the same text. The
//! classifier and the fact parser are fed each record as it is and wrapped in the kernel's fault
//! report shapes (a segfault or trap of a task whose name and file the input chooses): those
//! never make evidence or a fact.
use gpuledger::sources::kernel_events::parse;
use gpuledger::sources::kmsg::{classify, parse_log, KmsgRecord};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let records = parse_log(&text);
    assert!(records.len() <= text.lines().count());
    assert!(parse(&records).len() <= records.len());
    for r in &records {
        let _ = classify(r);
        let comm: String = r.message.chars().take(15).collect();
        for shape in [
            format!("{comm}[4242]: segfault at 0 ip 0 sp 0 error 6 in {}[401000+1000]", r.message),
            format!("traps: {comm}[4242] general protection fault ip:0 sp:0 error:0 in {}[0+0]", r.message),
        ] {
            let forged = KmsgRecord { message: shape, ..r.clone() };
            assert_eq!(classify(&forged), None);
            assert!(parse(std::slice::from_ref(&forged)).is_empty());
        }
    }
    let printed: String = records.iter().map(ToString::to_string).collect();
    let again: String = parse_log(&printed).iter().map(ToString::to_string).collect();
    assert_eq!(again, printed);
});
