use super::*;
use proptest::prelude::*;

fn any_event() -> impl Strategy<Value = Event> {
    (
        any::<u64>(),
        any::<u32>(),
        any::<u32>(),
        0..Api::ALL.len(),
        0..Op::ALL.len(),
        any::<bool>(),
        proptest::option::of(0u32..=i32::MAX as u32),
        (any::<u64>(), any::<u64>(), any::<u32>(), any::<i32>()),
    )
        .prop_map(
            |(t_ns, pid, tid, a, o, ze, device, (bytes, address, flags, result))| Event {
                t_ns,
                pid,
                tid,
                api: Api::ALL[a],
                op: Op::ALL[o],
                platform: if ze {
                    Platform::LevelZero
                } else {
                    Platform::Cuda
                },
                device,
                bytes,
                address,
                flags,
                result,
            },
        )
}

proptest! {
    #[test]
    fn events_round_trip(events in proptest::collection::vec(any_event(), 0..70)) {
        let mut buf = Vec::new();
        for e in &events {
            let mut b = [0u8; EVENT_BYTES];
            e.encode(&mut b);
            buf.extend_from_slice(&b);
        }
        prop_assert_eq!(Event::decode_all(&buf).unwrap(), events);
    }

    #[test]
    fn any_bytes_decode_or_fail_without_panic(buf in proptest::collection::vec(any::<u8>(), 0..200)) {
        let r = Event::decode_all(&buf);
        if buf.len() % EVENT_BYTES != 0 {
            prop_assert_eq!(r, Err(DecodeError::Length(buf.len())));
        }
    }
}

#[test]
fn unknown_kind_byte_is_an_error() {
    let mut b = [0u8; EVENT_BYTES];
    b[16] = 200;
    assert_eq!(
        Event::decode(&b),
        Err(DecodeError::UnknownByte {
            field: "api",
            value: 200
        })
    );
}

#[test]
fn names_read_back() {
    for a in Api::ALL {
        assert_eq!(Api::from_name(a.name()), Some(a));
    }
    for o in Op::ALL {
        assert_eq!(Op::from_name(o.name()), Some(o));
    }
    assert_eq!(
        OffReason::from_code(OffReason::NoCupti.as_result()),
        Some(OffReason::NoCupti)
    );
}

#[test]
fn residency_flags_carry_the_owner_and_the_skip() {
    let f = residency_flags(Some(1), true);
    assert_eq!((owner_device(f), f & SKIPPED != 0), (Some(1), true));
    let f = residency_flags(None, false);
    assert_eq!((owner_device(f), f & SKIPPED), (None, 0));
    assert_eq!(Api::from_name("peer_residency"), Some(Api::PeerResidency));
    assert_eq!(
        Platform::LevelZero.result_name(0x7000_0003_u32 as i32),
        Some("ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY")
    );
}
